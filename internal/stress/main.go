// Command stress runs go test again and again with busy loops beside it,
// so that a test which passes only on an idle machine fails here first.
//
//	go run ./internal/stress -n 10 -hogs 2 ./...
//	go run ./internal/stress -n 3 -hogs 2 -- -race -run Differential -count 50 ./server
//
// Each run is one `go test` of the packages (flags after -- go to go test
// as they are; -count=1 is added unless a -count is given, so nothing is
// served from the test cache). The hogs are child processes, each spinning
// on one OS thread for as long as the runs last. Every failing test is
// printed with the seed its output names (RLSERVER_SEED replays it), and
// the command exits 1 if any run failed.
package main

import (
	"bufio"
	"bytes"
	"context"
	"flag"
	"fmt"
	"io"
	"os"
	"os/exec"
	"os/signal"
	"regexp"
	"runtime"
	"strings"
	"time"
)

func main() {
	if len(os.Args) == 2 && os.Args[1] == "-hog" {
		hog()
		return
	}
	os.Exit(run(os.Args[1:], os.Stdout, os.Stderr))
}

// hog spins until it is killed, or until its parent is gone (a stress
// run killed by a signal runs no deferred cleanup): one busy thread.
func hog() {
	runtime.GOMAXPROCS(1)
	runtime.LockOSThread()
	parent := os.Getppid()
	x := uint64(1)
	for i := uint64(1); ; i++ {
		x = x*6364136223846793005 + 1442695040888963407
		if x == 0 {
			fmt.Println(x) // never: keeps the loop from being optimised away
		}
		if i%(1<<26) == 0 && os.Getppid() != parent {
			return
		}
	}
}

func run(args []string, stdout, stderr io.Writer) int {
	fs := flag.NewFlagSet("stress", flag.ContinueOnError)
	fs.SetOutput(stderr)
	n := fs.Int("n", 10, "how many runs of go test")
	hogs := fs.Int("hogs", 2, "how many busy-loop processes run beside the tests")
	keep := fs.Bool("keep-going", true, "go on after a failing run")
	verbose := fs.Bool("v", false, "print every run's whole output, not only failures")
	fs.Usage = func() {
		fmt.Fprintln(stderr, "usage: go run ./internal/stress [-n runs] [-hogs m] [--] [go test flags] packages")
		fs.PrintDefaults()
	}
	if err := fs.Parse(args); err != nil {
		return 2
	}
	testArgs := fs.Args()
	if len(testArgs) == 0 {
		testArgs = []string{"./..."}
	}
	if !hasCount(testArgs) {
		testArgs = append([]string{"-count=1"}, testArgs...)
	}

	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt)
	defer stop()
	self, err := os.Executable()
	if err != nil {
		fmt.Fprintln(stderr, "stress:", err)
		return 2
	}
	var procs []*exec.Cmd
	for range *hogs {
		c := exec.Command(self, "-hog")
		if err := c.Start(); err != nil {
			fmt.Fprintln(stderr, "stress: start a hog:", err)
			return 2
		}
		procs = append(procs, c)
	}
	defer func() {
		for _, c := range procs {
			c.Process.Kill()
			c.Wait()
		}
	}()

	fmt.Fprintf(stdout, "stress: %d runs of go test %s, %d busy loops beside\n", *n, strings.Join(testArgs, " "), *hogs)
	failed := 0
	var total time.Duration
	for i := 1; i <= *n && ctx.Err() == nil; i++ {
		start := time.Now()
		var out bytes.Buffer
		cmd := exec.CommandContext(ctx, "go", append([]string{"test"}, testArgs...)...)
		cmd.Stdout, cmd.Stderr = &out, &out
		err := cmd.Run()
		took := time.Since(start)
		total += took
		if *verbose {
			stdout.Write(out.Bytes())
		}
		if err == nil {
			fmt.Fprintf(stdout, "run %d/%d: ok in %v\n", i, *n, took.Round(time.Second))
			continue
		}
		failed++
		fmt.Fprintf(stdout, "run %d/%d: FAIL in %v (%v)\n", i, *n, took.Round(time.Second), err)
		for _, f := range failures(out.Bytes()) {
			fmt.Fprintf(stdout, "  %s\n", f)
		}
		if !*verbose {
			fmt.Fprintf(stdout, "---- output of run %d ----\n%s---- end of run %d ----\n", i, tail(out.Bytes(), 200), i)
		}
		if !*keep {
			break
		}
	}
	fmt.Fprintf(stdout, "stress: %d of %d runs failed, %v in all\n", failed, *n, total.Round(time.Second))
	if failed > 0 {
		return 1
	}
	return 0
}

// hasCount reports whether the go test flags set -count.
func hasCount(args []string) bool {
	for _, a := range args {
		if a == "-count" || strings.HasPrefix(a, "-count=") || a == "--count" || strings.HasPrefix(a, "--count=") {
			return true
		}
	}
	return false
}

var (
	failLine = regexp.MustCompile(`^\s*--- FAIL: (\S+)`)
	seedLine = regexp.MustCompile(`\bseed (\d+)`)
	pkgFail  = regexp.MustCompile(`^FAIL\s+(\S+)\s`)
)

// failures lists each failing test of a go test output with the seed
// logged nearest before it, and each failing package.
func failures(out []byte) []string {
	var res []string
	seed := ""
	sc := bufio.NewScanner(bytes.NewReader(out))
	sc.Buffer(nil, 1<<20)
	for sc.Scan() {
		line := sc.Text()
		if m := seedLine.FindStringSubmatch(line); m != nil {
			seed = m[1]
		}
		if m := failLine.FindStringSubmatch(line); m != nil {
			s := "test " + m[1]
			if seed != "" {
				s += " (RLSERVER_SEED=" + seed + ")"
			}
			res = append(res, s)
			seed = ""
		}
		if m := pkgFail.FindStringSubmatch(line); m != nil {
			res = append(res, "package "+m[1])
		}
	}
	return res
}

// tail is the last n lines of out.
func tail(out []byte, n int) []byte {
	lines := bytes.SplitAfter(out, []byte("\n"))
	if len(lines) > n {
		lines = lines[len(lines)-n:]
	}
	return bytes.Join(lines, nil)
}

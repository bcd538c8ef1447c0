// Command worstcase replays the public worst-case streams, a sweep of
// shaped streams and seeded random bursts through rlserver's limiters over
// RESP (manual clock), and prints what each admitted at worst.
//
//	go run ./bench/cmd/worstcase                      # in-process server
//	go run ./bench/cmd/worstcase --addr 127.0.0.1:6379 # a server run with --clock manual
package main

import (
	"flag"
	"fmt"
	"os"

	"github.com/rlserver/rlserver/bench/worstcase"
)

func main() {
	var (
		addr   = flag.String("addr", "", "address of an rlserver started with --clock manual (default: start one in-process)")
		md     = flag.String("md", "", "also write the tables as Markdown to this file")
		svg    = flag.String("svg", "", "write the stream-D chart as SVG to this file")
		readme = flag.String("readme", "", "replace the marked worst-case section of this README (needs --svg for the chart link)")
		seed   = flag.Uint64("seed", 1, "seed of the random bursty streams")
		n      = flag.Int("random", 20, "number of random bursty streams")
		quiet  = flag.Bool("q", false, "no progress on stderr")
	)
	flag.Parse()
	cfg := worstcase.Config{Addr: *addr, RandomSeed: *seed, RandomCount: *n}
	if !*quiet {
		cfg.Progress = func(s string) { fmt.Fprintln(os.Stderr, "playing", s) }
	}
	rep, err := worstcase.Run(cfg)
	if err != nil {
		fmt.Fprintln(os.Stderr, "worstcase:", err)
		os.Exit(1)
	}
	fmt.Print(rep.Markdown())
	write := func(path, content string) {
		if path == "" {
			return
		}
		if err := os.WriteFile(path, []byte(content), 0o644); err != nil {
			fmt.Fprintln(os.Stderr, "worstcase:", err)
			os.Exit(1)
		}
	}
	write(*md, rep.Markdown())
	write(*svg, rep.SVG())
	if *readme != "" {
		if err := rep.UpdateReadme(*readme, *svg); err != nil {
			fmt.Fprintln(os.Stderr, "worstcase:", err)
			os.Exit(1)
		}
	}
}

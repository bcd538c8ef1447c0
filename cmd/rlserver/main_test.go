package main

import (
	"bufio"
	"bytes"
	"flag"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/rlserver/rlserver/internal/rltest"
	"github.com/stretchr/testify/require"
)

var (
	buildOnce sync.Once
	binPath   string
	buildErr  error
)

// buildBinary compiles rlserver once per test run.
func buildBinary(t *testing.T) string {
	t.Helper()
	buildOnce.Do(func() {
		dir, err := os.MkdirTemp("", "rlserver-bin")
		if err != nil {
			buildErr = err
			return
		}
		binPath = filepath.Join(dir, "rlserver")
		out, err := exec.Command("go", "build", "-o", binPath, ".").CombinedOutput()
		if err != nil {
			buildErr = fmt.Errorf("%v: %s", err, out)
		}
	})
	require.NoError(t, buildErr)
	return binPath
}

func TestHelpListsEveryFlag(t *testing.T) {
	var stderr bytes.Buffer
	err := run(t.Context(), []string{"--help"}, &stderr)
	require.ErrorIs(t, err, flag.ErrHelp)
	for _, f := range []string{"bind", "port", "dir", "save-interval", "requirepass", "masterauth", "replicaof",
		"maxclients", "timeout", "shards", "clock", "clock-start", "tls-cert", "tls-key", "log-level", "log-format", "metrics-addr"} {
		require.Contains(t, stderr.String(), "  --"+f+"\n", "flag %s", f)
	}
	for _, def := range []string{"(default 127.0.0.1)", "(default 6379)", "(default ./data)", "(default 10000)",
		"(default 1s)", "(default 0)", `(default "")`, "(default real)"} {
		require.Contains(t, stderr.String(), def)
	}
	require.Equal(t, strings.Count(stderr.String(), "\n  --"), strings.Count(stderr.String(), "(default "), "every flag shows its default")
}

func TestLaterFeaturesFailLoudly(t *testing.T) {
	// Each is refused with the error that names its flag or feature, not
	// for some other reason.
	for _, tc := range []struct {
		args []string
		err  string
	}{
		{[]string{"--save-interval", "-1s"}, "--save-interval must not be negative"},
		{[]string{"--replicaof", "127.0.0.1"}, `--replicaof must be "host port", got "127.0.0.1"`},
		{[]string{"--replicaof", "127.0.0.1 0"}, `--replicaof: invalid port "0"`},
		{[]string{"--repl-backlog-size", "1tb"}, `--repl-backlog-size: invalid size "1tb"`},
		{[]string{"--repl-batch-interval", "2s"}, "--repl-batch-interval must be from 0 to 1s"},
		{[]string{"--repl-batch-interval", "-1ms"}, "--repl-batch-interval must be from 0 to 1s"},
		{[]string{"--shutdown-timeout", "-1"}, "--shutdown-timeout must not be negative"},
		{[]string{"--metrics-top-keys", "-1"}, "--metrics-top-keys must not be negative"},
		{[]string{"--cluster-config", "nodes.conf"}, "--cluster-config and --cluster-node-id must be given together"},
		{[]string{"--shards", "3"}, "shards must be a power of two up to 68719476736, got 3"},
		{[]string{"--clock", "sundial"}, `clock must be real or manual, got "sundial"`},
		{[]string{"--clock", "manual", "--clock-start", "-1"}, "--clock-start must be from 0 to 9223372036854 (Unix ms), got -1"},
		{[]string{"--clock-start", "9223372036855"}, "--clock-start must be from 0 to 9223372036854 (Unix ms), got 9223372036855"},
		{[]string{"--tls-cert", "c.pem"}, "--tls-cert and --tls-key must be given together"},
		{[]string{"--log-format", "xml"}, `--log-format must be text or json, got "xml"`},
		{[]string{"--aclfile", "users.acl", "--requirepass", "x"}, "--requirepass together with --aclfile is invalid: this setup is very likely to lead to configuration errors and security holes; give the default user's password in the ACL file (user default on >password ...) or use --requirepass, but not both"},
		{[]string{"--dir", "main.go"}, "--dir main.go: not a directory"},
		{[]string{"stray"}, `unexpected argument "stray"`},
	} {
		err := run(t.Context(), append([]string{"--port", "0"}, tc.args...), &bytes.Buffer{})
		require.EqualError(t, err, tc.err, "%v", tc.args)
	}
}

var addrRE = regexp.MustCompile(`addr=(127\.0\.0\.1:\d+)`)

// startBinary runs the real binary and returns it with its address, read
// from the start-up log line. The rest of its log is drained, unread.
// withPort0 puts --port 0 before args, after a configuration file if args
// start with one (it must come first).
func withPort0(args []string) []string {
	if len(args) > 0 && !strings.HasPrefix(args[0], "-") {
		return append([]string{args[0], "--port", "0"}, args[1:]...)
	}
	return append([]string{"--port", "0"}, args...)
}

func startBinary(t *testing.T, bin string, args ...string) (*exec.Cmd, string) {
	t.Helper()
	cmd := exec.Command(bin, withPort0(args)...)
	cmd.Dir = t.TempDir()
	stderr, err := cmd.StderrPipe()
	require.NoError(t, err)
	require.NoError(t, cmd.Start())
	t.Cleanup(func() { cmd.Process.Kill(); cmd.Wait() })
	sc := bufio.NewScanner(stderr)
	// The start-up line comes first, or after a few lines of the parts
	// that started before the listener answers (a replica's link).
	var line string
	for i := 0; i < 10 && !strings.Contains(line, "rlserver started"); i++ {
		require.True(t, sc.Scan(), "no start-up line")
		line = sc.Text()
	}
	require.Contains(t, line, "rlserver started")
	require.Contains(t, line, "version=")
	require.Contains(t, line, "shards=")
	m := addrRE.FindStringSubmatch(line)
	require.NotNil(t, m, line)
	go func() {
		for sc.Scan() {
		}
	}()
	return cmd, m[1]
}

func TestBinaryStopsCleanly(t *testing.T) {
	bin := buildBinary(t)
	for _, sig := range []os.Signal{syscall.SIGTERM, os.Interrupt} {
		cmd, addr := startBinary(t, bin)
		c := rltest.Dial(t, addr)
		require.Equal(t, "[0 16 15 -1 2]", c.Do("CL.THROTTLE", "user123", "15", "30", "60", "1"))
		require.NoError(t, cmd.Process.Signal(sig))
		require.NoError(t, waitExit(t, cmd), "exit status after %v", sig)
		require.Equal(t, 0, cmd.ProcessState.ExitCode())
	}
	// SHUTDOWN from a client stops it too, with exit 0.
	cmd, addr := startBinary(t, bin, "--clock", "manual", "--save-interval", "0")
	c := rltest.Dial(t, addr)
	require.Equal(t, "-ERR persistence is disabled (--save-interval 0)", c.Do("SHUTDOWN", "SAVE"))
	c.Send(rltest.Encode("SHUTDOWN", "NOSAVE"))
	require.True(t, c.Closed())
	require.NoError(t, waitExit(t, cmd))
	require.Equal(t, 0, cmd.ProcessState.ExitCode())
}

func waitExit(t *testing.T, cmd *exec.Cmd) error {
	t.Helper()
	done := make(chan error, 1)
	go func() { done <- cmd.Wait() }()
	select {
	case err := <-done:
		return err
	case <-time.After(20 * time.Second):
		t.Fatal("server did not exit within 20 s")
		return nil
	}
}

func TestDebugClockNeedsManualClock(t *testing.T) {
	cmd, addr := startBinary(t, buildBinary(t))
	_ = cmd
	c := rltest.Dial(t, addr)
	for _, args := range [][]string{{"GET"}, {"SET", "1"}, {"ADVANCE", "1"}} {
		require.Equal(t, "-ERR DEBUG CLOCK needs the manual clock (--clock manual)", c.Do(append([]string{"DEBUG", "CLOCK"}, args...)...))
	}
	// TIME follows the wall clock: its reading lies between two wall
	// readings taken around the call (a second of slack each side for the
	// server's own real clock), whatever today's date is.
	before := time.Now().UnixMicro()
	us := serverTime(t, c)
	after := time.Now().UnixMicro()
	require.GreaterOrEqual(t, us, before-int64(time.Second/time.Microsecond), "real clock TIME")
	require.LessOrEqual(t, us, after+int64(time.Second/time.Microsecond), "real clock TIME")
}

// TestProtectedModeWarning: the start-up warning's condition at the
// function level (tests bind loopback only): a bind address off the
// loopback interface.
func TestProtectedModeWarning(t *testing.T) {
	for bind, loopback := range map[string]bool{
		"127.0.0.1": true, "::1": true, "127.0.0.1 ::1": true, "localhost": true, "-::1": true,
		"0.0.0.0": false, "10.0.0.5": false, "127.0.0.1 10.0.0.5": false, "::": false, "example.com": false,
	} {
		require.Equal(t, loopback, isLoopbackBind(bind), bind)
	}
}

package rltest

import (
	"os"
	"os/exec"
	"testing"
)

// RequireToolsEnv names the environment variable CI sets so that a missing
// external tool fails the test instead of skipping it.
const RequireToolsEnv = "RLSERVER_REQUIRE_TOOLS"

// Tool returns the path of an external program (redis-cli,
// redis-benchmark). When it is missing the test is skipped with a message
// saying how to install it, or fails if RLSERVER_REQUIRE_TOOLS=1.
func Tool(t testing.TB, name string) string {
	t.Helper()
	p, err := exec.LookPath(name)
	if err == nil {
		return p
	}
	pkg := "redis-tools"
	if name == "redis-sentinel" || name == "redis-server" {
		pkg = name
	}
	msg := name + " not found: install Debian's " + pkg + " (apt-get install " + pkg + ") to run this test"
	if os.Getenv(RequireToolsEnv) == "1" {
		t.Fatalf("%s (%s=1 makes this a failure)", msg, RequireToolsEnv)
	}
	t.Skip(msg)
	return ""
}

// Long skips t under go test -short: the quick loop (README, "Test it")
// leaves out the tests that run real processes for seconds (Sentinel,
// cluster, memory fills) and keeps everything that runs in a second or
// so. what says what the test runs, for the skip message.
func Long(t testing.TB, what string) {
	t.Helper()
	if testing.Short() {
		t.Skip("long test (" + what + "): skipped with -short")
	}
}

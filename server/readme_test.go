package server_test

import (
	"net"
	"os"
	"os/exec"
	"strconv"
	"strings"
	"testing"

	"github.com/rlserver/rlserver/internal/rltest"
	"github.com/rlserver/rlserver/internal/testserver"
	"github.com/stretchr/testify/require"
)

// TestReadmeLeaseSession runs README.md's concurrency session with
// redis-cli against a server on the manual clock at the README's start,
// and requires every output as printed there.
func TestReadmeLeaseSession(t *testing.T) {
	cli := rltest.Tool(t, "redis-cli")
	readme, err := os.ReadFile("../README.md")
	require.NoError(t, err)
	_, rest, ok := strings.Cut(string(readme), "<!-- leases:begin -->\n```console\n")
	require.True(t, ok, "README.md has no leases session")
	block, _, ok := strings.Cut(rest, "```\n<!-- leases:end -->")
	require.True(t, ok)
	s := testserver.Start(t) // the manual clock at rltest.StartNs: --clock-start 1700000000000
	port := strconv.Itoa(s.Addr.(*net.TCPAddr).Port)
	steps := strings.Split(strings.TrimPrefix(block, "$ "), "\n$ ")
	require.Greater(t, len(steps), 5)
	for _, step := range steps {
		cmd, want, _ := strings.Cut(step, "\n")
		args, ok := strings.CutPrefix(cmd, "redis-cli ")
		require.True(t, ok, "a step that is not redis-cli: %q", cmd)
		out, err := exec.Command(cli, append([]string{"--no-raw", "-p", port}, strings.Fields(args)...)...).CombinedOutput()
		require.NoError(t, err, "%s: %s", cmd, out)
		require.Equal(t, strings.TrimSuffix(want, "\n"), strings.TrimSuffix(string(out), "\n"), "README.md's %q", cmd)
	}
}

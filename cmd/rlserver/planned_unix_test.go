//go:build unix

package main

import (
	"net"
	"strconv"
	"syscall"
	"testing"
	"time"

	"github.com/rlserver/rlserver/internal/rltest"
	"github.com/stretchr/testify/require"
)

// TestPlannedFailoverKeepsEveryDecision: SIGTERM on a primary whose
// replica is 8 MB of changes behind (a proxy holds its stream back, and
// the primary's socket takes at most 4 MB). The primary's stop waits for
// the replica's ack before it exits, so the replica, promoted, holds
// every decision the primary answered: each key as the primary left it,
// and not one request more admitted. The proxy passes the stream on
// again once the primary refuses connections. A stop that drops the
// replica's link before its clients' connections, as before the drain,
// has dropped it by then, and the replica ends megabytes short.
func TestPlannedFailoverKeepsEveryDecision(t *testing.T) {
	p := startNode(t, t.TempDir(), manual(startMs)...)
	px := rltest.NewStreamProxy(t, p.addr)
	r := startReplica(t, t.TempDir(), px.Addr(), manual(startMs)...)
	require.Equal(t, "1", p.c.Do("WAIT", "1", "10000"))
	px.Pause()
	keys, last := rltest.GrowStream(t, p.c, 8<<20)

	require.NoError(t, p.cmd.Process.Signal(syscall.SIGTERM))
	rltest.WaitFor(t, 20*time.Second, "the primary to refuse connections", func() (bool, string) {
		c, err := net.DialTimeout("tcp", p.addr, time.Second)
		if err != nil {
			return true, ""
		}
		c.Close()
		return false, "it still accepts"
	})
	px.Resume()
	require.NoError(t, waitExit(t, p.cmd), "exit after SIGTERM")
	require.Equal(t, 0, p.cmd.ProcessState.ExitCode())

	rltest.WaitFor(t, 20*time.Second, "the replica to see the link down", func() (bool, string) {
		v := rltest.Info(t, r.c, "replication")["master_link_status"]
		return v == "down", v
	})
	require.Equal(t, "+OK", r.c.Do("REPLICAOF", "NO", "ONE"))
	require.Equal(t, strconv.Itoa(keys), r.c.Do("DBSIZE"), "every key the primary wrote")
	// The last key written had one of its five requests a minute: four
	// more are admitted on the promoted replica, and no fifth.
	for i := range 4 {
		require.Regexp(t, `^\[0 5 `+strconv.Itoa(3-i)+` -1 \d+\]$`, r.c.Do("RL.FIXED", last, "5", "1m"), "request %d after the failover", i+2)
	}
	require.Regexp(t, `^\[1 5 0 \d+ \d+\]$`, r.c.Do("RL.FIXED", last, "5", "1m"), "the sixth request is refused")
}

package main

import (
	"fmt"
	"net"
	"strings"
	"testing"
	"time"

	"github.com/rlserver/rlserver/internal/rltest"
	"github.com/stretchr/testify/require"
)

// TestPrimaryKilledMidSyncLeavesTheReplicaWhole: a node holding 1,000
// keys of its own is made the replica of a primary of 500,000 keys, and
// the primary is killed (SIGKILL) as soon as the replica reports the
// sync's first bytes: most of the sync (17 MB) is still unsent. Promoted
// then, the replica must hold either its own keys, exactly, or, had the
// sync ended first, every key of the primary: never part of them. When a
// replica installed a full sync frame by frame, it was left with part of
// the primary's keys and none of its own.
func TestPrimaryKilledMidSyncLeavesTheReplicaWhole(t *testing.T) {
	const own, theirs = 1_000, 500_000
	p := startNode(t, t.TempDir(), "--save-interval", "0")
	r := startNode(t, t.TempDir(), "--save-interval", "0")
	charge := func(c *rltest.Conn, prefix string, n int) {
		for from := 0; from < n; from += 10_000 {
			var cmds [][]string
			for i := from; i < min(from+10_000, n); i++ {
				cmds = append(cmds, []string{"RL.FIXED", fmt.Sprint(prefix, i), "10", "1h"})
			}
			for i, reply := range rltest.Pipeline(t, c, cmds) {
				require.True(t, strings.HasPrefix(reply, "[0 10 9 -1 "), "key %d: %s", from+i, reply)
			}
		}
	}
	charge(p.c, "theirs:", theirs)
	charge(r.c, "own:", own)

	host, port, err := net.SplitHostPort(p.addr)
	require.NoError(t, err)
	require.Equal(t, "+OK", r.c.Do("REPLICAOF", host, port))
	deadline := time.Now().Add(30 * time.Second)
	for {
		f := rltest.Info(t, r.c, "replication")
		if f["master_link_status"] == "up" || f["master_sync_in_progress"] == "1" && f["master_sync_read_bytes"] != "0" {
			break
		}
		require.True(t, time.Now().Before(deadline), "the replica never began its sync: %v", f)
	}
	p.stop(t, "SIGKILL")
	require.Equal(t, "+OK", r.c.Do("REPLICAOF", "NO", "ONE"))

	switch keys := r.c.Do("DBSIZE"); keys {
	case fmt.Sprint(own):
		require.Equal(t, "1", r.c.Do("EXISTS", "own:0"))
		require.Equal(t, "1", r.c.Do("EXISTS", fmt.Sprint("own:", own-1)))
		peek := r.c.Do("RL.FIXED", "own:7", "10", "1h", "COST", "0")
		require.True(t, strings.HasPrefix(peek, "[0 10 9 -1 "), "own:7 as it was, charged once: %s", peek)
	case fmt.Sprint(theirs): // the sync ended before the kill
		t.Log("the sync ended before the primary was killed: the replica holds the primary's keys")
		require.Equal(t, "1", r.c.Do("EXISTS", "theirs:0"))
	default:
		t.Fatalf("the promoted replica holds %s keys: part of a sync (its own %d, the primary's %d)", keys, own, theirs)
	}
}

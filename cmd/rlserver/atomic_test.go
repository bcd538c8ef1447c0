package main

import (
	"bufio"
	"fmt"
	"net"
	"strconv"
	"testing"
	"time"

	"github.com/rlserver/rlserver/internal/rltest"
	"github.com/stretchr/testify/require"
)

// TestKill9NeverSplitsAPair: pairs of keys charged together, by RL.ALL
// and by MULTI/EXEC, are pipelined without pause against snapshots every
// 100 ms; the server is killed with SIGKILL in the middle of the stream
// and restarted, three times. After every restart each pair's two keys
// hold the same charge: a snapshot is a consistent cut, so no restart
// brings back one key of a pair charged and the other not (before the
// engine's cut lock, snapshots read shard by shard did).
func TestKill9NeverSplitsAPair(t *testing.T) {
	rltest.Long(t, "kill -9 of the binary under pipelined pairs, three times")
	const pairs = 2000
	dir := t.TempDir()
	args := manual(startMs, "--save-interval", "100ms")
	charged := 0 // rounds sent before the kill, at least
	for cycle := range 3 {
		n := startNode(t, dir, args...)
		// Every round charges every pair once more, both ways.
		var round []byte
		for i := range pairs {
			k := strconv.Itoa(i)
			round = append(round, rltest.Encode("RL.ALL", "a:"+k, "FIXED", "1000000", "1h", "AND", "b:"+k, "FIXED", "1000000", "1h")...)
			round = append(round, rltest.Encode("MULTI")...)
			round = append(round, rltest.Encode("RL.FIXED", "c:"+k, "1000000", "1h")...)
			round = append(round, rltest.Encode("RL.FIXED", "d:"+k, "1000000", "1h")...)
			round = append(round, rltest.Encode("EXEC")...)
		}
		nc, err := net.Dial("tcp", n.addr)
		require.NoError(t, err)
		// Replies are read and dropped as they come, so the server never
		// stalls on a full socket; rounds are sent until a few snapshots
		// have been written under them, then the kill lands mid-stream.
		go func() {
			br := bufio.NewReader(nc)
			for {
				if _, err := rltest.ReadReply(br); err != nil {
					return
				}
			}
		}()
		// A writer streams rounds without pause; snapshots are written
		// under the stream, and the kill lands in the middle of it.
		stop := make(chan struct{})
		sent := make(chan int)
		go func() {
			r := 0
			defer func() { sent <- r }()
			for {
				select {
				case <-stop:
					return
				default:
				}
				if _, err := nc.Write(round); err != nil {
					return
				}
				r++
			}
		}()
		saves0 := rltest.InfoInt(t, n.c, "persistence", "rdb_saves")
		rltest.WaitFor(t, 30*time.Second, "five snapshots under the stream", func() (bool, string) {
			saves := rltest.InfoInt(t, n.c, "persistence", "rdb_saves")
			return saves >= saves0+5, fmt.Sprintf("rdb_saves %d", saves)
		})
		n.stop(t, "SIGKILL")
		close(stop)
		nc.Close()
		t.Logf("cycle %d: %d rounds of %d pairs sent before the kill", cycle, <-sent, pairs)

		n = startNode(t, dir, args...)
		split := 0
		var cmds [][]string
		for i := range pairs {
			for _, p := range []string{"a:", "b:", "c:", "d:"} {
				cmds = append(cmds, []string{"RL.FIXED", p + strconv.Itoa(i), "1000000", "1h", "COST", "0"})
			}
		}
		replies := rltest.Pipeline(t, n.c, cmds)
		for i := range pairs {
			a, b, c, d := replies[4*i], replies[4*i+1], replies[4*i+2], replies[4*i+3]
			if a != b || c != d {
				split++
				if split <= 5 {
					t.Errorf("cycle %d pair %d split after kill -9: RL.ALL %s / %s, EXEC %s / %s", cycle, i, a, b, c, d)
				}
			}
		}
		require.Zero(t, split, "cycle %d: pairs split", cycle)
		// The charges kept are the snapshot's: more than before the cycle.
		require.NotEqual(t, "[0 1000000 1000000 -1 0]", replies[0], "cycle %d: nothing was kept", cycle)
		charged++
		n.stop(t, "SHUTDOWN NOSAVE")
	}
	require.Equal(t, 3, charged)
}

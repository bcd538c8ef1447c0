package node

import (
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/rlserver/rlserver/clock"
	"github.com/rlserver/rlserver/commands"
	"github.com/rlserver/rlserver/engine"
	"github.com/stretchr/testify/require"
)

// TestHistBuckets: every duration falls in the bucket whose bounds hold
// it, buckets are ordered, and a bucket spans at most a quarter of its
// lower bound past 4 ns.
func TestHistBuckets(t *testing.T) {
	lower := func(i int) int64 {
		if i == 0 {
			return 0
		}
		return HistUpper(i - 1)
	}
	for _, ns := range []int64{0, 1, 3, 4, 5, 7, 8, 9, 15, 16, 1000, 1023, 1024, 1025, 123456789, 1 << 37, 1<<38 - 1} {
		b := histBucket(ns)
		require.True(t, lower(b) <= ns && ns < HistUpper(b), "%d ns in bucket %d [%d, %d)", ns, b, lower(b), HistUpper(b))
	}
	require.Equal(t, histBuckets-1, histBucket(1<<50), "the last bucket is open-ended")
	for i := 1; i < histBuckets; i++ {
		require.Greater(t, HistUpper(i), HistUpper(i-1))
		if i >= 4 {
			require.LessOrEqual(t, (HistUpper(i)-lower(i))*4, lower(i), "bucket %d", i)
		}
	}
	b := make([]int64, histBuckets)
	b[histBucket(1000)] = 98
	b[histBucket(50_000)] = 1
	b[histBucket(2_000_000)] = 1
	require.Equal(t, []int64{HistUpper(histBucket(1000)), HistUpper(histBucket(50_000)), HistUpper(histBucket(2_000_000))},
		Percentiles(b, 0.5, 0.99, 0.999))
	require.Nil(t, Percentiles(make([]int64, histBuckets), 0.5))
}

func testNode(t *testing.T, cfg Config) (*Node, *Client) {
	cfg.Shards, cfg.MaxClients = 4, 10
	n := New(cfg, engine.New(4), clock.NewManual(1_700_000_000_000_000_000), Options{})
	c, err := n.NewClient("127.0.0.1:5000", "127.0.0.1:6379", nil)
	require.NoError(t, err)
	return n, c
}

// TestSlowlogTrims: an entry keeps 32 arguments at most (the last says how
// many more there were) and 128 bytes of each, as Redis's; the log keeps
// the newest slowlog-max-len entries.
func TestSlowlogTrims(t *testing.T) {
	n, c := testNode(t, Config{SlowlogSlowerThan: 0, SlowlogMaxLen: 2})
	cmd := n.table.Lookup([]byte("exists"))
	var args [][]byte
	for i := range 40 {
		args = append(args, fmt.Appendf(nil, "a%d", i))
	}
	args[1] = []byte(strings.Repeat("k", 300))
	for range 3 {
		n.observe(c, cmd, args, int64(time.Millisecond))
	}
	got := n.Slowlog(-1)
	require.Len(t, got, 2)
	require.Equal(t, int64(2), got[0].ID, "newest first")
	e := got[0]
	require.Len(t, e.Args, 32)
	require.Equal(t, strings.Repeat("k", 128)+"... (172 more bytes)", e.Args[1])
	require.Equal(t, "... (9 more arguments)", e.Args[31])
	require.Equal(t, int64(1000), e.Micros)
	require.Equal(t, "127.0.0.1:5000", e.Addr)
	n.SlowlogReset()
	require.Zero(t, n.SlowlogLen())
}

// TestLatencyMonitor: commands at or over the threshold are samples of
// "command" or, flagged fast, "fast-command"; one sample a second keeps
// the second's worst; RESET forgets.
func TestLatencyMonitor(t *testing.T) {
	n, c := testNode(t, Config{LatencyThreshold: 5, SlowlogSlowerThan: -1})
	slow, fast := n.table.Lookup([]byte("keys")), n.table.Lookup([]byte("ping"))
	n.observe(c, slow, nil, int64(4*time.Millisecond)) // under the threshold
	require.Empty(t, n.LatencyLatest())
	n.observe(c, slow, nil, int64(7*time.Millisecond))
	n.observe(c, slow, nil, int64(9*time.Millisecond))
	n.observe(c, fast, nil, int64(6*time.Millisecond))
	latest := map[string]commands.LatencyEvent{}
	for _, e := range n.LatencyLatest() {
		latest[e.Name] = e
	}
	require.Equal(t, int64(9), latest["command"].Latest)
	require.Equal(t, int64(9), latest["command"].Max)
	require.Equal(t, int64(6), latest["fast-command"].Latest)
	h := n.LatencyHistory("command")
	require.NotEmpty(t, h)
	require.Equal(t, int64(9), h[len(h)-1].Millis, "the second's worst")
	require.Equal(t, 1, n.LatencyReset([]string{"fast-command", "nosuch"}))
	require.Len(t, n.LatencyLatest(), 1)
	require.Equal(t, 1, n.LatencyReset(nil))
	require.Empty(t, n.LatencyLatest())
}

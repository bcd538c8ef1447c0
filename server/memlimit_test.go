package server_test

import (
	"fmt"
	"regexp"
	"runtime/debug"
	"strconv"
	"testing"
	"time"

	"github.com/rlserver/rlserver/internal/rltest"
	"github.com/rlserver/rlserver/server"
	"github.com/stretchr/testify/require"
)

// TestMemoryLimitCoversTheKeyspace: with a memory limit, the Go runtime's
// own limit is what the keyspace (mapped outside the Go heap) leaves of
// it: it drops by at least the keyspace's live bytes as keys fill it, rises
// again when they are flushed, INFO memory shows both, and the runtime's
// limit is as it was once the server stops.
func TestMemoryLimitCoversTheKeyspace(t *testing.T) {
	const limit = 1 << 30
	before := debug.SetMemoryLimit(-1)
	s := rltest.Start(t, func(o *server.Options) {
		o.MemoryLimit = limit
		o.MemoryLimitInterval = 5 * time.Millisecond
	})
	c := rltest.Dial(t, s.Addr.String())
	info := func(field string) int64 {
		t.Helper()
		txt := c.Do("INFO", "memory")
		m := regexp.MustCompile(field + `:(\d+)`).FindStringSubmatch(txt)
		require.NotNil(t, m, txt)
		n, err := strconv.ParseInt(m[1], 10, 64)
		require.NoError(t, err)
		return n
	}
	require.Equal(t, int64(limit), info("memory_limit"))
	// waitFor polls the runtime's limit until ok holds, and returns it.
	waitFor := func(what string, ok func(goLimit int64) bool) int64 {
		t.Helper()
		deadline := time.Now().Add(10 * time.Second)
		for {
			l := debug.SetMemoryLimit(-1)
			if ok(l) {
				return l
			}
			if time.Now().After(deadline) {
				t.Fatalf("%s: the Go runtime's limit is %d", what, l)
			}
			time.Sleep(5 * time.Millisecond) // polling with a deadline
		}
	}
	empty := waitFor("empty", func(l int64) bool { return l < limit })

	// 300,000 keys in 8 shards: every shard's region is mapped.
	const keys, batch = 300_000, 1000
	for i := 0; i < keys; i += batch {
		var b []byte
		for j := i; j < i+batch; j++ {
			b = append(b, rltest.Encode("CL.THROTTLE", fmt.Sprintf("memlimit:%09d", j), "10", "1", "86400")...)
		}
		c.Send(b)
		for j := 0; j < batch; j++ {
			r, err := c.Read()
			require.NoError(t, err)
			require.Equal(t, "[0 11 10 -1 86400]", r)
		}
	}
	records := info("keyspace_records_bytes")
	require.Greater(t, records, int64(keys*30))
	full := waitFor("full", func(l int64) bool { return l <= empty-records })
	require.Equal(t, full, info("go_memory_limit"))

	require.Equal(t, "+OK", c.Do("FLUSHALL"))
	waitFor("flushed", func(l int64) bool { return l >= full+records*9/10 })

	require.NoError(t, s.Close(t.Context()))
	require.Equal(t, before, debug.SetMemoryLimit(-1), "restored when the server stops")
}

package server_test

import (
	"fmt"
	"runtime/debug"
	"strings"
	"testing"
	"time"

	"github.com/rlserver/rlserver/internal/rltest"
	"github.com/rlserver/rlserver/internal/testserver"
	"github.com/rlserver/rlserver/server"
	"github.com/stretchr/testify/require"
)

// TestMemoryLimitCoversTheKeyspace: with a memory limit, the Go runtime's
// own limit is what the keyspace (mapped outside the Go heap) leaves of
// it: at least the keyspace's live bytes below the limit once keys fill
// it, rising again by most of them when they are flushed; INFO memory
// shows both, and the runtime's limit is as it was once the server stops.
// The keyspace is made large (long key names) so that its bytes stand out
// from whatever else moves the process's resident memory (the race
// detector's own memory, in -race runs).
func TestMemoryLimitCoversTheKeyspace(t *testing.T) {
	const limit = 1 << 30
	before := debug.SetMemoryLimit(-1)
	s := testserver.Start(t, func(o *server.Options) {
		o.MemoryLimit = limit
		o.MemoryLimitInterval = 5 * time.Millisecond
	})
	c := rltest.Dial(t, s.Addr.String())
	goLimit := func() int64 { return debug.SetMemoryLimit(-1) }
	state := func() string { return fmt.Sprintf("the Go runtime's limit is %d", goLimit()) }
	rltest.WaitFor(t, 10*time.Second, "memory_limit", func() (bool, string) { return rltest.InfoInt(t, c, "memory", "memory_limit") == limit, state() })

	// 120,000 keys with 300-byte names, about 40 MB in 8 shards' mapped
	// regions.
	const keys, batch = 120_000, 1000
	pad := strings.Repeat("k", 290)
	for i := 0; i < keys; i += batch {
		var b []byte
		for j := i; j < i+batch; j++ {
			b = append(b, rltest.Encode("CL.THROTTLE", fmt.Sprintf("%s%010d", pad, j), "10", "1", "86400")...)
		}
		c.Send(b)
		for j := 0; j < batch; j++ {
			r, err := c.Read()
			require.NoError(t, err)
			require.Equal(t, "[0 11 10 -1 86400]", r)
		}
	}
	records := rltest.InfoInt(t, c, "memory", "keyspace_records_bytes")
	require.Greater(t, records, int64(keys*300))
	rltest.WaitFor(t, 10*time.Second, "full", func() (bool, string) { return goLimit() <= limit-records, state() })
	// INFO shows the runtime's current limit (it moves with every page of
	// RSS, so only its bound is checked).
	rltest.WaitFor(t, 10*time.Second, "INFO full", func() (bool, string) {
		return rltest.InfoInt(t, c, "memory", "go_memory_limit") <= limit-records, state()
	})
	full := goLimit()

	require.Equal(t, "+OK", c.Do("FLUSHALL"))
	rltest.WaitFor(t, 10*time.Second, "flushed", func() (bool, string) { return goLimit() >= full+records/2, state() })

	require.NoError(t, s.Close(t.Context()))
	require.Equal(t, before, goLimit(), "restored when the server stops")
}

// TestMemoryLimitSharedByServers: servers in one process share the
// runtime's limit. Each takes the limit as it was before any of them
// changed it (not the share another has already set, which would compound),
// and the last to stop puts it back.
func TestMemoryLimitSharedByServers(t *testing.T) {
	const limit = 1 << 30
	orig := debug.SetMemoryLimit(limit) // as GOMEMLIMIT=1GiB would
	defer debug.SetMemoryLimit(orig)
	fast := func(o *server.Options) { o.MemoryLimitInterval = 5 * time.Millisecond }
	a := testserver.Start(t, fast)
	goLimit := func() int64 { return debug.SetMemoryLimit(-1) }
	state := func() string { return fmt.Sprintf("the Go runtime's limit is %d", goLimit()) }
	rltest.WaitFor(t, 10*time.Second, "first server", func() (bool, string) { return goLimit() < limit, state() })
	one := goLimit() // limit less the memory outside the runtime: what the tests before left too
	b := testserver.Start(t, fast)
	ca, cb := rltest.Dial(t, a.Addr.String()), rltest.Dial(t, b.Addr.String())
	for _, c := range []*rltest.Conn{ca, cb} {
		rltest.WaitFor(t, 10*time.Second, "memory_limit", func() (bool, string) { return rltest.InfoInt(t, c, "memory", "memory_limit") == limit, state() })
	}
	// Both set limit less the process's outside memory: never far below
	// what one server alone set. A compounding second server would take
	// that outside memory off twice, so allow half of it (at least 16 MiB,
	// for the pages the second server itself adds outside the runtime).
	// The outside memory is what it is: the tests that ran before in this
	// process leave some (allocators keep what they freed), so the bound
	// is relative to it, not to the limit.
	slack := max((limit-one)/2, 16<<20)
	for range 20 {
		require.Greater(t, goLimit(), one-slack, "one server set %d", one)
		ca.Do("PING")
	}
	require.NoError(t, a.Close(t.Context()))
	require.Less(t, goLimit(), int64(limit), "the second server still runs")
	require.NoError(t, b.Close(t.Context()))
	require.Equal(t, int64(limit), goLimit(), "the last server to stop puts the limit back")
}

package server_test

import (
	"fmt"
	"runtime"
	"strconv"
	"testing"
	"time"

	"github.com/rlserver/rlserver/internal/rltest"
	"github.com/rlserver/rlserver/internal/testserver"
	"github.com/stretchr/testify/require"
)

// memoryUsed is the Go heap after a collection plus the keyspace regions
// INFO memory reports (they live outside the heap).
func memoryUsed(t *testing.T, c *rltest.Conn) uint64 {
	t.Helper()
	runtime.GC()
	var m runtime.MemStats
	runtime.ReadMemStats(&m)
	return m.HeapAlloc + uint64(rltest.InfoInt(t, c, "memory", "keyspace_bytes"))
}

// TestExpiryReturnsMemory fills 1M CL.THROTTLE keys that live 1 s, moves
// the clock past their expiry, and requires the active sweep (no client
// touches the keys again) to bring DBSIZE to 0 and give the memory back.
func TestExpiryReturnsMemory(t *testing.T) {
	rltest.Long(t, "a million keys expiring")
	const keys = 1_000_000
	s := testserver.Start(t)
	c := rltest.Dial(t, s.Addr.String())
	base := memoryUsed(t, c)

	// Pipeline the fill in batches; a writer goroutine keeps the socket busy.
	const batch = 10_000
	for start := 0; start < keys; start += batch {
		var buf []byte
		for i := start; i < start+batch; i++ {
			buf = append(buf, rltest.Encode("CL.THROTTLE", "key:"+strconv.Itoa(i), "0", "1", "1")...)
		}
		c.Send(buf)
		for i := 0; i < batch; i++ {
			got, err := c.Read()
			require.NoError(t, err)
			if got != "[0 1 0 -1 1]" {
				t.Fatalf("key %d: %s", start+i, got)
			}
		}
	}
	require.Equal(t, strconv.Itoa(keys), c.Do("DBSIZE"))
	full := memoryUsed(t, c)
	perKey := float64(full-base) / keys
	t.Logf("memory: base %d MB, with %d keys %d MB (%.0f B/key)", base>>20, keys, full>>20, perKey)
	require.Greater(t, full, base+keys*32, "1M keys should occupy memory")

	require.Equal(t, "+OK", c.Do("DEBUG", "CLOCK", "ADVANCE", "2s"))
	rltest.WaitFor(t, 15*time.Second, "DBSIZE to reach 0", func() (bool, string) {
		n := c.Do("DBSIZE")
		return n == "0", "DBSIZE " + n
	})
	rltest.WaitFor(t, 15*time.Second, "memory to shrink", func() (bool, string) {
		h := memoryUsed(t, c)
		return h < base+(full-base)/10, fmt.Sprintf("memory %d MB (base %d MB, full %d MB)", h>>20, base>>20, full>>20)
	})
	stats := rltest.InfoText(t, c, "stats")
	require.Contains(t, stats, "expired_keys:1000000")
	// The sweep held shard locks to drop them, in short steps: the
	// longest hold is reported, and far below a whole shard's work.
	hold := rltest.InfoValue(t, stats, "expire_longest_hold_us")
	require.Positive(t, hold)
	t.Logf("longest hold of a shard lock by the sweep: %d µs", hold)
}

// TestExpiryAllKinds: keys of every algorithm are dropped by the active
// sweep once fresh, without being touched again.
func TestExpiryAllKinds(t *testing.T) {
	s := testserver.Start(t)
	c := rltest.Dial(t, s.Addr.String())
	for i := 0; i < 1000; i++ {
		k := strconv.Itoa(i)
		for _, cmd := range [][]string{
			{"RL.FIXED", "f" + k, "10", "1s"}, {"RL.LOG", "l" + k, "10", "1s"}, {"RL.SLIDE", "s" + k, "10", "1s"},
			{"RL.BUCKET", "b" + k, "10", "10", "1s"}, {"CL.THROTTLE", "c" + k, "9", "10", "1"},
		} {
			require.Contains(t, c.Do(cmd...), "[0 ")
		}
	}
	require.Equal(t, "5000", c.Do("DBSIZE"))
	require.Equal(t, "+OK", c.Do("DEBUG", "CLOCK", "ADVANCE", "2001ms")) // RL.SLIDE keeps its window and the next
	rltest.WaitFor(t, 15*time.Second, "DBSIZE to reach 0", func() (bool, string) {
		n := c.Do("DBSIZE")
		return n == "0", "DBSIZE " + n
	})
}

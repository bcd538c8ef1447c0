package engine

import (
	"fmt"
	"sync"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// TestPrefetchChangesNothing: Prefetch over any keys (held or not,
// repeated, more than PrefetchMax, on a small or a large keyspace) leaves
// every key's state as it was, and running it while other goroutines
// decide on the same shards is race-free (go test -race) and deadlock-free
// next to Atomic, which takes every shard lock in the same order.
func TestPrefetchChangesNothing(t *testing.T) {
	const now = int64(1e9)
	e := New(4)
	st := e.Store()
	p := Params{Limit: 1 << 40, Window: 1e12, Cost: 1}
	keys := func(from, n int) [][]byte {
		var ks [][]byte
		for i := from; i < from+n; i++ {
			ks = append(ks, []byte(fmt.Sprint("k", i%(n/2+1))))
		}
		return ks
	}
	require.Zero(t, e.Prefetch(nil))
	e.Prefetch(keys(0, 10)) // an empty, small keyspace: nothing to do
	require.False(t, e.Prefetches())
	for i := 0; i < 4*prefetchMinSlots; i++ {
		_, err := st.Limit(KindFixed, []byte(fmt.Sprint("k", i)), p, now)
		require.NoError(t, err)
	}
	require.True(t, e.Prefetches())
	var before []Record
	e.Dump(now, func(r Record) { before = append(before, r) })
	var wg sync.WaitGroup
	for g := 0; g < 3; g++ {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for i := 0; i < 300; i++ {
				switch g {
				case 0:
					e.Prefetch(keys(i, 2*PrefetchMax))
				case 1:
					e.Atomic(func(Store) {})
				default:
					// assert, not require: off the test goroutine.
					_, err := st.Limit(KindFixed, []byte(fmt.Sprint("other", i)), p, now)
					if !assert.NoError(t, err) {
						return
					}
				}
			}
		}()
	}
	wg.Wait()
	if t.Failed() {
		t.FailNow()
	}
	after := map[string]Record{}
	e.Dump(now, func(r Record) { after[r.Key] = r })
	for _, r := range before {
		require.Equal(t, r, after[r.Key])
	}
}

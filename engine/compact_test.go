package engine

import (
	"fmt"
	"math/rand/v2"
	"testing"

	"github.com/stretchr/testify/require"
)

// TestChangesAcrossIncrementalCompaction: while a shard is compacted step
// by step between requests (records moving under the dirty list), Changes
// reports every key written since its previous call with its current
// state, and every key deleted, exactly as a model of the writes says.
func TestChangesAcrossIncrementalCompaction(t *testing.T) {
	seed := rand.Uint64()
	t.Logf("seed %d", seed)
	r := rand.New(rand.NewPCG(seed, 7))
	const now = int64(1e9)
	e := New(1)
	e.TrackChanges()
	st := e.Store()
	s := e.shards[0]
	p := Params{Limit: 1 << 40, Window: 1e12}
	counts := map[string]int64{} // the keys held and their counts
	written, deleted := map[string]bool{}, map[string]bool{}
	steps := 0
	for op := 0; op < 20000; op++ {
		k := fmt.Sprint("key", r.IntN(500))
		if r.IntN(5) == 0 {
			if st.Delete([]byte(k), now) {
				delete(counts, k)
				delete(written, k)
				deleted[k] = true
			}
		} else {
			// Costs that grow the count's varint move the record.
			p.Cost = 1 + r.Int64N(1<<(7*r.IntN(4)))
			_, err := st.Limit(KindFixed, []byte(k), p, now)
			require.NoError(t, err)
			counts[k] += p.Cost
			written[k] = true
			delete(deleted, k)
		}
		s.mu.Lock()
		if s.compacting || s.wastefulLocked() || r.IntN(100) == 0 {
			s.compactStepLocked(1 + r.IntN(30))
			steps++
		}
		s.mu.Unlock()
		if r.IntN(300) == 0 {
			gotW, gotD := map[string]int64{}, map[string]bool{}
			e.Changes(func(rec Record) {
				if rec.Kind == KindNone {
					gotD[rec.Key] = true
				} else {
					gotW[rec.Key] = rec.B
				}
			})
			require.Len(t, gotW, len(written), "op %d", op)
			for k := range written {
				require.Equal(t, counts[k], gotW[k], "op %d: key %s", op, k)
			}
			for k := range deleted {
				require.True(t, gotD[k], "op %d: deletion of %s not reported", op, k)
			}
			require.Zero(t, e.PendingChanges())
			written, deleted = map[string]bool{}, map[string]bool{}
		}
	}
	t.Logf("%d compaction steps, %d compactions", steps, s.compactions)
	require.Greater(t, s.compactions, uint64(10))
}

// TestSweepCompactsInSteps: keys that expire leave garbage, and the sweep
// gives it back, compacting in steps, while a walk of the region stays
// whole and every held key stays reachable.
func TestSweepCompactsInSteps(t *testing.T) {
	e := New(1)
	st := e.Store()
	s := e.shards[0]
	p := Params{Limit: 100, Window: 1e9, Cost: 1}
	held := map[string]bool{}
	for i := 0; i < 20000; i++ {
		now := int64(1e9)
		k := fmt.Sprint("short", i)
		if i%4 == 0 {
			now = 1e12 // these outlive the sweep
			k = fmt.Sprint("long", i)
			held[k] = true
		}
		_, err := st.Limit(KindFixed, []byte(k), p, now)
		require.NoError(t, err)
	}
	before := len(s.data)
	for e.Sweep(1e11).Expired > 0 {
	}
	e.Sweep(1e11)
	s.mu.Lock()
	defer s.mu.Unlock()
	require.False(t, s.compacting)
	require.Zero(t, s.garbage)
	require.Less(t, len(s.data), before/2, "the expired keys' space should be given back")
	checkRegion(t, s, held)
}

package engine

import (
	"fmt"
	"math/rand/v2"
	"testing"

	"github.com/stretchr/testify/require"
)

// TestShrinkModel drives a shard with random inserts, relocations,
// removals, mass removals, compaction steps and partial moves, and shrinks
// its table at random moments (mid-move, into an equal or a larger table
// too), with SCAN walks running throughout: the table must match a model
// (checkRegion), and every key held for a whole walk must be returned by
// it. Hash tags collide heavily, so probe runs are long and wrap around.
func TestShrinkModel(t *testing.T) {
	seed := rand.Uint64()
	t.Logf("seed %d", seed)
	r := rand.New(rand.NewPCG(seed, 11))
	const now = int64(1e9)
	shrinkMoves, scansDuringShrink := 0, 0
	for round := 0; round < 16; round++ {
		tags := 1 + r.IntN(2000)
		if round%3 == 0 {
			tags = 1 + r.IntN(30)
		}
		hashOf := func(k string) uint64 {
			x := uint64(0)
			for _, c := range []byte(k) {
				x = x*131 + uint64(c)
			}
			return (x % uint64(tags)) * 0x9E3779B1
		}
		e := newEngine(1, options{
			migrateAtOnce: []int{0, 0, 16, 1024}[round%4],
			hash:          func(k []byte) uint64 { return hashOf(string(k)) },
		})
		st := e.Store()
		s := e.shards[0]
		model := map[string]bool{}
		nkeys := 50 + r.IntN(3000)
		// A SCAN walk: its position, the keys held since it began (and
		// not removed since), and the keys it has returned.
		type walk struct {
			pos              int64
			throughout, seen map[string]bool
		}
		newWalk := func() *walk {
			th := map[string]bool{}
			for k := range model {
				th[k] = true
			}
			return &walk{throughout: th, seen: map[string]bool{}}
		}
		w := newWalk()
		remove := func(k string, h uint64, off int) {
			s.removeLocked(off, tagOf(h))
			delete(model, k)
			delete(w.throughout, k)
		}
		for op := 0; op < 6000; op++ {
			k := fmt.Sprint("k", r.IntN(nkeys))
			h := hashOf(k)
			if s.old != nil && r.IntN(4) != 0 { // a lookup moves four slots
				s.migrateLocked(4)
			}
			off, _, ok := s.findLocked(h, []byte(k))
			require.Equal(t, model[k], ok, "seed %d round %d op %d key %s", seed, round, op, k)
			switch {
			case !ok && r.IntN(3) > 0:
				s.putLocked(0, 0, h, []byte(k), entry{kind: KindFixed, deadline: never, w: fixedState{count: int64(op)}.words()}, nil)
				model[k] = true
			case ok && r.IntN(3) == 0: // a wider count moves the record
				s.putLocked(off, parseRecord(s.data, off).tail, h, []byte(k), entry{kind: KindFixed, deadline: never, w: fixedState{count: int64(op) << (7 * r.IntN(8))}.words()}, nil)
			case ok && r.IntN(2) == 0:
				remove(k, h, off)
			}
			switch x := r.IntN(1000); {
			case x < 3: // a mass removal, then a shrink as the sweep does
				for kk := range model {
					if r.IntN(16) != 0 {
						hh := hashOf(kk)
						o, _, ok := s.findLocked(hh, []byte(kk))
						require.True(t, ok)
						remove(kk, hh, o)
					}
				}
				fallthrough
			case x < 12:
				if s.garbage > 0 {
					s.compactInPlaceLocked()
				}
				if s.old != nil && r.IntN(2) == 0 {
					break // the sweep shrinks only once no move is under way
				}
				s.shrinkLocked()
				if s.old != nil && len(s.old) > len(s.slots) {
					shrinkMoves++
				}
			case x < 40 || s.compacting && x < 400:
				s.compactStepLocked(1 + r.IntN(600))
			case x < 60 && s.old != nil:
				s.migrateLocked(r.IntN(64))
			}
			if r.IntN(3) == 0 {
				if s.old != nil && len(s.old) > len(s.slots) {
					scansDuringShrink++
				}
				w.pos = st.ScanSlots(0, w.pos, 1+r.IntN(20), now, func(ki KeyInfo) { w.seen[ki.Key] = true })
				if w.pos < 0 {
					for kk := range w.throughout {
						require.True(t, w.seen[kk], "seed %d round %d op %d: %s, held throughout the walk, not returned", seed, round, op, kk)
					}
					w = newWalk()
				}
			}
			require.Equal(t, len(model), s.count)
			if op%200 == 0 || s.old != nil && op%20 == 0 {
				checkRegion(t, s, model)
			}
		}
		s.mem.release()
	}
	require.Positive(t, shrinkMoves, "no shrink moved in steps")
	require.Positive(t, scansDuringShrink, "no scan ran during a shrink")
}

// TestShrinkMovesInStepsUnderInserts: inserts alone, with no sweep to
// finish the move, empty an old table many times the new one's size a
// slice at a time, never the rest of it at once (which took 1 ms under
// the shard lock for a 16x shrink).
func TestShrinkMovesInStepsUnderInserts(t *testing.T) {
	o := newOneShard(defaultOptions)
	s := o.s
	o.shrinkSparse(t, 120_000, 20)
	oldLen, newLen := len(s.old), len(s.slots)
	require.GreaterOrEqual(t, oldLen, 8*newLen)
	most := 0
	for i := 0; s.old != nil; i++ {
		before := s.migrated
		o.touch(t, fmt.Sprint("new", i))
		if s.old != nil {
			most = max(most, s.migrated-before)
		} else {
			most = max(most, oldLen-before)
		}
	}
	// An insert moves 4*len(old)/len(new) slots, its lookup four more.
	require.LessOrEqual(t, most, 4*oldLen/newLen+4, "one insert moved %d of %d old slots", most, oldLen)
}

// oneShard is a one-shard store for the table tests, whose keys are
// RL.FIXED keys that never expire.
type oneShard struct {
	st Store
	s  *shard
}

const oneShardNow = int64(1e9)

func newOneShard(o options) oneShard {
	e := newEngine(1, o)
	return oneShard{e.Store(), e.shards[0]}
}

// touch decides on key: an insert if it is new, a lookup and an update in
// place if not.
func (o oneShard) touch(t testing.TB, key string) {
	t.Helper()
	_, err := o.st.Limit(KindFixed, []byte(key), Params{Limit: 1 << 40, Window: 1e12, Cost: 1}, oneShardNow)
	require.NoError(t, err)
}

// walkWhileMoving walks the shard with SCAN, count keys a call, running
// between(i) after the i-th call (decisions that move the table on under
// the walk). It returns the keys the walk returned, and how many of its
// calls ran while the table was moving.
func (o oneShard) walkWhileMoving(count int, between func(i int)) (seen map[string]bool, moving int) {
	seen = map[string]bool{}
	for pos, i := int64(0), 0; pos >= 0; i++ {
		if o.s.old != nil {
			moving++
		}
		pos = o.st.ScanSlots(0, pos, count, oneShardNow, func(k KeyInfo) { seen[k.Key] = true })
		between(i)
	}
	return seen, moving
}

// shrinkSparse fills n keys, deletes all but every keep-th, compacts the
// region and starts the table's shrink, as the sweep does; it returns the
// keys kept.
func (o oneShard) shrinkSparse(t testing.TB, n, keep int) (held []string) {
	t.Helper()
	for i := 0; i < n; i++ {
		o.touch(t, fmt.Sprint("k", i))
	}
	for i := 0; i < n; i++ {
		k := fmt.Sprint("k", i)
		if i%keep == 0 {
			held = append(held, k)
		} else {
			require.True(t, o.st.Delete([]byte(k), oneShardNow))
		}
	}
	o.s.mu.Lock()
	defer o.s.mu.Unlock()
	require.True(t, o.s.sparseLocked())
	o.s.compactInPlaceLocked()
	o.s.shrinkLocked()
	return held
}

// TestReleaseSparesAppendedRecords: a finished compaction leaves the
// emptied tail's pages for the sweep to give back, a slice per step.
// Records appended into that tail meanwhile are never given back (they
// would read as zeros), and no step releases more than a slice.
func TestReleaseSparesAppendedRecords(t *testing.T) {
	o := newOneShard(defaultOptions)
	s := o.s
	model := map[string]bool{}
	for i := 0; i < 120_000; i++ {
		o.touch(t, fmt.Sprint("k", i))
	}
	for i := 0; i < 120_000; i++ {
		k := fmt.Sprint("k", i)
		if i%20 == 0 {
			model[k] = true
		} else {
			require.True(t, o.st.Delete([]byte(k), oneShardNow))
		}
	}
	s.mu.Lock()
	s.compactInPlaceLocked() // the tail is emptied
	require.Less(t, s.relFrom, s.relTo, "pages left to release")
	require.GreaterOrEqual(t, s.relTo-s.relFrom, 4*releaseStep)
	s.mu.Unlock()
	for i := 0; i < 20_000; i++ { // appended where the emptied tail begins
		k := fmt.Sprint("new", i)
		o.touch(t, k)
		model[k] = true
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	require.Greater(t, len(s.data), s.relFrom, "appends reached into the emptied tail")
	steps := 0
	for more := true; more; steps++ {
		from := max(s.relFrom, len(s.data))
		more = s.releaseStepLocked(releaseStep)
		if more {
			require.LessOrEqual(t, s.relFrom-from, releaseStep+pageSize)
		}
	}
	require.Greater(t, steps, 2)
	checkRegion(t, s, model)
	for k := range model {
		off, _, ok := s.findLocked(s.hash([]byte(k)), []byte(k))
		require.True(t, ok)
		require.Equal(t, k, string(parseRecord(s.data, off).key))
	}
}

// TestRetiredTablesFreedBySweep: a move that empties a mapped old table
// (here, inserts finishing a growth) leaves it to the sweep, which
// unmaps it outside the shard lock; the table is counted as held until
// then.
func TestRetiredTablesFreedBySweep(t *testing.T) {
	o := newOneShard(defaultOptions)
	s := o.s
	for i := 0; s.mem.retired == nil; i++ {
		require.Less(t, i, 1_000_000, "no mapped table was retired")
		o.touch(t, fmt.Sprint("k", i))
	}
	retired := 0
	for _, r := range s.mem.retired {
		require.GreaterOrEqual(t, cap(r), mapMin)
		retired += cap(r)
	}
	held := o.st.Memory().Held
	require.GreaterOrEqual(t, held, int64(retired+cap(s.data)+8*len(s.slots)))
	o.st.e.Sweep(oneShardNow)
	require.Nil(t, s.mem.retired, "the sweep frees retired tables")
	require.Equal(t, held-int64(retired), o.st.Memory().Held)
}

// TestShrinkToEmptyRetiresTheTable: a shard whose keys all went gives its
// mapped table to the sweep to unmap outside the lock, as a move does.
func TestShrinkToEmptyRetiresTheTable(t *testing.T) {
	o := newOneShard(defaultOptions)
	s := o.s
	for i := 0; i < 40_000; i++ {
		o.touch(t, fmt.Sprint("k", i))
	}
	for i := 0; i < 40_000; i++ {
		require.True(t, o.st.Delete([]byte(fmt.Sprint("k", i)), oneShardNow))
	}
	o.st.e.FreeRetired()
	s.mu.Lock()
	table := cap(s.mem.slots)
	require.GreaterOrEqual(t, table, mapMin)
	s.compactInPlaceLocked()
	s.shrinkLocked()
	require.Nil(t, s.slots)
	require.Len(t, s.mem.retired, 1)
	require.Equal(t, table, cap(s.mem.retired[0]))
	s.mu.Unlock()
	o.st.e.FreeRetired()
	require.Nil(t, s.mem.retired)
}

// TestSweepJudgesExpiryByLiveRecords: a pass goes on past sweepMinBytes of live records
// while more than a quarter of a chunk's live records expired, however
// much garbage (records of removed keys, awaiting compaction) lies between
// them: here three dead records for every expired key, and one pass
// reclaims every expired key.
func TestSweepJudgesExpiryByLiveRecords(t *testing.T) {
	o := newOneShard(defaultOptions)
	s := o.s
	const n = 20_000
	short := Params{Limit: 10, Window: 1e9, Cost: 1}
	for i := 0; i < n; i++ {
		_, err := o.st.Limit(KindFixed, []byte(fmt.Sprint("k", i)), short, oneShardNow)
		require.NoError(t, err)
	}
	for i := 0; i < n; i++ {
		if i%4 != 0 {
			require.True(t, o.st.Delete([]byte(fmt.Sprint("k", i)), oneShardNow))
		}
	}
	require.Equal(t, n/4, s.count)
	require.Greater(t, s.garbage, 0)
	st := o.st.e.Sweep(oneShardNow + 2e9) // every key left has expired
	require.Equal(t, n/4, st.Expired, "one pass reclaims them all")
	require.Zero(t, s.count)
}

// TestExpectSizesEmptyTables: Fill (expect) gives each empty shard a table for its
// share of the keys, so filling it moves no table; a shard that holds keys
// keeps its table; a sweep during Fill shrinks none; and when fewer keys
// come, the sweep gives the room back afterwards.
func TestExpectSizesEmptyTables(t *testing.T) {
	const now = int64(1e9)
	p := Params{Limit: 10, Window: 1e12, Cost: 1}
	fill := func(e *Engine, n int) {
		for i := range n {
			_, err := e.Store().Limit(KindFixed, fmt.Appendf(nil, "key:%d", i), p, now)
			require.NoError(t, err)
		}
	}
	// Filled without expect, the tables grow (and move) as keys come.
	e := New(4)
	fill(e, 100_000)
	grown := len(e.shards[0].slots)

	e = New(4)
	e.expect(100_000)
	sized := make([]int, len(e.shards))
	for i, s := range e.shards {
		sized[i] = len(s.slots)
		require.GreaterOrEqual(t, maxKeys(sized[i]), 100_000/4, "shard %d's table holds its share", i)
	}
	fill(e, 100_000)
	for i, s := range e.shards {
		require.Nil(t, s.old, "shard %d moved a table", i)
		require.Equal(t, sized[i], len(s.slots), "shard %d's table grew while it filled", i)
	}
	require.LessOrEqual(t, sized[0], grown+grown/4, "expect's table is no larger than a grown one's next")

	// A shard with keys keeps its table.
	e.expect(10_000_000)
	require.Equal(t, sized[0], len(e.shards[0].slots))

	// A sweep inside Fill shrinks nothing: the tables are empty at first.
	e = New(4)
	e.Fill(100_000, func() {
		fill(e, 100)
		e.Sweep(now)
		for i, s := range e.shards {
			require.Equal(t, sized[i], len(s.slots), "shard %d's table shrank while it filled", i)
		}
	})

	// Fewer keys than expected: the sweep then shrinks the tables left
	// mostly empty.
	e.Sweep(now)
	for i, s := range e.shards {
		e.Sweep(now) // a move in steps: the sweeps finish it
		require.Less(t, len(s.slots), sized[i]/8, "shard %d kept its empty room", i)
	}
}

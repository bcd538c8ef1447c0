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
	e := newEngine(1, options{migrateAtOnce: 0}) // every growth moves in steps: records dirty in either table
	f := e.NewFeed()
	st := e.Store()
	s := e.shards[0]
	p := Params{Limit: 1 << 40, Window: 1e12}
	counts := map[string]int64{} // the keys held and their counts
	written, deleted := map[string]bool{}, map[string]bool{}
	deletions := 0 // Pending counts each deletion, and each key written once
	movingChanges := 0
	steps := 0
	for op := 0; op < 20000; op++ {
		k := fmt.Sprint("key", r.IntN(500))
		if r.IntN(5) == 0 {
			if st.Delete([]byte(k), now) {
				delete(counts, k)
				delete(written, k)
				deleted[k] = true
				deletions++
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
			s.compactStepLocked(1 + r.IntN(900)) // bytes: one record to a few dozen
			steps++
		}
		s.mu.Unlock()
		if r.IntN(300) == 0 || s.old != nil && r.IntN(3) == 0 {
			if s.old != nil {
				movingChanges++
			}
			require.Equal(t, len(written)+deletions, f.Pending(), "op %d", op)
			gotW, gotD := map[string]int64{}, map[string]bool{}
			f.Next(func(rec Record) {
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
			require.Zero(t, f.Pending())
			written, deleted, deletions = map[string]bool{}, map[string]bool{}, 0
		}
	}
	t.Logf("%d compaction steps, %d compactions, %d Changes calls during a table move", steps, s.compactions, movingChanges)
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
		_, err := st.Limit(KindFixed, []byte(fmt.Sprint("short", i)), p, 1e9)
		require.NoError(t, err)
		if i%4 == 0 { // these outlive the sweep
			k := fmt.Sprint("long", i)
			held[k] = true
			_, err = st.Limit(KindFixed, []byte(k), Params{Limit: 100, Window: 1e12, Cost: 1}, 1e9)
			require.NoError(t, err)
		}
	}
	before := len(s.data)
	for i := 0; i < 100 && (st.Len() > len(held) || s.compacting || s.garbage > 0); i++ {
		e.Sweep(1e11)
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	require.False(t, s.compacting)
	require.Zero(t, s.garbage)
	require.Less(t, len(s.data), before/2, "the expired keys' space should be given back")
	checkRegion(t, s, held)
}

// TestTimeNeverRunsBackwardsInAShard: a decision whose clock reading
// arrives after a later one was used (two threads, each reading the clock
// before taking the shard lock) is taken at the later time, so a window
// boundary is crossed once: RL.FIXED's count of the new window is not
// overwritten by a stale reading's restart of the old one.
func TestTimeNeverRunsBackwardsInAShard(t *testing.T) {
	for _, kind := range []Kind{KindFixed, KindSlide, KindLog, KindBucket} {
		st := New(1).Store()
		p := Params{Limit: 1, Window: 1e9, Cost: 1, Rate: 1}
		r, err := st.Limit(kind, []byte("k"), p, 2e9) // the first of the new window
		require.NoError(t, err)
		require.False(t, r.Limited, "%v", kind)
		for _, now := range []int64{2e9 - 1, 2e9 - 1e6, 2e9 + 1} { // stale readings, then a fresh one
			r, err = st.Limit(kind, []byte("k"), p, now)
			require.NoError(t, err)
			require.True(t, r.Limited, "%v at %d: one unit per second, already spent", kind, now)
		}
	}
	st := New(1).Store()
	g, err := NewGCRA(0, 1, 1) // one per second, no burst
	require.NoError(t, err)
	res, err := st.Throttle([]byte("g"), g, 1, 2e9)
	require.NoError(t, err)
	require.False(t, res.Limited)
	res, err = st.Throttle([]byte("g"), g, 1, 1e9+1) // stale
	require.NoError(t, err)
	require.True(t, res.Limited)
}

// TestExpiryIsADecisionInTime: a key dropped as expired at t, by the sweep
// or by a read, is not found held by a later decision whose clock reading
// (taken before the lock) is earlier than t.
func TestExpiryIsADecisionInTime(t *testing.T) {
	p := Params{Limit: 1, Window: 1e9, Cost: 1}
	for _, drop := range []string{"sweep", "read"} {
		e := New(1)
		st := e.Store()
		r, err := st.Limit(KindFixed, []byte("k"), p, 1.5e9) // deadline: the window's end, 2 s
		require.NoError(t, err)
		require.False(t, r.Limited)
		if drop == "sweep" {
			e.Sweep(2e9)
		} else {
			require.Equal(t, KindNone, st.Type([]byte("k"), 2e9))
		}
		r, err = st.Limit(KindFixed, []byte("k"), p, 1.9e9) // a stale reading
		require.NoError(t, err)
		// Decided at 1.9 s it would be a second unit in [1 s, 2 s), the
		// window that already admitted its one; at 2 s it is the first of
		// [2 s, 3 s), which resets 1 s later.
		require.False(t, r.Limited)
		require.Equal(t, int64(1e9), r.ResetAfter, "%s: decided at 2 s, in a fresh window", drop)
	}
}

// TestFillerSpansAnyGap: a compaction gap of any size a record can leave,
// including where the slack count's varint changes width, becomes one dead
// record that parses to exactly its end.
func TestFillerSpansAnyGap(t *testing.T) {
	sizes := []int{minRecord, minRecord + 1, 139, 140, 141, 142, 16395, 16396, 16397, 16398, 1 << 21}
	for n := minRecord; n < 300; n++ {
		sizes = append(sizes, n)
	}
	for _, n := range sizes {
		b := make([]byte, n+1)
		b[n] = 0xAB // the byte after the gap stays untouched
		writeFiller(b[:n])
		p := parseRecord(b, 0)
		require.Equal(t, n, p.end, "gap of %d", n)
		require.NotZero(t, p.hdr&hdrDead)
		require.Equal(t, byte(0xAB), b[n])
	}
	// The smallest records of every kind are at least minRecord bytes.
	for k := KindThrottle; k <= KindLog; k++ {
		rec := withSlack(appendRecord(nil, byte(k), nil, entry{kind: k}, nil), 0)
		require.GreaterOrEqual(t, len(rec), minRecord, "%v", k)
	}
}

// TestExpiredKeyWrittenAgainKeepsItsPlace: a key that expired and is
// written again takes its old record's place (lookupKeepLocked) instead of
// leaving it as garbage and appending a new one, for every writer that
// may find it so: CL.THROTTLE, the RL.* limiters, RL.ALL (two keys of
// one shard, the second found again after the first is stored). A call
// that does not store drops the expired record as a lookup always did, and a feed reports the key written, not
// deleted, when it was stored over.
func TestExpiredKeyWrittenAgainKeepsItsPlace(t *testing.T) {
	g, err := NewGCRA(9, 10, 1) // a bucket of 10, one unit every 100 ms
	require.NoError(t, err)
	bucket := Params{Limit: 10, Rate: 10, Window: 1e9, Cost: 1} // full again 100 ms after a call
	type write func(st Store, key []byte, cost, now int64) error
	writers := []struct {
		name string
		do   write
	}{
		{"CL.THROTTLE", func(st Store, key []byte, cost, now int64) error {
			_, err := st.Throttle(key, g, cost, now)
			return err
		}},
		{"RL.BUCKET", func(st Store, key []byte, cost, now int64) error {
			p := bucket
			p.Cost = cost
			_, err := st.Limit(KindBucket, key, p, now)
			return err
		}},
		{"RL.LOG", func(st Store, key []byte, cost, now int64) error {
			_, err := st.Limit(KindLog, key, Params{Limit: 10, Window: 1e8, Cost: cost}, now)
			return err
		}},
		{"RL.ALL", func(st Store, key []byte, cost, now int64) error {
			var b Batch
			p := bucket
			p.Cost = cost
			b.Add(Limit{Key: key, Kind: KindBucket, Params: p})
			b.Add(Limit{Key: append([]byte("other:"), key...), Kind: KindFixed, Params: Params{Limit: 1 << 40, Window: 1e8, Cost: cost}})
			_, _, err := st.Decide(&b, now)
			return err
		}},
	}
	for _, w := range writers {
		t.Run(w.name, func(t *testing.T) {
			e := New(1)
			feed := e.NewFeed()
			st, s := e.Store(), e.shards[0]
			key := []byte("k")
			now := int64(1e12)
			require.NoError(t, w.do(st, key, 1, now))
			size := len(s.data)
			for range 1000 {
				feed.Next(func(Record) {})
				now += 1e9 // every record of the call expired
				require.NoError(t, w.do(st, key, 1, now))
				var got []Record
				feed.Next(func(r Record) { got = append(got, r) })
				require.NotEmpty(t, got)
				for _, r := range got {
					require.NotEqual(t, KindNone, r.Kind, "%s reported deleted", r.Key)
				}
			}
			require.Equal(t, size, len(s.data), "the records grew the region")
			require.Zero(t, s.garbage)
			held := map[string]bool{"k": true}
			if w.name == "RL.ALL" {
				held["other:k"] = true
			}
			checkRegion(t, s, held)

			// Not stored over: a call refused (a cost above every
			// capacity) finds the key expired and drops it.
			now += 1e9
			require.NoError(t, w.do(st, key, 100, now))
			require.Zero(t, st.Len())
			checkRegion(t, s, map[string]bool{})
		})
	}
}

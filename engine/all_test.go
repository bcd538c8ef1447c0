package engine

import (
	"fmt"
	"math/rand/v2"
	"os"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
)

// randomLimit is a limit of a random algorithm on one of keys keys of
// its kind (keys are named by kind, so no call meets WRONGTYPE unless
// wrong is set), with small parameters so that limits are hit often.
func randomLimit(r *rand.Rand, keys int) Limit {
	kinds := []Kind{KindFixed, KindLog, KindSlide, KindBucket, KindThrottle}
	k := kinds[r.IntN(len(kinds))]
	l := Limit{Key: []byte(k.Name() + ":" + strconv.Itoa(r.IntN(keys))), Kind: k}
	window := []int64{1e9, 2e9, 10e9, 60e9, 1500e6}[r.IntN(5)]
	cost := []int64{0, 1, 1, 1, 2, 3, 7}[r.IntN(7)]
	switch k {
	case KindThrottle:
		g, err := NewGCRA(int64(r.IntN(5)), 1+int64(r.IntN(10)), 1+int64(r.IntN(60)))
		if err != nil {
			panic(err)
		}
		l.GCRA, l.Params.Cost = g, cost
	case KindBucket:
		l.Params = Params{Limit: 1 + int64(r.IntN(8)), Rate: 1 + int64(r.IntN(5)), Window: window, Cost: cost}
	default:
		l.Params = Params{Limit: 1 + int64(r.IntN(8)), Window: window, Cost: cost}
	}
	return l
}

// single is what limit l's own command answers on st at now, run for
// real, with the waits as RL.* replies round them. A GCRA limit of cost 0
// is decided without storing (CL.THROTTLE's own peek stores the TAT).
func single(t *testing.T, st Store, l Limit, now int64) Result {
	t.Helper()
	if l.Kind == KindThrottle {
		tat, found, err := st.GetThrottle(l.Key, now)
		require.NoError(t, err)
		d, err := l.GCRA.Decide(tat, found, now, l.Params.Cost)
		require.NoError(t, err)
		if l.Params.Cost > 0 {
			tr, err := st.Throttle(l.Key, l.GCRA, l.Params.Cost, now)
			require.NoError(t, err)
			require.Equal(t, d.Result, tr, "CL.THROTTLE's own reply")
		}
		return d.rlResult()
	}
	r, err := st.Limit(l.Kind, l.Key, l.Params, now)
	require.NoError(t, err)
	return r
}

// ms is a result as a reply carries it: the waits in ms.
func ms(r Result) [5]int64 {
	retry, reset := r.Millis()
	return [5]int64{int64(b2i(r.Limited)), r.Limit, r.Remaining, retry, reset}
}

// TestAllDifferential: random calls of 1-5 limits of every algorithm with
// random costs (guards of cost 0 included), clock moves and deletes, on
// one engine through Batch and on another through each limit's own
// command. The reference decides every limit on its own, without storing
// (a read-only store); if all admit it runs them, else it changes
// nothing and the expected replies are the rejections and, for the
// others, cost-0 peeks. Replies and the whole keyspace must agree after
// every step.
func TestAllDifferential(t *testing.T) {
	seed := rand.Uint64()
	if s, err := strconv.ParseUint(os.Getenv("RLSERVER_SEED"), 10, 64); err == nil {
		seed = s
	}
	t.Logf("seed %d (set RLSERVER_SEED to replay)", seed)
	r := rand.New(rand.NewPCG(seed, 26))
	all, ref := newEngine(4, defaultOptions), newEngine(4, defaultOptions)
	now := int64(1_700_000_000_000_000_000)
	var b Batch
	admitted, rejected := 0, 0
	for step := range 20_000 {
		switch r.IntN(20) {
		case 0:
			now += r.Int64N(3e9)
			continue
		case 1:
			k := []byte(randomLimit(r, 6).Key)
			require.Equal(t, ref.Store().Delete(k, now), all.Store().Delete(k, now))
			continue
		}
		b.Reset()
		seen := map[string]bool{}
		for range 1 + r.IntN(5) {
			l := randomLimit(r, 6)
			if !seen[string(l.Key)] {
				seen[string(l.Key)] = true
				b.Add(l)
			}
		}
		limited, at, err := all.Store().Decide(&b, now)
		require.NoError(t, err, "seed %d step %d: limit %d", seed, step, at)

		// The reference: each limit's own command, for real; undone if
		// any rejected (the records of the call's keys put back).
		saved := map[string]Record{}
		ref.Dump(now, func(rec Record) {
			if seen[rec.Key] {
				saved[rec.Key] = rec
			}
		})
		want := make([]Result, len(b.Limits))
		anyLimited := false
		for i, l := range b.Limits {
			want[i] = single(t, ref.Store(), l, now)
			anyLimited = anyLimited || want[i].Limited
		}
		require.Equal(t, anyLimited, limited, "seed %d step %d", seed, step)
		if anyLimited {
			rejected++
			for k := range seen {
				if rec, ok := saved[k]; ok {
					ref.Restore(rec, now)
				} else {
					ref.Store().Delete([]byte(k), now)
				}
			}
			for i, l := range b.Limits {
				if !want[i].Limited {
					peek := l
					peek.Params.Cost = 0
					want[i] = single(t, ref.Store(), peek, now)
				}
			}
		} else {
			admitted++
		}
		for i := range b.Limits {
			require.Equal(t, ms(want[i]), ms(b.Results[i]), "seed %d step %d limit %d (%s %s cost %d) of %d, limited %v",
				seed, step, i, b.Limits[i].Kind.Name(), b.Limits[i].Key, b.Limits[i].Params.Cost, len(b.Limits), anyLimited)
		}
		require.Equal(t, dumpAll(ref, now), dumpAll(all, now), "seed %d step %d: the keyspaces", seed, step)
	}
	require.Equal(t, dumpAll(ref, now), dumpAll(all, now))
	t.Logf("%d calls admitted, %d limited", admitted, rejected)
	require.Greater(t, admitted, 1000)
	require.Greater(t, rejected, 1000)
}

// dumpAll is every live record of e at now, by key.
func dumpAll(e *Engine, now int64) map[string]Record {
	m := map[string]Record{}
	e.Dump(now, func(r Record) { m[r.Key] = r })
	return m
}

// TestAllErrors: the same key twice, a key of another kind, and a GCRA
// whose expiry cannot be set change nothing, and name the limit.
func TestAllErrors(t *testing.T) {
	e := New(4)
	now := int64(1_700_000_000_000_000_000)
	st := e.Store()
	_, err := st.Limit(KindFixed, []byte("f"), Params{Limit: 5, Window: 1e9, Cost: 1}, now)
	require.NoError(t, err)
	before := dumpAll(e, now)
	fixed := func(k string) Limit {
		return Limit{Key: []byte(k), Kind: KindFixed, Params: Params{Limit: 5, Window: 1e9, Cost: 1}}
	}
	for _, tc := range []struct {
		limits []Limit
		at     int
		err    error
	}{
		{[]Limit{fixed("a"), fixed("b"), fixed("a")}, 2, ErrSameKey},
		{[]Limit{fixed("a"), {Key: []byte("f"), Kind: KindLog, Params: Params{Limit: 5, Window: 1e9, Cost: 1}}}, 1, ErrWrongType},
	} {
		var b Batch
		for _, l := range tc.limits {
			b.Add(l)
		}
		_, at, err := st.Decide(&b, now)
		require.ErrorIs(t, err, tc.err)
		require.Equal(t, tc.at, at)
		require.Equal(t, before, dumpAll(e, now), "nothing changed")
	}
}

// TestAllConcurrentSharedLimit: 1,000 concurrent callers, each with its
// own limit of 10 a minute and one shared limit of 100 a minute, call
// three times each: exactly 100 calls are admitted, the shared key has
// exactly those charged, and each caller's key exactly its own.
func TestAllConcurrentSharedLimit(t *testing.T) {
	e := New(8)
	now := int64(1_700_000_000_000_000_000)
	var admitted atomic.Int64
	perCaller := make([]int64, 1000)
	var wg sync.WaitGroup
	for c := range 1000 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			var b Batch
			own := []byte("user:" + strconv.Itoa(c))
			for range 3 {
				b.Reset()
				b.Add(Limit{Key: own, Kind: KindFixed, Params: Params{Limit: 10, Window: 60e9, Cost: 1}})
				b.Add(Limit{Key: []byte("tenant"), Kind: KindFixed, Params: Params{Limit: 100, Window: 60e9, Cost: 1}})
				limited, _, err := e.Store().Decide(&b, now)
				if err != nil {
					panic(err)
				}
				if !limited {
					admitted.Add(1)
					perCaller[c]++
				}
			}
		}()
	}
	wg.Wait()
	require.Equal(t, int64(100), admitted.Load())
	peek := func(k string, limit int64) int64 {
		r, err := e.Store().Limit(KindFixed, []byte(k), Params{Limit: limit, Window: 60e9}, now)
		require.NoError(t, err)
		return limit - r.Remaining
	}
	require.Equal(t, int64(100), peek("tenant", 100), "the shared counter holds exactly what was admitted")
	for c, n := range perCaller {
		require.Equal(t, n, peek("user:"+strconv.Itoa(c), 10), "caller %d", c)
	}
}

// TestAllAllocatesNothing: a three-limit call allocates nothing once its
// Batch has grown.
func TestAllAllocatesNothing(t *testing.T) {
	e := New(8)
	now := int64(1_700_000_000_000_000_000)
	var b Batch
	keys := [][]byte{[]byte("{t}:u:s"), []byte("{t}:u:d"), []byte("{t}")}
	call := func() {
		b.Reset()
		b.Add(Limit{Key: keys[0], Kind: KindBucket, Params: Params{Limit: 10, Rate: 10, Window: 1e9, Cost: 1}})
		b.Add(Limit{Key: keys[1], Kind: KindLog, Params: Params{Limit: 1000, Window: 86400e9, Cost: 1}})
		b.Add(Limit{Key: keys[2], Kind: KindSlide, Params: Params{Limit: 50000, Window: 60e9, Cost: 1}})
		if _, _, err := e.Store().Decide(&b, now); err != nil {
			panic(err)
		}
		now += 1e6
	}
	call()
	require.Zero(t, testing.AllocsPerRun(200, call), fmt.Sprintf("allocations per RL.ALL of three limits"))
}

// TestSweepCountsAsItDrops: the active sweep tells its count of expired
// keys in the step that drops them, so a counter kept with it (INFO's
// expired_keys) always equals the keys gone, mid-pass included. It was
// told once per pass, after every shard: on a loaded machine DBSIZE
// reached 0 while expired_keys still said a fraction.
func TestSweepCountsAsItDrops(t *testing.T) {
	e := New(8)
	now := int64(1_700_000_000_000_000_000)
	const keys = 50_000
	for i := range keys {
		_, err := e.Store().Limit(KindFixed, []byte("k"+strconv.Itoa(i)), Params{Limit: 5, Window: 1e9, Cost: 1}, now)
		require.NoError(t, err)
	}
	held := func() int { // every shard's count, read from the sweeping goroutine
		n := 0
		for _, s := range e.shards {
			n += s.count
		}
		return n
	}
	counted, calls := 0, 0
	st := e.SweepCounting(now+2e9, func(n int) {
		counted += n
		calls++
		require.Equal(t, keys-held(), counted, "keys dropped so far and keys counted")
	})
	require.Equal(t, keys, counted)
	require.Equal(t, keys, st.Expired)
	require.Greater(t, calls, 8, "counted step by step, not once per pass")
}

// TestFeedReadsAConsistentCut: a write that spans shards (EXEC's Atomic,
// an RL.ALL over two shards) is never half in what a feed reads (a
// snapshot, the replication stream). The write is started between the
// shards a feed reads, on two keys of which the feed has read one shard
// and not the other; the feed must report both keys or neither. Without
// the engine's cut lock the feed reported one of the two. The write
// comes between the feed's first two shards, or, for a batch whose first
// key is in shard 1, between its second and third.
func TestFeedReadsAConsistentCut(t *testing.T) {
	now := int64(1_700_000_000_000_000_000)
	for _, tc := range []struct {
		how, feed string
		lo        uint64 // the first key's shard; the second's is 3
	}{{"atomic", "set", 0}, {"batch", "set", 0}, {"atomic", "encoded", 0}, {"batch", "encoded", 0}, {"batch", "set", 1}, {"batch", "encoded", 1}} {
		how := tc.how
		t.Run(fmt.Sprintf("%s/%s/shards-%d-3", tc.how, tc.feed, tc.lo), func(t *testing.T) {
			e := New(4)
			var f *Feed
			read := func() map[string]bool {
				got := map[string]bool{}
				if tc.feed == "set" {
					f.Next(func(r Record) { got[r.Key] = true })
					return got
				}
				lines, _ := appended(f)
				for _, l := range lines {
					k, _, _ := strings.Cut(l, " ")
					got[k] = true
				}
				return got
			}
			if tc.feed == "set" {
				f = e.NewFeed()
			} else {
				f = e.NewEncodedFeed(encodeForTest, 1<<20)
			}
			// Two keys: one in shard lo, read first, one in shard 3, read last.
			var k0, k3 []byte
			for i := 0; k0 == nil || k3 == nil; i++ {
				k := []byte("k" + strconv.Itoa(i))
				_, h := e.shardOf(k)
				switch (h >> 32) & e.mask {
				case tc.lo:
					k0 = k
				case 3:
					k3 = k
				}
			}
			write := func() {
				p := Params{Limit: 10, Window: 60e9, Cost: 1}
				if how == "atomic" {
					e.Atomic(func(st Store) {
						_, err := st.Limit(KindFixed, k0, p, now)
						require.NoError(t, err)
						_, err = st.Limit(KindFixed, k3, p, now)
						require.NoError(t, err)
					})
					return
				}
				var b Batch
				b.Add(Limit{Key: k0, Kind: KindFixed, Params: p})
				b.Add(Limit{Key: k3, Kind: KindFixed, Params: p})
				_, _, err := e.Store().Decide(&b, now)
				require.NoError(t, err)
			}
			done := make(chan struct{})
			calls := uint64(0)
			betweenShards = func() { // before shard calls+1 is read
				if calls++; calls != tc.lo+1 {
					return
				}
				go func() { write(); close(done) }()
				select {
				case <-done: // the write ran between the shards: it must not have
				case <-time.After(200 * time.Millisecond): // it waits for the cut: a loaded machine can only make this pass
				}
			}
			t.Cleanup(func() { betweenShards = nil })
			got := read()
			<-done
			require.Equal(t, got[string(k0)], got[string(k3)], "the feed read %v of the pair %s, %s", got, k0, k3)
			got = read()
			require.True(t, got[string(k0)] && got[string(k3)], "the next read has both: %v", got)
		})
	}
}

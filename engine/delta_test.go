package engine

import (
	"encoding/binary"
	"fmt"
	"math"
	"math/rand/v2"
	"testing"

	"github.com/stretchr/testify/require"
)

// encodeBinary is an Encoder for tests that keeps a feed's changes as
// they are, deltas included: kind | uvarint key length | key | uvarint
// state length | state.
func encodeBinary(dst, key []byte, kind Kind, state []byte) []byte {
	dst = append(dst, byte(kind))
	dst = binary.AppendUvarint(dst, uint64(len(key)))
	dst = append(dst, key...)
	dst = binary.AppendUvarint(dst, uint64(len(state)))
	return append(dst, state...)
}

// applyBinary applies what encodeBinary wrote to e as a load would:
// deletions and whole records restored (an RL.LOG's kept whatever its
// deadline), deltas by RestoreDelta. It returns the deltas applied.
func applyBinary(t testing.TB, e *Engine, b []byte) (deltas int) {
	t.Helper()
	for len(b) > 0 {
		var key, state []byte
		var kind Kind
		key, kind, state, b = nextBinary(b)
		switch {
		case kind&KindDelta != 0:
			require.Equal(t, KindLog|KindDelta, kind)
			_, _, err := e.RestoreDelta(key, state)
			require.NoError(t, err, "delta of %q", key)
			deltas++
		default:
			r, err := DecodeState(string(key), kind, state)
			require.NoError(t, err)
			e.Restore(r, math.MinInt64)
		}
	}
	return deltas
}

// TestLogDeltasRebuildTheRecords: a feed that writes RL.LOG deltas
// (WriteDeltas), applied in order to another engine as a load applies a
// store, leaves it holding what the engine holds, after every read. The
// writes cover what may make a delta wrong: decisions with times that
// arrive late (clamped to the shard's latest), windows that change from
// call to call, reservations and their cancellation, deletions, a
// flush, states stored from outside (Apply), ResetTime back in time,
// and reads that dump some shards whole.
func TestLogDeltasRebuildTheRecords(t *testing.T) {
	for seed := range uint64(6) {
		t.Run(fmt.Sprint(seed), func(t *testing.T) {
			r := rand.New(rand.NewPCG(seed, 11))
			e := New(4)
			st := e.Store()
			f := e.NewEncodedFeed(encodeBinary, 0)
			f.WriteDeltas()
			got := New(4)
			now := int64(1e15)
			deltas, saved := 0, 0
			for i := range 6000 {
				key := []byte(fmt.Sprintf("log%d", r.IntN(40)))
				at := now - int64(r.IntN(3))*1e6 // some arrive after a later reading
				var err error
				switch x := r.IntN(100); {
				case x < 70:
					w := []int64{60e9, 600e9, 5e9}[r.IntN(3)]
					_, err = st.Limit(KindLog, key, Params{Limit: 1000, Window: w, Cost: int64(1 + r.IntN(3))}, at)
				case x < 78:
					var res Result
					res, err = st.Reserve(KindLog, key, Params{Limit: 60, Window: 60e9, Cost: 1}, 30e9, at)
					if err == nil && res.Token > 0 && r.IntN(2) == 0 {
						_, err = st.Cancel(key, res.Token, at)
					}
				case x < 81:
					st.Delete(key, at)
				case x == 84 && r.IntN(4) == 0:
					st.Flush()
				case x < 90:
					// A state from outside: a log of older runs.
					var log []int64
					for j := range int64(12) {
						log = append(log, now-60e9+j*3e9+int64(r.IntN(1e6)))
					}
					e.Apply(Record{Key: string(key), Kind: KindLog, Deadline: now + 60e9, A: 12, Log: log}, at)
				case x == 90:
					// Another timeline, 5 s behind: decisions before the
					// last read's time. The keys that expired on the old
					// one are gone first, as the sweep would have had
					// them: a key a dump wrote as a deletion once it
					// expired must not come back to life in the source
					// alone (on a replica that follows a primary behind
					// it, the primary's stream decides its keys).
					for k := range 40 {
						st.Type([]byte(fmt.Sprintf("log%d", k)), now)
					}
					now -= 5e9
					e.ResetTime(now)
				case x < 95:
					_, err = st.Limit(KindFixed, key, Params{Limit: 10, Window: 1e9, Cost: 1}, at)
				}
				if err != nil {
					require.ErrorIs(t, err, ErrWrongType)
				}
				now += int64(r.IntN(400e6))
				if r.IntN(50) > 0 && i < 5999 {
					continue
				}
				var b []byte
				var flushed bool
				if r.IntN(5) == 0 {
					from := r.IntN(e.Shards())
					b, flushed = f.AppendDump(nil, now, from, from+1+r.IntN(e.Shards()-from))
				} else {
					b, flushed = f.Append(nil)
				}
				if flushed {
					got.Store().Flush()
				}
				deltas += applyBinary(t, got, b)
				saved += f.Saved()
				require.Equal(t, dumpAll(e, now), dumpAll(got, now), "after op %d", i)
			}
			require.Greater(t, deltas, 25, "deltas written")
			require.Greater(t, saved, 0, "bytes the deltas saved")
		})
	}
}

// TestDeltaOnAMissingOrWrongBase: a delta whose key holds nothing (its
// base was in a segment a fold dropped) leaves it without a record, one
// over another kind drops that record, and one that does not fit its
// base is refused with ErrState and changes nothing.
func TestDeltaOnAMissingOrWrongBase(t *testing.T) {
	now := int64(1e15)
	key := []byte("k")
	p := Params{Limit: 1000, Window: 600e9, Cost: 1}
	e, base, delta := aDelta(t, key, p, now)

	missing := New(1)
	_, held, err := missing.RestoreDelta(key, delta)
	require.NoError(t, err)
	require.False(t, held)
	require.Empty(t, dumpAll(missing, now))

	other := New(1)
	_, err = other.Store().Limit(KindFixed, key, p, now)
	require.NoError(t, err)
	_, held, err = other.RestoreDelta(key, delta)
	require.NoError(t, err)
	require.False(t, held)
	require.Empty(t, dumpAll(other, now))

	// A base that is not the one the delta was taken against: a log
	// whose run before the delta's time differs.
	wrong := New(1)
	for i := range 20 {
		_, err := wrong.Store().Limit(KindLog, key, Params{Limit: 1000, Window: 600e9, Cost: 2}, now+int64(i)*1e9)
		require.NoError(t, err)
	}
	before := dumpAll(wrong, now)
	_, _, err = wrong.RestoreDelta(key, delta)
	require.ErrorIs(t, err, ErrState)
	require.Equal(t, before, dumpAll(wrong, now))

	// The right base takes it.
	right := New(1)
	applyBinary(t, right, base)
	_, held, err = right.RestoreDelta(key, delta)
	require.NoError(t, err)
	require.True(t, held)
	require.Equal(t, dumpAll(e, now+30e9), dumpAll(right, now+30e9))
}

// aDelta returns an engine holding key, an RL.LOG of 21 admissions
// under p (20 a second apart from now, then one at now+30 s), and a delta
// feed's two reads of it: the first (base: the key whole) and the
// second (delta: the state of its one change, a delta).
func aDelta(t testing.TB, key []byte, p Params, now int64) (e *Engine, base, delta []byte) {
	e = New(1)
	f := e.NewEncodedFeed(encodeBinary, 0)
	f.WriteDeltas()
	for i := range 20 {
		_, err := e.Store().Limit(KindLog, key, p, now+int64(i)*1e9)
		require.NoError(t, err)
	}
	base, _ = f.Append(nil)
	_, err := e.Store().Limit(KindLog, key, p, now+30e9)
	require.NoError(t, err)
	b, _ := f.Append(nil)
	require.Equal(t, KindLog|KindDelta, Kind(b[0]), "a delta")
	_, _, delta, _ = nextBinary(b)
	return e, base, delta
}

// nextBinary returns the first change encodeBinary wrote in b, and what
// follows it.
func nextBinary(b []byte) (key []byte, kind Kind, state, rest []byte) {
	kind = Kind(b[0])
	kl, n := binary.Uvarint(b[1:])
	key = b[1+n : 1+n+int(kl)]
	b = b[1+n+int(kl):]
	sl, n := binary.Uvarint(b)
	return key, kind, b[n : n+int(sl)], b[n+int(sl):]
}

// FuzzRestoreDelta: no delta crashes its apply, over a base or none.
func FuzzRestoreDelta(f *testing.F) {
	now := int64(1e15)
	_, base, delta := aDelta(f, []byte("k"), Params{Limit: 1000, Window: 600e9, Cost: 1}, now)
	f.Add(delta)
	f.Add(delta[:len(delta)-1])
	f.Add([]byte{1, 2, 3, 4, 5, 6, 7, 8, 9})
	f.Fuzz(func(t *testing.T, delta []byte) {
		for _, withBase := range []bool{false, true} {
			g := New(1)
			if withBase {
				applyBinary(t, g, base)
			}
			if _, _, err := g.RestoreDelta([]byte("k"), delta); err != nil {
				require.ErrorIs(t, err, ErrState)
			}
			g.Dump(now, func(Record) {})
		}
	})
}

// TestRunsEndAt holds runsEndAt, which counts items from the end, to a
// walk of the runs from the front: for logs of one to a hundred runs
// (counts and durations of one byte and of several), every run boundary
// as from and every end from it to the end of the runs.
func TestRunsEndAt(t *testing.T) {
	walk := func(runs []byte, from, end int) bool { // the reference
		i := from
		for i < end {
			_, _, i = logRunAt(runs, i, 0)
		}
		return i == end
	}
	r := rand.New(rand.NewPCG(7, 30))
	checked := 0
	for range 40 {
		e := New(1)
		key := []byte("k")
		p := Params{Limit: 1 << 40, Window: 1 << 50, Cost: 1}
		now := int64(1e15)
		for range 1 + r.IntN(100) {
			p.Cost = 1 + r.Int64N(3)
			if r.IntN(8) == 0 {
				p.Cost = 1 + r.Int64N(1<<20) // a count of several bytes
			}
			now += 1 + r.Int64N(1e12) // a duration of one byte or up to six
			_, err := e.Store().Limit(KindLog, key, p, now)
			require.NoError(t, err)
		}
		s, h := e.shardOf(key)
		off, _, ok := s.findLocked(h, key)
		require.True(t, ok)
		runs := parseHead(s.data, off).runs
		require.NotEmpty(t, runs)
		for from := 0; from < len(runs); {
			for end := from; end <= len(runs); end++ {
				require.Equal(t, walk(runs, from, end), runsEndAt(runs, from, end), "runs %x from %d end %d", runs, from, end)
				checked++
			}
			_, _, from = logRunAt(runs, from, 0)
		}
		require.False(t, runsEndAt(runs, 1, 0))
		require.False(t, runsEndAt(runs, 0, len(runs)+1))
	}
	t.Logf("%d ends checked", checked)
}

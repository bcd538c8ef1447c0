package engine

import (
	"bytes"
	"encoding/binary"
	"fmt"
	"math"
	"math/rand/v2"
	"testing"

	"github.com/stretchr/testify/require"
)

// randWord draws int64s that stress the varint and wrapping encodings:
// small, near the edges, and anything.
func randWord(r *rand.Rand) int64 {
	switch r.IntN(6) {
	case 0:
		return int64(r.IntN(300))
	case 1:
		return math.MaxInt64 - int64(r.IntN(3))
	case 2:
		return math.MinInt64 + int64(r.IntN(3))
	case 3:
		return -int64(r.IntN(300))
	case 4:
		return 1_700_000_000_000_000_000 + r.Int64N(1e12)
	}
	return int64(r.Uint64())
}

// TestRecordRoundTrip encodes random states of every kind (any words, not
// only those the algorithms produce) and requires them back exactly, with
// the record self-delimiting and well-formed.
func TestRecordRoundTrip(t *testing.T) {
	seed := rand.Uint64()
	t.Logf("seed %d", seed)
	r := rand.New(rand.NewPCG(seed, 1))
	for n := 0; n < 20000; n++ {
		kind := Kind(1 + r.IntN(6))
		key := make([]byte, r.IntN(300))
		for i := range key {
			key[i] = byte(r.Uint32())
		}
		// Deadlines are Unix ns (a record is never stored past its
		// deadline, so never with a negative one): bit 63 is the
		// section's flag (reserve.go).
		e := entry{kind: kind, deadline: randWord(r) & math.MaxInt64, w: words{a: randWord(r)}}
		var sec resv // a bucket's or fixed window's section, if any
		var words []int64
		switch kind {
		case KindThrottle:
			// farMs is carried only with the far deadline (throttle.go).
			if r.IntN(4) == 0 {
				e.deadline = farDeadline
			}
			if e.deadline == farDeadline {
				e.w.b = randWord(r)
			}
		case KindFixed, KindBucket:
			e.w.b = randWord(r)
			if kind == KindBucket {
				e.w.c = randWord(r)
			}
			if r.IntN(2) == 0 { // reservations: any times and costs
				sec = resv{last: randWord(r), unit: randWord(r) & math.MaxInt64, next: randWord(r) & math.MaxInt64}
				for k := r.IntN(4); k > 0; k-- {
					sec.pend = append(sec.pend, pend{act: randWord(r), cost: randWord(r) & math.MaxInt64})
				}
			}
		case KindSlide:
			e.w.b, e.w.c = randWord(r), randWord(r)
		case KindLog:
			e.w.c = randWord(r) // the last ticket
			// A well-formed log: single units at t >= 0, runs of n >= 2
			// (as logAppend builds them), times not decreasing or not.
			for k := r.IntN(6); k > 0; k-- {
				t := randWord(r)
				if t >= 0 && r.IntN(2) == 0 {
					words = append(words, t)
				} else {
					words = append(words, -(t&math.MaxInt64)-1, 2+r.Int64N(1<<40))
				}
			}
		case KindLease:
			// Any tokens, ends and costs, as triples.
			for k := r.IntN(6); k > 0; k-- {
				words = append(words, randWord(r), randWord(r), randWord(r)&math.MaxInt64)
			}
		}
		hdr := byte(kind)
		if r.IntN(2) == 0 {
			hdr |= feedBits[r.IntN(maxFeeds)]
		}
		pad := r.IntN(3)
		var runs []byte
		if a := algorithmOf(kind); a.hasRuns {
			e.w, runs = a.fromLog(nil, uint64(e.deadline), e.w, words)
		} else if sec.last != 0 {
			runs = appendSection(nil, uint64(e.deadline), sec)
		}
		b := withSlack(appendRecord(make([]byte, pad), hdr, key, e, runs), r.IntN(200))
		p := parseRecord(b, pad)
		require.Equal(t, len(b), p.end, "seed %d n %d", seed, n)
		require.Equal(t, hdr, p.hdr)
		require.Equal(t, key, p.key)
		require.Equal(t, e, p.e, "seed %d n %d kind %d", seed, n, kind)
		if a := algorithmOf(kind); a.hasRuns {
			got, ok := a.toLog(nil, uint64(e.deadline), p.e.w, p.runs)
			require.True(t, ok, "seed %d n %d", seed, n)
			if len(words) == 0 {
				require.Empty(t, got)
			} else {
				require.Equal(t, words, got, "seed %d n %d", seed, n)
			}
		} else if sec.last != 0 {
			got := decodeSection(p.runs, uint64(p.e.deadline), nil)
			if len(sec.pend) == 0 {
				sec.pend = got.pend[:0]
			}
			require.Equal(t, sec, got, "seed %d n %d", seed, n)
			require.Equal(t, sec, sectionOfLog(recordOf(p).Log, nil), "Record.Log carries the section")
		} else {
			require.Nil(t, p.runs, "no section")
		}
	}
}

// TestDurRoundTrip: every time difference comes back exactly from
// appendDur, self-delimiting and a varint's shape (varintStart walks it
// backwards), and round ones are short.
func TestDurRoundTrip(t *testing.T) {
	r := rand.New(rand.NewPCG(5, 30))
	check := func(v int64) {
		b := appendDur([]byte{0x85, 0x01}, v) // after a varint, as in a log's runs
		got, end := durAt(b, 2)
		require.Equal(t, v, got, "%d", v)
		require.Equal(t, len(b), end, "%d", v)
		require.Equal(t, 2, varintStart(b, end), "%d", v)
	}
	for _, v := range []int64{0, 1, -1, 31, 32, -32, 1e3, 1e6, 1e9, -1e9, 86400e9, math.MaxInt64, math.MinInt64, math.MinInt64 + 1e9, math.MaxInt64 / 1e9 * 1e9, math.MinInt64 / 1e9 * 1e9} {
		check(v)
	}
	for range 100_000 {
		v := randWord(r)
		check(v)
		check(v / 1000 * 1000)
		check(v / 1e6 * 1e6)
		check(v / 1e9 * 1e9)
	}
	for _, c := range []struct {
		v    int64
		size int
	}{
		{0, 1}, {1e9, 1}, {60e9, 2}, {3600e9, 3}, {86400e9, 3}, {1500e6, 2}, {7, 1},
		{123456789, 5}, // 4 as a plain varint: two bits go to the unit
	} {
		require.Len(t, appendDur(nil, c.v), c.size, "%d", c.v)
	}
}

// TestRecordsAreCompact pins the sizes the memory target rests on: a
// 16-byte key's record for each kind, with states the algorithms write.
func TestRecordsAreCompact(t *testing.T) {
	now := int64(1_700_000_000_123_456_789)
	key := []byte("rlg:000000000042")
	for _, c := range []struct {
		kind  Kind
		p     Params
		limit int // bytes
	}{
		// A one-day window takes 3 bytes (appendDur), not 7.
		{KindFixed, Params{Limit: 100, Window: 86400e9, Cost: 1}, 31},
		{KindSlide, Params{Limit: 100, Window: 86400e9, Cost: 1}, 32},
		{KindBucket, Params{Limit: 100, Window: 86400e9, Rate: 100, Cost: 1}, 30},
		{KindLog, Params{Limit: 100, Window: 86400e9, Cost: 1}, 37}, // the oldest run's time, 3 bytes, is kept too, and a byte for the last ticket (none)
	} {
		e := New(1)
		_, err := e.Store().Limit(c.kind, key, c.p, now)
		require.NoError(t, err)
		s := e.shards[0]
		require.LessOrEqual(t, len(s.data), c.limit, "kind %s", c.kind.Name())
		t.Logf("%s: %d bytes", c.kind.Name(), len(s.data))
		if c.kind == KindLog {
			// Each further unit admitted a microsecond later costs a few bytes.
			for i := 1; i <= 59; i++ {
				_, err := e.Store().Limit(c.kind, key, c.p, now+int64(i)*1000)
				require.NoError(t, err)
			}
			size := len(s.data) - s.garbage
			t.Logf("log of 60 units: %d bytes, %d of garbage", size, s.garbage)
			require.LessOrEqual(t, size, (c.limit+59*4)*5/4)     // with its slack
			require.LessOrEqual(t, s.garbage, max(3*size, 4096)) // compaction waits for the region to fill
		}
	}
	e := New(1)
	g, err := NewGCRA(100, 100, 86400)
	require.NoError(t, err)
	_, err = e.Store().Throttle(key, g, 1, now)
	require.NoError(t, err)
	t.Logf("throttle: %d bytes", len(e.shards[0].data))
	require.LessOrEqual(t, len(e.shards[0].data), 30)
}

// TestScanSurvivesCompaction: keys present throughout a ScanSlots walk are
// all seen, and the walk ends, although other keys' records move, the
// shard is compacted and its table grows and shrinks between steps.
func TestScanSurvivesCompaction(t *testing.T) {
	for _, at := range []int{0, 1024} { // tables that grow in steps, or at once
		t.Run(fmt.Sprint("migrateAtOnce=", at), func(t *testing.T) {
			testScanSurvivesCompaction(t, options{migrateAtOnce: at})
		})
	}
}

func testScanSurvivesCompaction(t *testing.T, o options) {
	const now = int64(1_000_000_000)
	e := newEngine(1, o)
	st := e.Store()
	p := Params{Limit: 1 << 40, Window: 1e12, Cost: 1}
	for i := 0; i < 2000; i++ {
		_, err := st.Limit(KindFixed, []byte(fmt.Sprint("stay", i)), p, now)
		require.NoError(t, err)
		_, err = st.Limit(KindFixed, []byte(fmt.Sprint("churn", i)), p, now)
		require.NoError(t, err)
	}
	seen := map[string]bool{}
	compactions, slots := e.shards[0].compactions, len(e.shards[0].slots)
	for pos, step := int64(0), 0; pos >= 0; step++ {
		pos = st.ScanSlots(0, pos, 50, now, func(k KeyInfo) { seen[k.Key] = true })
		// Replace every churn key (a removal, then a new record at the
		// end), so garbage builds up and the shard compacts.
		for i := 0; i < 2000; i++ {
			key := []byte(fmt.Sprint("churn", i))
			st.Delete(key, now)
			_, err := st.Limit(KindFixed, key, p, now)
			require.NoError(t, err)
		}
		switch step { // grow the table, then shrink it back
		case 3:
			for i := 0; i < 20000; i++ {
				_, err := st.Limit(KindFixed, []byte(fmt.Sprint("extra", i)), p, now)
				require.NoError(t, err)
			}
			slots = max(slots, len(e.shards[0].slots))
		case 10:
			for i := 0; i < 20000; i++ {
				st.Delete([]byte(fmt.Sprint("extra", i)), now)
			}
			e.Sweep(now)
		}
		require.Less(t, step, 10000)
	}
	require.Greater(t, e.shards[0].compactions, compactions, "the walk should have met a compaction")
	t.Logf("%d compactions; table grew to %d slots, ended at %d", e.shards[0].compactions-compactions, slots, len(e.shards[0].slots))
	require.Greater(t, slots, 2*len(e.shards[0].slots), "the table should have grown and shrunk")
	for i := 0; i < 2000; i++ {
		require.True(t, seen[fmt.Sprint("stay", i)], "stay%d not seen", i)
	}
}

// FuzzScanPosition: any position, even one no walk returned (a client's
// SCAN cursor is untrusted), neither crashes ScanSlots nor walks forever.
func FuzzScanPosition(f *testing.F) {
	f.Add(int64(0))
	f.Add(int64(1))
	f.Add(int64(17))
	f.Add(int64(1) << 36)
	f.Add(int64(-1))
	e := New(1)
	st := e.Store()
	keys := map[string]bool{}
	for i := 0; i < 300; i++ {
		k := fmt.Sprint("key:", i*7919)
		keys[k] = true
		kind := []Kind{KindFixed, KindLog, KindSlide, KindBucket}[i%4]
		_, err := st.Limit(kind, []byte(k), Params{Limit: 100, Window: 1e9, Rate: 3, Cost: int64(1 + i%5)}, 1e9+int64(i))
		require.NoError(f, err)
	}
	// And a shard in the middle of a shrink, its old table the larger.
	o := newOneShard(options{migrateAtOnce: 0})
	o.shrinkSparse(f, 4000, 16)
	require.NotNil(f, o.s.old)
	f.Fuzz(func(t *testing.T, pos int64) {
		for _, st := range []Store{st, o.st} {
			next := pos
			for steps := 0; next >= 0 && steps < 1000; steps++ {
				next = st.ScanSlots(0, next, 7, 1e9+1000, func(k KeyInfo) {
					// A forged position may start inside a record whose
					// bytes happen to read as one; what it yields must
					// still be bounded memory, never a crash.
					_ = keys[k.Key]
				})
			}
		}
	})
}

// TestTableMemoryComesBack: a shard whose keys all went gives its regions
// back at the next sweep.
func TestTableMemoryComesBack(t *testing.T) {
	e := New(2)
	st := e.Store()
	g, err := NewGCRA(1, 1, 1)
	require.NoError(t, err)
	for i := 0; i < 100_000; i++ {
		_, err := st.Throttle([]byte(fmt.Sprint("k", i)), g, 1, 1e9)
		require.NoError(t, err)
	}
	full := st.Memory()
	require.Greater(t, full.Held, int64(100_000*20))
	for e.Sweep(10e9).Expired > 0 {
	}
	empty := st.Memory()
	t.Logf("held %d bytes with 100k keys, %d after they expired", full.Held, empty.Held)
	require.Less(t, empty.Held, full.Held/100)
	require.Zero(t, st.Len())
}

// TestFillSlack: a record is filled to exactly any size above its base
// and parses back with the same state.
func TestFillSlack(t *testing.T) {
	e := entry{kind: KindFixed, deadline: 5e18, w: words{a: 4e18, b: 7}}
	for _, key := range []string{"k", "a key of some thirty bytes ..."} {
		base := appendRecord(nil, byte(KindFixed), []byte(key), e, nil)
		for size := len(base) - 1; size < len(base)+20000; size += 1 + size/1000 {
			rec, ok := fillSlack(append([]byte(nil), base...), size)
			require.Equal(t, size > len(base), ok, "size %d", size)
			if !ok {
				continue
			}
			require.LessOrEqual(t, len(rec), size)
			rec = append(rec, make([]byte, size-len(rec))...) // the slack, never read
			p := parseRecord(rec, 0)
			require.Equal(t, size, p.end)
			require.Equal(t, e, p.e)
		}
	}
}

// TestRestoreWhileTracking: records applied by Restore (a replica's
// stream, say) while change tracking is on are not reported as changes,
// and the changes that are ours survive the compactions and moves the
// restores cause.
func TestRestoreWhileTracking(t *testing.T) {
	const now = int64(1e9)
	e := New(1)
	f := e.NewFeed()
	st := e.Store()
	p := Params{Limit: 1 << 40, Window: 1e12, Cost: 1}
	_, err := st.Limit(KindFixed, []byte("ours"), p, now)
	require.NoError(t, err)
	for round := 0; round < 30; round++ {
		for i := 0; i < 300; i++ {
			// Growing counts move the records; deletions make garbage.
			r := Record{Key: fmt.Sprint("theirs", i), Kind: KindFixed, Deadline: now + 1e12, A: now, B: int64(round) << (2 * round)}
			if (i+round)%5 == 0 {
				r.Kind = KindNone
			}
			e.Restore(r, now)
		}
	}
	require.Greater(t, e.shards[0].compactions, uint64(0), "the restores should have compacted the shard")
	var got []string
	f.Next(func(r Record) { got = append(got, r.Key) })
	require.Equal(t, []string{"ours"}, got)
	require.Zero(t, f.Pending())
}

// TestScanDuringTableMove: a SCAN walk that starts while the table is
// growing in steps (the old table a quarter emptied) and goes on while
// inserts move the rest sees every key held throughout, in both tables.
func TestScanDuringTableMove(t *testing.T) {
	o := newOneShard(options{migrateAtOnce: 0})
	s := o.s
	held := 0
	// Fill until the growth of a table of 2,048 slots or more is a quarter done.
	for s.old == nil || len(s.old) < 2048 || s.migrated < len(s.old)/4 {
		o.touch(t, fmt.Sprint("k", held))
		held++
	}
	seen, moving := o.walkWhileMoving(20, func(i int) {
		o.touch(t, fmt.Sprint("new", i)) // moves two more slots
	})
	require.Greater(t, moving, 10, "the walk should have run while the table moved")
	for i := 0; i < held; i++ {
		require.True(t, seen[fmt.Sprint("k", i)], "k%d not seen", i)
	}
}

// TestScanDuringTableShrink: while a table left mostly empty moves into a
// smaller one (the old table is the larger of the two), a SCAN walk still
// returns every key held from its start to its end, though lookups and
// inserts move entries under it.
func TestScanDuringTableShrink(t *testing.T) {
	o := newOneShard(options{migrateAtOnce: 0})
	s := o.s
	held := o.shrinkSparse(t, 4000, 16)
	require.NotNil(t, s.old)
	require.Greater(t, len(s.old), len(s.slots), "the old table is the larger one")
	seen, moving := o.walkWhileMoving(5, func(i int) {
		// A lookup moves four slots, an insert more.
		o.touch(t, held[i%len(held)])
		o.touch(t, fmt.Sprint("new", i))
	})
	require.Greater(t, moving, 10, "the walk should have run while the table moved")
	for _, k := range held {
		require.True(t, seen[k], "%s not seen", k)
	}
}

// TestCancelOnAnyRestoredSection: a restored record's section may hold
// anything (a record is total); RL.CANCEL on it never panics and never
// gives back more than was reserved.
func TestCancelOnAnyRestoredSection(t *testing.T) {
	r := rand.New(rand.NewPCG(7, 29))
	now := int64(1_700_000_000_000_000_000)
	for n := range 2000 {
		e := New(1)
		kind := []Kind{KindBucket, KindFixed}[n%2]
		log := []int64{now + r.Int64N(1e9), r.Int64N(3) - 1, r.Int64N(5)}
		for range r.IntN(3) {
			log = append(log, now+r.Int64N(1e9), r.Int64N(4))
		}
		e.Restore(Record{Key: "k", Kind: kind, Deadline: now + 2e9, A: randWord(r), B: randWord(r), C: randWord(r), Log: log}, now)
		for i := 3; i+1 < len(log); i += 2 {
			got, err := e.Store().Cancel([]byte("k"), log[i], now)
			require.NoError(t, err)
			require.LessOrEqual(t, got, max(log[i+1], 0), "record %v", log)
		}
	}
}

// FuzzDecodeState: no bytes crash DecodeState (a replica's decoder of its
// primary's changes), and a state it accepts applies. Applying may
// normalize what no write makes (a reservations section whose last
// reservation is 0 is dropped, as from a snapshot's record), but what an
// Encoder is then given round-trips exactly: decoded and applied again,
// the same bytes.
func FuzzDecodeState(f *testing.F) {
	for _, r := range []Record{
		{Key: "k", Kind: KindLog, Deadline: 5e9, A: 3, Log: []int64{1e9, -3e9 - 1, 2}},
		{Key: "k", Kind: KindBucket, Deadline: 5e9, A: 10, B: 1e9, C: 3},
		{Key: "k", Kind: KindFixed, Deadline: 5e9, A: 1e9, B: 7},
		{Key: "k", Kind: KindLog, Deadline: 5e9, A: 300, Log: longLog(300)}, // 615 bytes, over maxEncoded: listed
	} {
		b := stateOf(r, 0)
		f.Add(b[0], b[1:])
	}
	f.Add(byte(KindNone), []byte{})
	f.Fuzz(func(t *testing.T, kind byte, state []byte) {
		r, err := DecodeState("k", Kind(kind), state)
		if err != nil || r.Kind == KindNone || r.Deadline == 0 {
			return
		}
		once := stateOf(r, r.Deadline-1)
		require.NotEmpty(t, once)
		r2, err := DecodeState("k", Kind(once[0]), once[1:])
		require.NoError(t, err)
		require.Equal(t, once, stateOf(r2, r2.Deadline-1))
	})
}

// TestDecodeStateIsOneState: a state followed by anything, even bytes
// that read as a slack count and its slack, is ErrState for DecodeState
// and CheckState: a stream carries states without their slack.
func TestDecodeStateIsOneState(t *testing.T) {
	for _, r := range []Record{
		{Key: "k", Kind: KindThrottle, Deadline: 5e9, A: 4e9},
		{Key: "k", Kind: KindFixed, Deadline: 5e9, A: 1e9, B: 7},
		{Key: "k", Kind: KindLog, Deadline: 5e9, A: 3, Log: []int64{1e9, -3e9 - 1, 2}},
	} {
		b := stateOf(r, 0)
		kind, state := Kind(b[0]), b[1:]
		_, err := DecodeState("k", kind, state)
		require.NoError(t, err, "%s: the state alone", kind.Name())
		for _, tail := range [][]byte{{0}, {1, 0}, {2, 0, 0}} {
			long := append(bytes.Clone(state), tail...)
			_, err := DecodeState("k", kind, long)
			require.ErrorIs(t, err, ErrState, "%s + %v", kind.Name(), tail)
			require.ErrorIs(t, CheckState(kind, long, nil), ErrState, "%s + %v", kind.Name(), tail)
		}
	}
}

// TestDecodeStateRunBeforeZero: an RL.LOG state whose run lies before
// time 0 is ErrState for DecodeState, ApplyState and CheckState, and
// changes nothing.
// Record.Log cannot carry it (FuzzDecodeState found a log that came back
// as other units); the same state at time 0 decodes.
func TestDecodeStateRunBeforeZero(t *testing.T) {
	const dl = int64(5e9)
	for _, tc := range []struct {
		times []int64 // the runs' times, newest first, 2 units each
		ok    bool
	}{
		{[]int64{0}, true},
		{[]int64{2e9, 0}, true},
		{[]int64{-1}, false},
		{[]int64{2e9, -3e9}, false},
		{[]int64{-1 << 62}, false},
	} {
		// The runs are encoded here, not by appendRuns: from Record.Log
		// it cannot make a run before 0, the state under test.
		var runs []byte
		prev := dl
		for _, at := range tc.times {
			runs = binary.AppendUvarint(runs, 2)
			runs = appendDur(runs, prev-at)
			prev = at
		}
		en := entry{kind: KindLog, deadline: dl, w: words{a: int64(2 * len(tc.times)), b: prev}}
		state := appendState(nil, KindLog, en, runs)
		r, err := DecodeState("k", KindLog, state)
		e := New(1)
		held, aerr := e.ApplyState([]byte("k"), KindLog, state, 0)
		require.Equal(t, aerr, CheckState(KindLog, state, nil), "%v: CheckState says what ApplyState does", tc.times)
		if tc.ok {
			require.NoError(t, err, "%v", tc.times)
			require.NoError(t, aerr, "%v", tc.times)
			require.True(t, held)
			require.Len(t, r.Log, 2*len(tc.times))
			continue
		}
		require.ErrorIs(t, err, ErrState, "%v", tc.times)
		require.ErrorIs(t, aerr, ErrState, "%v", tc.times)
		require.False(t, held)
		require.Zero(t, e.Store().Len(), "%v: nothing stored", tc.times)
	}
}

// stateOf applies r at now to a fresh engine and returns the state an
// encoded feed is given for it, its kind first: kept by the write, or
// listed (a record over maxEncoded) and given at Append.
func stateOf(r Record, now int64) []byte {
	e := New(1)
	var got []byte
	f := e.NewEncodedFeed(func(dst, _ []byte, kind Kind, state []byte) []byte {
		got = append([]byte{byte(kind)}, state...)
		return dst
	}, 1<<20)
	e.Apply(r, now)
	f.Append(nil)
	return got
}

// FuzzApplyState checks ApplyState against Apply(DecodeState), the path
// it shortens: the same states refused, and the same keyspace and the
// same change for the feeds after, onto a key absent or held, at any
// time. CheckState refuses exactly what ApplyState refuses.
func FuzzApplyState(f *testing.F) {
	for _, r := range []Record{
		{Key: "k", Kind: KindLog, Deadline: 5e9, A: 3, Log: []int64{1e9, -3e9 - 1, 2}},
		{Key: "k", Kind: KindBucket, Deadline: 5e9, A: 10, B: 1e9, C: 3},
		{Key: "k", Kind: KindFixed, Deadline: 5e9, A: 1e9, B: 7},
		{Key: "k", Kind: KindThrottle, Deadline: 5e9, A: 4e9},
		{Key: "k", Kind: KindSlide, Deadline: 5e9, A: 1e9, B: 4, C: 2},
		{Key: "k", Kind: KindLease, Deadline: 5e9, A: 3, Log: []int64{4e9, 4.5e9, 2, 4.1e9, 4.9e9, 1}},
		{Key: "k", Kind: KindLog, Deadline: 5e9, A: 300, Log: longLog(300)},
		{Key: "k", Kind: KindBucket, Deadline: 5e9, A: 10, B: 1e9, C: 3, Log: []int64{4e9, 1e6, 2, 3.5e9, 1, 4e9, 1}}, // reservations
	} {
		st := stateOf(r, 0)
		for _, now := range []int64{0, 5e9} {
			for _, held := range []bool{false, true} {
				f.Add(st[0], st[1:], now, held)
			}
		}
	}
	f.Add(byte(KindNone), []byte{}, int64(0), true)
	f.Fuzz(func(t *testing.T, kind byte, state []byte, now int64, held bool) {
		k := Kind(kind)
		// run applies the state to a fresh engine by apply and returns
		// what apply said, the keyspace after and what a feed got.
		run := func(apply func(e *Engine) (bool, error)) (bool, error, []Record, []byte) {
			e := New(1)
			if held {
				e.Apply(Record{Key: "k", Kind: KindFixed, Deadline: math.MaxInt64, A: 1e9, B: 3}, now)
			}
			feed := e.NewEncodedFeed(func(dst, key []byte, kind Kind, state []byte) []byte {
				return append(append(append(dst, key...), byte(kind)), state...)
			}, 1<<20)
			ok, err := apply(e)
			fed, _ := feed.Append(nil)
			var recs []Record
			e.Dump(now, func(r Record) { recs = append(recs, r) })
			return ok, err, recs, fed
		}
		okA, errA, recsA, fedA := run(func(e *Engine) (bool, error) {
			return e.ApplyState([]byte("k"), k, state, now)
		})
		okB, errB, recsB, fedB := run(func(e *Engine) (bool, error) {
			r, err := DecodeState("k", k, state)
			if err != nil {
				return false, err
			}
			return e.Apply(r, now), nil
		})
		require.Equal(t, errB == nil, errA == nil, "ApplyState: %v, DecodeState: %v", errA, errB)
		var checked Checked
		errC := CheckState(k, state, &checked)
		require.Equal(t, errA, errC, "CheckState says what ApplyState does")
		require.Equal(t, okB, okA)
		require.Equal(t, recsB, recsA)
		require.Equal(t, fedB, fedA)
		if errC != nil {
			return
		}
		// What CheckState found, applied without a second parse, does
		// what ApplyState does; so does the zero Checked (a state not
		// parsed: ApplyState itself).
		for _, c := range []Checked{checked, {}} {
			okC, errC, recsC, fedC := run(func(e *Engine) (bool, error) {
				return e.ApplyChecked([]byte("k"), k, state, c, now)
			})
			require.NoError(t, errC)
			require.Equal(t, okA, okC, "%+v", c)
			require.Equal(t, recsA, recsC, "%+v", c)
			require.Equal(t, fedA, fedC, "%+v", c)
		}
	})
}

// TestCheckStateKeepsWords: CheckState hands ApplyChecked the entry of a
// state of words alone and of a deletion, so that a replica parses those
// once; a state with runs or a section is parsed again as it is stored.
func TestCheckStateKeepsWords(t *testing.T) {
	for _, tc := range []struct {
		r    Record
		kept bool
	}{
		{Record{Kind: KindBucket, Deadline: 5e9, A: 10, B: 1e9, C: 3}, true},
		{Record{Kind: KindFixed, Deadline: 5e9, A: 1e9, B: 7}, true},
		{Record{Kind: KindThrottle, Deadline: 5e9, A: 4e9}, true},
		{Record{Kind: KindSlide, Deadline: 5e9, A: 1e9, B: 4, C: 2}, true},
		{Record{Kind: KindLog, Deadline: 5e9, A: 3, Log: []int64{1e9, -3e9 - 1, 2}}, false},
		{Record{Kind: KindLease, Deadline: 5e9, A: 3, Log: []int64{4e9, 4.5e9, 2, 4.1e9, 4.9e9, 1}}, false},
		{Record{Kind: KindBucket, Deadline: 5e9, A: 10, B: 1e9, C: 3, Log: []int64{4e9, 1e6, 2, 3.5e9, 1, 4e9, 1}}, false},
	} {
		st := stateOf(tc.r, 0)
		c := Checked{en: entry{deadline: 1}, parsed: !tc.kept} // not what it finds
		require.NoError(t, CheckState(Kind(st[0]), st[1:], &c))
		require.Equal(t, tc.kept, c.parsed, "%+v", tc.r)
		if tc.kept {
			en, _, _ := parseState(Kind(st[0]), st[1:])
			require.Equal(t, en, c.en, "%+v", tc.r)
		} else {
			require.Equal(t, Checked{}, c, "%+v", tc.r)
		}
	}
	c := Checked{en: entry{deadline: 1}}
	require.NoError(t, CheckState(KindNone, nil, &c))
	require.Equal(t, Checked{parsed: true}, c, "a deletion")
	require.Error(t, CheckState(KindFixed, []byte{1}, &c))
	require.Equal(t, Checked{}, c, "a state refused")
}

// longLog is an RL.LOG's log of n admissions 10 ms apart, from 1 s on.
func longLog(n int) []int64 {
	log := make([]int64, n)
	for i := range log {
		log[i] = 1e9 + int64(i)*1e7
	}
	return log
}

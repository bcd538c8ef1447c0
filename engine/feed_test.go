package engine

import (
	"bytes"
	"fmt"
	"math/rand/v2"
	"sort"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"
)

// drain returns what f.Next reports, as "key=count" for writes (RL.FIXED
// counts) and "-key" for deletions, sorted, and the flush flag.
func drain(f *Feed) ([]string, bool) {
	var got []string
	flushed := f.Next(func(r Record) {
		if r.Kind == KindNone {
			got = append(got, "-"+r.Key)
		} else {
			got = append(got, fmt.Sprintf("%s=%d", r.Key, r.B))
		}
	})
	sort.Strings(got)
	return got, flushed
}

// TestFeedsReadAtTheirOwnPositions: two readers of one engine's changes
// see every change once each, whatever the other has taken; a feed
// registered later sees only what follows it.
func TestFeedsReadAtTheirOwnPositions(t *testing.T) {
	const now = int64(1e9)
	e := New(4)
	st := e.Store()
	fixed := func(key string, cost int64) {
		_, err := st.Limit(KindFixed, []byte(key), Params{Limit: 100, Window: 1e12, Cost: cost}, now)
		require.NoError(t, err)
	}
	a := e.NewFeed()
	fixed("x", 1)
	fixed("y", 2)
	got, _ := drain(a)
	require.Equal(t, []string{"x=1", "y=2"}, got)

	b := e.NewFeed()
	fixed("x", 1)
	require.Equal(t, 1, a.Pending())
	require.Equal(t, 1, b.Pending())
	got, _ = drain(b)
	require.Equal(t, []string{"x=2"}, got, "b sees only what followed it")
	require.Zero(t, b.Pending())

	fixed("x", 1)
	st.Delete([]byte("y"), now)
	require.Equal(t, 2, a.Pending(), "a: x written (once), y deleted")
	require.Equal(t, 2, b.Pending())
	got, _ = drain(a)
	require.Equal(t, []string{"-y", "x=3"}, got)
	got, _ = drain(b)
	require.Equal(t, []string{"-y", "x=3"}, got)

	// A write b has not read yet, then a deletion: b hears only of the
	// deletion; a, which read the write, hears of it too.
	fixed("z", 5)
	got, _ = drain(a)
	require.Equal(t, []string{"z=5"}, got)
	st.Delete([]byte("z"), now)
	got, _ = drain(b)
	require.Equal(t, []string{"-z"}, got)
	got, _ = drain(a)
	require.Equal(t, []string{"-z"}, got)

	fixed("w", 1)
	st.Flush()
	fixed("v", 1)
	for _, f := range []*Feed{a, b} {
		got, flushed := drain(f)
		require.True(t, flushed)
		require.Equal(t, []string{"v=1"}, got, "the flush voids what came before it")
		require.Zero(t, f.Pending())
	}
}

// TestApplyReachesFeedsRestoreDoesNot: a record applied with Apply (a
// replica's stream) is a change every feed reports; one applied with
// Restore (a start-up load) is not.
func TestApplyReachesFeedsRestoreDoesNot(t *testing.T) {
	const now = int64(1e9)
	e := New(1)
	f := e.NewFeed()
	rec := func(key string, count int64) Record {
		return Record{Key: key, Kind: KindFixed, Deadline: now + 1e12, A: now, B: count}
	}
	require.True(t, e.Restore(rec("loaded", 4), now))
	require.Zero(t, f.Pending())
	require.True(t, e.Apply(rec("applied", 7), now))
	require.False(t, e.Apply(Record{Key: "loaded"}, now))
	got, _ := drain(f)
	require.Equal(t, []string{"-loaded", "applied=7"}, got)
}

// TestTooManyFeeds: a record header has room for four feeds' bits.
func TestTooManyFeeds(t *testing.T) {
	e := New(1)
	for range maxFeeds {
		e.NewFeed()
	}
	require.Panics(t, func() { e.NewFeed() })
}

// TestMutedFeedListsNothing: a muted feed drops what it listed and hears
// of no write, deletion or flush while the other feed hears of all; once
// resumed it reports what changes from then on, including keys changed
// while it was muted.
func TestMutedFeedListsNothing(t *testing.T) {
	const now = int64(1e9)
	e := New(2)
	st := e.Store()
	fixed := func(key string, cost int64) {
		_, err := st.Limit(KindFixed, []byte(key), Params{Limit: 100, Window: 1e12, Cost: cost}, now)
		require.NoError(t, err)
	}
	a, b := e.NewFeed(), e.NewFeed()
	fixed("x", 1)
	st.Delete([]byte("gone"), now)
	a.Mute(true)
	require.Zero(t, a.Pending(), "muting drops what was listed")
	fixed("x", 1)
	fixed("y", 1)
	require.True(t, e.Apply(Record{Key: "z", Kind: KindFixed, Deadline: now + 1e12, A: now, B: 4}, now))
	st.Delete([]byte("y"), now)
	got, flushed := drain(a)
	require.Empty(t, got)
	require.False(t, flushed)
	got, _ = drain(b)
	require.Equal(t, []string{"-y", "x=2", "z=4"}, got)

	st.Flush()
	got, flushed = drain(a)
	require.Empty(t, got)
	require.False(t, flushed, "a muted feed hears of no flush either")
	got, flushed = drain(b)
	require.Empty(t, got)
	require.True(t, flushed)

	fixed("x", 1) // written while muted...
	a.Mute(false)
	fixed("x", 1) // ...and after: reported
	fixed("w", 3)
	got, _ = drain(a)
	require.Equal(t, []string{"w=3", "x=2"}, got)
	got, _ = drain(b)
	require.Equal(t, []string{"w=3", "x=2"}, got)
}

// encodeForTest is an Encoder for the tests: a change as a line "key
// record", the state read back by DecodeState, a deletion as "-key".
func encodeForTest(dst, key []byte, kind Kind, state []byte) []byte {
	c, err := DecodeState(string(key), kind, state)
	if err != nil {
		panic(fmt.Sprintf("state of %q (kind %d) %x: %v", key, kind, state, err))
	}
	if c.Kind == KindNone {
		return fmt.Appendf(dst, "-%s\n", key)
	}
	if len(c.Log) == 0 {
		c.Log = nil
	}
	return fmt.Appendf(dst, "%s %+v\n", key, c)
}

// appended returns the lines of an encoded feed's Append.
func appended(f *Feed) ([]string, bool) {
	b, flushed := f.Append(nil)
	lines := strings.Split(string(b), "\n")
	return lines[:len(lines)-1], flushed
}

// fixedLines turns an encoded feed's lines of RL.FIXED keys into
// "key=count" and "-key", in the order reported.
func fixedLines(t *testing.T, lines []string) []string {
	var got []string
	for _, l := range lines {
		if strings.HasPrefix(l, "-") {
			got = append(got, l)
			continue
		}
		var key string
		var r Record
		_, err := fmt.Sscanf(l, "%s {Key:%s Kind:%d Deadline:%d A:%d B:%d", &key, &r.Key, &r.Kind, &r.Deadline, &r.A, &r.B)
		require.NoError(t, err, l)
		got = append(got, fmt.Sprintf("%s=%d", key, r.B))
	}
	return got
}

// TestEncodedFeedKeepsFirstChanges: an encoded feed keeps each key's
// first change since the read, in the order made, and lists the key's
// later changes, reported after everything kept with the key's state
// then; past its bound it lists every change. Reading empties both, and
// forgets what was kept.
func TestEncodedFeedKeepsFirstChanges(t *testing.T) {
	const now = int64(1e9)
	p := Params{Limit: 100, Window: 1e12, Cost: 1}
	for _, tc := range []struct {
		name string
		max  int
		want []string
	}{
		{"under the bound", 1 << 20, []string{"x=1", "y=1", "-y", "x=3"}},
		{"past it after one", 1, []string{"x=1", "-y", "x=3"}},
		{"past it at once", 0, []string{"-y", "x=3"}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			e := New(1)
			st := e.Store()
			f := e.NewEncodedFeed(encodeForTest, tc.max)
			for _, k := range []string{"x", "x", "y", "x"} {
				_, err := st.Limit(KindFixed, []byte(k), p, now)
				require.NoError(t, err)
			}
			require.True(t, st.Delete([]byte("y"), now))
			require.Equal(t, len(tc.want), f.Pending())
			lines, flushed := appended(f)
			require.False(t, flushed)
			require.Equal(t, tc.want, fixedLines(t, lines))
			require.Zero(t, f.Pending())
			lines, _ = appended(f)
			require.Empty(t, lines)

			_, err := st.Limit(KindFixed, []byte("x"), p, now)
			require.NoError(t, err)
			lines, _ = appended(f)
			want := []string{"x=4"}
			require.Equal(t, want, fixedLines(t, lines), "kept or listed, x's next change is reported once")
		})
	}
}

// TestEncodedFeedListsLargeRecords: a record larger than maxEncoded is
// listed, not kept (reported after what was kept), while a small record
// changed beside it is kept.
func TestEncodedFeedListsLargeRecords(t *testing.T) {
	const now = int64(1e9)
	e := New(1)
	st := e.Store()
	f := e.NewEncodedFeed(encodeForTest, 1<<20)
	logged := func(i int) {
		_, err := st.Limit(KindLog, []byte("big"), Params{Limit: 1000, Window: 1e12, Cost: 1}, now+int64(i)*1e6)
		require.NoError(t, err)
	}
	for i := range 100 {
		logged(i)
	}
	appended(f)
	logged(100)
	_, err := st.Limit(KindFixed, []byte("x"), Params{Limit: 100, Window: 1e12, Cost: 1}, now)
	require.NoError(t, err)
	lines, _ := appended(f)
	require.Len(t, lines, 2)
	require.True(t, strings.HasPrefix(lines[0], "x "), "x kept: %s", lines[0])
	require.True(t, strings.HasPrefix(lines[1], "big "), "big listed, after: %.40s", lines[1])
	_, log, _ := strings.Cut(lines[1], "Log:[")
	require.Len(t, strings.Fields(log), 101)
	require.Greater(t, len(lines[1]), maxEncoded)
}

// TestEncodedFeedKeepsOverAForgetfulTable: with more keys changed between
// two reads than the table of kept tags has slots, some keys' second
// changes are kept again instead of listed; every change still reaches
// the reader in order, and each key's last reported state is its state.
func TestEncodedFeedKeepsOverAForgetfulTable(t *testing.T) {
	const now = int64(1e9)
	e := New(1)
	st := e.Store()
	f := e.NewEncodedFeed(encodeForTest, 1<<20)
	p := Params{Limit: 100, Window: 1e12, Cost: 1}
	const keys = 8 * keptSlots
	for range 3 {
		for i := range keys {
			_, err := st.Limit(KindFixed, []byte(fmt.Sprintf("k%d", i)), p, now)
			require.NoError(t, err)
		}
	}
	lines, _ := appended(f)
	last := map[string]string{}
	for _, l := range fixedLines(t, lines) {
		k, v, _ := strings.Cut(l, "=")
		require.Less(t, last[k], v, "%s's changes in order", k)
		last[k] = v
	}
	require.Len(t, last, keys)
	for k, v := range last {
		require.Equal(t, "3", v, k)
	}
	require.Greater(t, len(lines), keys, "second changes kept again")
}

// TestEncodedFeedReportsWhatNextDoes: a set feed read with Next and an
// encoded feed read with Append, each applied in order to a keyspace of
// its own, leave the same keyspaces after every read: writes of every
// kind, logs included (some past maxEncoded), deletions and flushes, with
// the encoded feed's bound never reached, reached now and then, and
// always, and with reads that dump random shards (AppendDump).
func TestEncodedFeedReportsWhatNextDoes(t *testing.T) {
	for _, tc := range []struct {
		max, scan int
		dump      bool // reads dump random shards (AppendDump)
	}{{1 << 20, 4, false}, {300, 4, false}, {0, 4, false}, {300, 0, false}, {300, 1 << 20, false}, {300, 4, true}, {0, 4, true}} {
		max := tc.max
		t.Run(fmt.Sprintf("max=%d/scan=%d/dump=%v", max, tc.scan, tc.dump), func(t *testing.T) {
			now := int64(1e12)
			o := defaultOptions
			o.feedScanShare = tc.scan
			e := newEngine(4, o)
			st := e.Store()
			a, b := e.NewFeed(), e.NewEncodedFeed(encodeForTest, max)
			viaNext, viaAppend := map[string]string{}, map[string]string{}
			sections, leases := 0, 0
			r := rand.New(rand.NewPCG(uint64(max), 7))
			for i := range 3000 {
				key := []byte(fmt.Sprintf("k%d", r.IntN(60)))
				switch x := r.IntN(100); {
				case x < 8:
					// Logs long enough to pass maxEncoded: listed, not kept.
					key = []byte(fmt.Sprintf("log%d", r.IntN(3)))
					_, err := st.Limit(KindLog, key, Params{Limit: 200, Window: 1e13, Cost: 1}, now)
					require.NoError(t, err)
				case x < 18:
					st.Delete(key, now)
				case x == 18:
					st.Flush()
				case x < 30:
					// Reservations in line (a section), leases and
					// CL.THROTTLE: every layout a write stores.
					var err error
					switch r.IntN(3) {
					case 0: // a line of three keys, one of each kind that reserves
						i := r.IntN(3)
						key = []byte(fmt.Sprintf("line%d", i))
						kind := []Kind{KindFixed, KindBucket, KindLog}[i]
						_, err = st.Reserve(kind, key, Params{Limit: 1, Window: 1e9, Rate: 1, Cost: 1}, 5e9, now)
					case 1:
						_, err = st.Limit(KindLease, key, Params{Limit: 3, Window: 2e9, Cost: 1}, now)
					default:
						g, _ := NewGCRA(2, 1, 1)
						_, err = st.Throttle(key, g, 1, now)
					}
					if err != nil {
						require.ErrorIs(t, err, ErrWrongType)
					}
				default:
					kind := []Kind{KindFixed, KindLog, KindSlide, KindBucket}[r.IntN(4)]
					_, err := st.Limit(kind, key, Params{Limit: 5, Window: 1e9, Rate: 1, Cost: 1}, now)
					if err != nil {
						require.ErrorIs(t, err, ErrWrongType)
					}
				}
				now += int64(r.IntN(3e8))
				// Reads come every 40 changes or so, and often right
				// after a reservation, so that a line's next one is the
				// first change of its key since a read: kept, section
				// and all.
				if r.IntN(40) > 0 && !(bytes.HasPrefix(key, []byte("line")) && r.IntN(2) == 0) && i < 2999 {
					continue
				}
				var recs []Record
				if a.Next(func(r Record) { recs = append(recs, r) }) {
					clear(viaNext)
				}
				for _, r := range recs {
					if r.Kind == KindNone {
						delete(viaNext, r.Key)
						continue
					}
					if len(r.Log) > 0 && (r.Kind == KindFixed || r.Kind == KindBucket) {
						sections++ // reservations in line: the record's section
					}
					if r.Kind == KindLease {
						leases++
					}
					if len(r.Log) == 0 {
						r.Log = nil
					}
					viaNext[r.Key] = fmt.Sprintf("%+v", r)
				}
				pending := b.Pending()
				var lines []string
				var flushed bool
				if tc.dump {
					from := r.IntN(e.Shards() + 1)
					out, fl := b.AppendDump(nil, 0, from, from+r.IntN(e.Shards()+1-from))
					lines, flushed = strings.Split(string(out), "\n"), fl
					lines = lines[:len(lines)-1]
				} else {
					lines, flushed = appended(b)
					require.Equal(t, pending, len(lines), "Pending counts what Append reports")
				}
				if flushed {
					clear(viaAppend)
				}
				for _, l := range lines {
					if k, ok := strings.CutPrefix(l, "-"); ok {
						delete(viaAppend, k)
						continue
					}
					k, rec, _ := strings.Cut(l, " ")
					viaAppend[k] = rec
				}
				require.Equal(t, viaNext, viaAppend, "after op %d", i)
			}
			require.NotEmpty(t, viaNext)
			require.True(t, viaNext["log0"] != "" || viaNext["log1"] != "" || viaNext["log2"] != "", "a long log at the end")
			require.NotZero(t, sections, "records with reservations in line were reported")
			require.NotZero(t, leases, "lease keys were reported")
		})
	}
}

// TestFeedOverLargeTables: with tables past prefetchMinSlots (where the
// feed brings its listed records into the cache ahead of reading them,
// prefetchTags) or reading every record in order (feedScanShare), a feed
// still reports each changed key once, with its state when read, and
// each deletion.
func TestFeedOverLargeTables(t *testing.T) {
	// By default the first read passes over the records, the second looks
	// each listed tag up; then each way for both.
	for _, scan := range []int{defaultOptions.feedScanShare, 0, 1 << 20} {
		t.Run(fmt.Sprint("scan=", scan), func(t *testing.T) {
			now := int64(1e12)
			o := defaultOptions
			o.feedScanShare = scan
			e := newEngine(2, o)
			st := e.Store()
			f := e.NewFeed()
			p := Params{Limit: 1000, Window: 1e12, Cost: 1}
			for i := range 40_000 {
				_, err := st.Limit(KindFixed, []byte(fmt.Sprintf("k%d", i)), p, now)
				require.NoError(t, err)
			}
			got, _ := drain(f)
			require.Len(t, got, 40_000)
			for _, s := range e.shards {
				require.GreaterOrEqual(t, len(s.slots), prefetchMinSlots)
			}
			want := map[string]int{} // key -> count, -1 deleted
			for i := range 9_000 {
				k := fmt.Sprintf("k%d", i*7919%4_000) // each of 4,000 keys two or three times
				if i%10 == 9 {
					st.Delete([]byte(k), now)
					want[k] = -1
					continue
				}
				if want[k] < 0 {
					continue // the deletion stays the last change
				}
				_, err := st.Limit(KindFixed, []byte(k), p, now)
				require.NoError(t, err)
				if want[k] == 0 {
					want[k] = 1
				}
				want[k]++
			}
			var wantList []string
			for k, n := range want {
				if n < 0 {
					wantList = append(wantList, "-"+k)
				} else {
					wantList = append(wantList, fmt.Sprintf("%s=%d", k, n))
				}
			}
			sort.Strings(wantList)
			got, _ = drain(f)
			require.Equal(t, wantList, got)
		})
	}
}

// TestFeedScansOnceItListsAShare: once a feed lists one in feedScanShare
// of a shard's keys, later writes set only their records' dirty bits,
// and the read scans the shard. Keys added after that point are reported
// too, though the listed tags, against the grown shard, are then too few
// to make the read scan on their own.
func TestFeedScansOnceItListsAShare(t *testing.T) {
	const now = int64(1e12)
	e := New(1)
	st := e.Store()
	p := Params{Limit: 1000, Window: 1e12, Cost: 1}
	write := func(i int) {
		_, err := st.Limit(KindFixed, []byte(fmt.Sprintf("k%d", i)), p, now)
		require.NoError(t, err)
	}
	for i := range 100 {
		write(i)
	}
	f := e.NewFeed()
	var want []string
	for i := range 30 { // a share of 100 keys: from the 25th, not listed
		write(i)
		want = append(want, fmt.Sprintf("k%d=2", i))
	}
	fs := &e.shards[0].feeds[f.i]
	require.True(t, fs.scan)
	require.Len(t, fs.dirty, 25, "listed until a quarter of the shard's keys")
	for i := 100; i < 400; i++ { // new keys: 25 listed of 400 held
		write(i)
		want = append(want, fmt.Sprintf("k%d=1", i))
	}
	require.Len(t, fs.dirty, 25)
	require.Equal(t, 330, f.Pending())
	got, _ := drain(f)
	sort.Strings(want)
	require.Equal(t, want, got)
	require.False(t, fs.scan, "the read starts the list again")

	write(7)
	require.Len(t, fs.dirty, 1, "a write after the read is listed")
	got, _ = drain(f)
	require.Equal(t, []string{"k7=3"}, got)
}

// TestFeedWalksLongRecords: a shard whose records average walkMinBytes
// or more is read through its key tables when the feed scans it
// (walkLocked), also while its table grows, with entries in both tables:
// each changed key once, with its state when read, and each deletion.
func TestFeedWalksLongRecords(t *testing.T) {
	for _, migrate := range []int{0, defaultOptions.migrateAtOnce} {
		t.Run(fmt.Sprint("migrateAtOnce=", migrate), func(t *testing.T) {
			o := defaultOptions
			o.migrateAtOnce = migrate // 0: an old table stays until lookups and inserts move it
			e := newEngine(1, o)
			s, st, f := e.shards[0], e.Store(), e.NewFeed()
			r := rand.New(rand.NewPCG(uint64(migrate), 3))
			now := int64(1e12)
			p := Params{Limit: 1000, Window: 1e15, Cost: 1}
			admit := func(k string) {
				now += 1_234_567 // runs of some 5 bytes: logs of 40 take 200
				_, err := st.Limit(KindLog, []byte(k), p, now)
				require.NoError(t, err)
			}
			keys, whileMoving := 0, 0
			for round := range 16 {
				changed, deleted := map[string]bool{}, map[string]bool{}
				for range 40 + r.IntN(80) {
					k := fmt.Sprint("k", keys)
					keys++
					for range 40 {
						admit(k)
					}
					changed[k] = true
				}
				for range keys / 2 {
					k := fmt.Sprint("k", r.IntN(keys))
					admit(k)
					changed[k] = true
				}
				// Every other round, new keys until the table grows: the
				// read then finds entries in both tables (lookups and
				// inserts move a few slots each).
				for i := 0; round%2 == 1 && s.old == nil && i < 5000; i++ {
					k := fmt.Sprint("k", keys)
					keys++
					for j := 0; j < 40 && s.old == nil; j++ {
						admit(k)
					}
					changed[k] = true
				}
				for range 3 {
					k := fmt.Sprint("k", r.IntN(keys))
					if st.Delete([]byte(k), now) {
						deleted[k] = true
						delete(changed, k)
					}
				}
				fs := &s.feeds[f.i]
				require.True(t, fs.scan || s.scansLocked(len(fs.dirty)), "the read scans")
				require.GreaterOrEqual(t, len(s.data)-s.garbage, walkMinBytes*s.count, "long records: walked")
				if s.old != nil {
					whileMoving++
				}
				want := map[string]Record{}
				e.Dump(now, func(r Record) {
					if changed[r.Key] {
						want[r.Key] = r
					}
				})
				for k := range deleted {
					want[k] = Record{Key: k}
				}
				got := map[string]Record{}
				f.Next(func(r Record) {
					_, twice := got[r.Key]
					require.False(t, twice, "%s reported twice", r.Key)
					got[r.Key] = r
				})
				require.Equal(t, want, got)
			}
			if migrate == 0 {
				require.Positive(t, whileMoving, "some reads while the table moved")
			}
		})
	}
}

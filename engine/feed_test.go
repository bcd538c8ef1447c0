package engine

import (
	"fmt"
	"sort"
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

// TestNextEachReportsWhatNextDoes: two feeds of one engine, one read with
// Next and one with NextEach (copying what it borrows), report the same
// changes: writes of every kind, logs included, and deletions.
func TestNextEachReportsWhatNextDoes(t *testing.T) {
	now := int64(1e12)
	e := New(4)
	st := e.Store()
	a, b := e.NewFeed(), e.NewFeed()
	for i := range 200 {
		key := []byte(fmt.Sprintf("k%d", i%60))
		kind := []Kind{KindFixed, KindLog, KindSlide, KindBucket}[i%60%4]
		_, err := st.Limit(kind, key, Params{Limit: 5, Window: 1e9, Rate: 1, Cost: 1}, now)
		require.NoError(t, err)
		if i%7 == 0 {
			st.Delete([]byte(fmt.Sprintf("k%d", (i+3)%60)), now)
		}
		now += 1e6
	}
	var viaNext, viaEach []string
	a.Next(func(r Record) { viaNext = append(viaNext, fmt.Sprintf("%+v", r)) })
	b.NextEach(func(key []byte, r *Record) {
		c := *r
		c.Key = string(key)
		c.Log = append([]int64(nil), r.Log...)
		if len(c.Log) == 0 {
			c.Log = nil
		}
		viaEach = append(viaEach, fmt.Sprintf("%+v", c))
	})
	sort.Strings(viaNext)
	sort.Strings(viaEach)
	require.NotEmpty(t, viaNext)
	require.Equal(t, viaNext, viaEach)
}

// TestFeedOverLargeTables: with tables past prefetchMinSlots (where the
// feed brings its listed records into the cache ahead of reading them,
// prefetchTags), a feed still reports each changed key once, with its
// state when read, and each deletion.
func TestFeedOverLargeTables(t *testing.T) {
	now := int64(1e12)
	e := New(2)
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
}

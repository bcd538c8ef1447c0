package persist

import (
	"bytes"
	"context"
	"fmt"
	"log/slog"
	"maps"
	"math/rand/v2"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/cockroachdb/pebble/v2"
	"github.com/cockroachdb/pebble/v2/vfs"
	"github.com/rlserver/rlserver/clock"
	"github.com/rlserver/rlserver/engine"
	"github.com/rlserver/rlserver/internal/faultfs"
	"github.com/stretchr/testify/require"
)

const t0 = int64(1_700_000_000_000_000_000)

// fill makes keys of every kind, some deleted, one flushed away and back.
func fill(t *testing.T, e *engine.Engine, n int, now int64) {
	st := e.Store()
	g, err := engine.NewGCRA(9, 10, 60)
	require.NoError(t, err)
	for i := 0; i < n; i++ {
		k := []byte(fmt.Sprint("key:", i))
		switch i % 5 {
		case 0:
			_, err = st.Throttle(k, g, 1, now)
		case 1:
			_, err = st.Limit(engine.KindFixed, k, engine.Params{Limit: 10, Window: 60e9, Cost: 2}, now)
		case 2:
			_, err = st.Limit(engine.KindLog, k, engine.Params{Limit: 10, Window: 60e9, Cost: int64(1 + i%3)}, now+int64(i))
		case 3:
			_, err = st.Limit(engine.KindSlide, k, engine.Params{Limit: 10, Window: 60e9, Cost: 1}, now)
		case 4:
			_, err = st.Limit(engine.KindBucket, k, engine.Params{Limit: 10, Window: 60e9, Rate: 7, Cost: 3}, now)
		}
		require.NoError(t, err)
	}
}

func dump(e *engine.Engine, now int64) map[string]string {
	out := map[string]string{}
	e.Dump(now, func(r engine.Record) {
		r.B = map[bool]int64{true: 0, false: r.B}[r.Kind == engine.KindLog]
		out[r.Key] = fmt.Sprintf("%+v", r)
	})
	return out
}

func openMem(t *testing.T, fs vfs.FS) *Store {
	t.Helper()
	st, err := Open(Options{Dir: "/data", FS: fs})
	require.NoError(t, err)
	return st
}

func reload(t *testing.T, fs vfs.FS, now int64) (*engine.Engine, int64) {
	t.Helper()
	st := openMem(t, fs)
	defer st.Close()
	hw, err := st.HighWater()
	require.NoError(t, err)
	e := engine.New(4)
	_, _, err = LoadEngine(st, e, now, nil)
	require.NoError(t, err)
	return e, hw
}

func TestSnapshotsRoundTrip(t *testing.T) { bothWays(t, testSnapshotsRoundTrip) }

func testSnapshotsRoundTrip(t *testing.T) {
	fs := vfs.NewMem()
	st := openMem(t, fs)
	e := engine.New(4)
	clk := clock.NewManual(t0)
	snap := NewSnapshotter(e, st, clk, nil)
	fill(t, e, 1000, t0)
	require.NoError(t, snap.Save())
	require.Equal(t, int64(0), snap.Info().ChangesSinceSave)

	// Incremental: change some, delete some, flush-free.
	_, err := clk.Advance(1e9)
	require.NoError(t, err)
	now := clk.Now()
	for i := 0; i < 1000; i += 7 {
		e.Store().Delete([]byte(fmt.Sprint("key:", i)), now)
	}
	fill(t, e, 300, now)
	require.Greater(t, snap.Info().ChangesSinceSave, int64(0))
	require.NoError(t, snap.Save())
	want := dump(e, now)
	require.NoError(t, st.Close())

	e2, hw := reload(t, fs, now)
	require.Equal(t, now, hw)
	require.Equal(t, want, dump(e2, now))

	// A FLUSHALL reaches the store; keys written after it survive.
	st = openMem(t, fs)
	e2.Store().Flush() // not tracked yet: tracking starts with the snapshotter
	snap = NewSnapshotter(e2, st, clk, nil)
	fill(t, e2, 10, now)
	e2.Store().Flush()
	fill(t, e2, 3, now)
	require.NoError(t, snap.Save())
	want = dump(e2, now)
	require.Len(t, want, 3)
	require.NoError(t, st.Close())
	e3, _ := reload(t, fs, now)
	require.Equal(t, want, dump(e3, now))

	// Expired records are dropped on load.
	e4, _ := reload(t, fs, now+3600e9)
	require.Empty(t, dump(e4, now+3600e9))
}

// TestVersion1StoreLoads: a store of format version 1 (a Pebble key per
// record), its records in codec version 1, loads to the same keys; the
// first snapshot after the load turns it into version 3, dropping the
// old records, and it loads as well.
func TestVersion1StoreLoads(t *testing.T) { bothWays(t, testVersion1StoreLoads) }

func testVersion1StoreLoads(t *testing.T) {
	fs := vfs.NewMem()
	e := engine.New(2)
	fill(t, e, 40, t0)
	for i := range 20 { // a longer log, some admissions shared
		_, err := e.Store().Limit(engine.KindLog, []byte("key:2"), engine.Params{Limit: 100, Window: 60e9, Cost: int64(1 + i%2)}, t0+int64(i/2)*1e6)
		require.NoError(t, err)
	}
	want := dump(e, t0)

	// The store as version 1 wrote it.
	db, err := pebble.Open("/data", &pebble.Options{FS: fs})
	require.NoError(t, err)
	require.NoError(t, db.Set(metaFormat, []byte("1"), nil))
	require.NoError(t, db.Set(metaClock, []byte(fmt.Sprint(t0)), nil))
	logs := 0
	e.Dump(t0, func(r engine.Record) {
		if len(r.Log) > 0 {
			logs++
		}
		require.NoError(t, db.Set([]byte("k"+r.Key), appendRecordV1(r), nil))
	})
	require.Greater(t, logs, 5, "records with a log")
	require.NoError(t, db.Close())

	e2, hw := reload(t, fs, t0)
	require.Equal(t, t0, hw)
	require.Equal(t, want, dump(e2, t0))

	// A decision and a snapshot after the load: version 3. A fold (here
	// forced at once) drops version 1's records.
	st := openMem(t, fs)
	snap := NewSnapshotter(e2, st, clock.NewManual(t0+1e9), nil)
	snap.fold = true
	_, err = e2.Store().Limit(engine.KindLog, []byte("key:2"), engine.Params{Limit: 100, Window: 60e9, Cost: 1}, t0+1e9)
	require.NoError(t, err)
	require.NoError(t, snap.Save())
	require.NoError(t, st.Close())
	require.Equal(t, "3", rawGet(t, fs, metaFormat))
	require.Zero(t, countKeys(t, fs, []byte{keyPrefix}, []byte{keyPrefix + 1}), "version 1's records are gone")
	e3, _ := reload(t, fs, t0+1e9)
	require.Equal(t, dump(e2, t0+1e9), dump(e3, t0+1e9))
}

// rawGet reads key from the store in /data as Pebble holds it.
func rawGet(t *testing.T, fs vfs.FS, key []byte) string {
	t.Helper()
	db, err := pebble.Open("/data", &pebble.Options{FS: fs, ReadOnly: true})
	require.NoError(t, err)
	defer db.Close()
	v, closer, err := db.Get(key)
	require.NoError(t, err)
	defer closer.Close()
	return string(v)
}

// countKeys counts the store's Pebble keys in [lo, hi).
// countTables counts the Pebble tables in the store at /data.
func countTables(t *testing.T, fs vfs.FS) int {
	t.Helper()
	names, err := fs.List("/data")
	require.NoError(t, err)
	n := 0
	for _, name := range names {
		if strings.HasSuffix(name, ".sst") {
			n++
		}
	}
	return n
}

func countKeys(t *testing.T, fs vfs.FS, lo, hi []byte) int {
	t.Helper()
	db, err := pebble.Open("/data", &pebble.Options{FS: fs, ReadOnly: true})
	require.NoError(t, err)
	defer db.Close()
	it, err := db.NewIter(&pebble.IterOptions{LowerBound: lo, UpperBound: hi})
	require.NoError(t, err)
	defer it.Close()
	n := 0
	for it.First(); it.Valid(); it.Next() {
		n++
	}
	return n
}

func TestDamagedStoreIsRefused(t *testing.T) { bothWays(t, testDamagedStoreIsRefused) }

func testDamagedStoreIsRefused(t *testing.T) {
	fs := vfs.NewMem()
	st := openMem(t, fs)
	e := engine.New(2)
	snap := NewSnapshotter(e, st, clock.NewManual(t0), nil)
	fill(t, e, 10, t0)
	require.NoError(t, snap.Save())
	require.NoError(t, st.Close())

	// A flipped byte in a segment: the load names the path, the chunk and the cause.
	db, err := pebble.Open("/data", &pebble.Options{FS: fs})
	require.NoError(t, err)
	it, err := db.NewIter(&pebble.IterOptions{LowerBound: []byte{segPrefix}, UpperBound: dataEnd})
	require.NoError(t, err)
	require.True(t, it.First())
	key, bad := bytes.Clone(it.Key()), bytes.Clone(it.Value())
	require.NoError(t, it.Close())
	bad[len(bad)/2] ^= 1
	require.NoError(t, db.Set(key, bad, pebble.Sync))
	require.NoError(t, db.Close())
	st = openMem(t, fs)
	_, _, err = LoadEngine(st, engine.New(2), t0, nil)
	require.ErrorIs(t, err, ErrChecksum)
	require.Contains(t, err.Error(), "/data")
	require.Contains(t, err.Error(), "segment 1 chunk 0")
	require.NoError(t, st.Close())

	// A version 1 record that fails its own checksum: named by its key.
	db, err = pebble.Open("/data", &pebble.Options{FS: fs})
	require.NoError(t, err)
	rec := appendRecordV1(engine.Record{Key: "key:3", Kind: engine.KindFixed, Deadline: t0 + 60e9, A: 2})
	rec[2] ^= 1
	require.NoError(t, db.Set([]byte("kkey:3"), rec, pebble.Sync))
	require.NoError(t, db.Close())
	st = openMem(t, fs)
	_, _, err = LoadEngine(st, engine.New(2), t0, nil)
	require.ErrorIs(t, err, ErrChecksum)
	require.Contains(t, err.Error(), `"key:3"`)
	require.NoError(t, st.Close())

	// An unknown format version: refused at open, and left as it was.
	db, err = pebble.Open("/data", &pebble.Options{FS: fs})
	require.NoError(t, err)
	require.NoError(t, db.Set([]byte("\x00format"), []byte("99"), pebble.Sync))
	require.NoError(t, db.Close())
	_, err = Open(Options{Dir: "/data", FS: fs})
	require.ErrorIs(t, err, ErrFormat)
	require.Contains(t, err.Error(), "/data")
	db, err = pebble.Open("/data", &pebble.Options{FS: fs, ReadOnly: true})
	require.NoError(t, err)
	v, closer, err := db.Get([]byte("\x00format"))
	require.NoError(t, err)
	require.Equal(t, "99", string(v))
	closer.Close()
	require.NoError(t, db.Close())
}

// TestInjectedIOErrors: write errors give errors (never panics), are
// counted, and the changes are written by the next snapshot that works.
func TestInjectedIOErrors(t *testing.T) { bothWays(t, testInjectedIOErrors) }

func testInjectedIOErrors(t *testing.T) {
	mem := vfs.NewMem()
	toggle := &faultfs.Writes{}
	fs := toggle.Wrap(mem)
	st := openMem(t, fs)
	e := engine.New(4)
	clk := clock.NewManual(t0)
	snap := NewSnapshotter(e, st, clk, nil)
	fill(t, e, 100, t0)
	require.NoError(t, snap.Save())
	fill(t, e, 200, t0)
	toggle.On()
	var failures int
	for i := 0; i < 3; i++ {
		if err := snap.Save(); err != nil {
			failures++
			require.False(t, strings.Contains(err.Error(), "panic"), err.Error())
		}
	}
	require.Greater(t, failures, 0, "injected write errors must surface")
	require.Equal(t, int64(failures), snap.Info().Errors)
	require.False(t, snap.Info().LastOK)
	toggle.Off()
	want := dump(e, t0)
	err := snap.Save()
	if err != nil {
		// Pebble may refuse further writes after a failed WAL write: then the
		// store must be reopened, and the engine still holds every change.
		t.Logf("store unusable after injected errors (%v); reopening", err)
		st.Close()
		st = openMem(t, mem)
		snap = NewSnapshotter(e, st, clk, nil)
		e.Dump(t0, func(r engine.Record) { e.Restore(r, t0) })
		b := st.NewBatch()
		e.Dump(t0, func(r engine.Record) { require.NoError(t, b.Put(r)) })
		require.NoError(t, st.Commit(b, t0, len(want)))
	}
	require.NoError(t, st.Close())
	e2, _ := reload(t, mem, t0)
	require.Equal(t, want, dump(e2, t0))
}

// TestLoadLogsProgress: a long load reports entries read, rate and time
// left.
func TestLoadLogsProgress(t *testing.T) {
	fs := vfs.NewMem()
	st := openMem(t, fs)
	e := engine.New(4)
	snap := NewSnapshotter(e, st, clock.NewManual(t0), nil)
	fill(t, e, 20_000, t0)
	require.NoError(t, snap.Save())
	require.NoError(t, st.Close())

	defer func(d time.Duration) { progressEvery = d }(progressEvery)
	progressEvery = 0 // every 4096 records, instead of every second
	var logs bytes.Buffer
	st = openMem(t, fs)
	defer st.Close()
	held, expired, err := LoadEngine(st, engine.New(4), t0, slog.New(slog.NewTextHandler(&logs, nil)))
	require.NoError(t, err)
	require.Equal(t, 20_000, held)
	require.Zero(t, expired)
	lines := strings.Split(strings.TrimSpace(logs.String()), "\n")
	require.Len(t, lines, 4, logs.String()) // at 4096, 8192, 12288, 16384 records
	require.Contains(t, lines[0], "msg=loading entries=4096 of_about=20000 entries_per_sec=")
	require.Contains(t, lines[0], "time_left=")
}

// TestLoadCountsKeysNotEntries: LoadEngine's held (INFO persistence
// keys_loaded) is the keys held after the load, not the entries read: a
// key changed in two snapshots has two entries. Its expired counts the
// entries dropped as expired, and a deletion counts in neither.
func TestLoadCountsKeysNotEntries(t *testing.T) { bothWays(t, testLoadCountsKeysNotEntries) }

func testLoadCountsKeysNotEntries(t *testing.T) {
	fs := vfs.NewMem()
	st := openMem(t, fs)
	e := engine.New(4)
	snap := NewSnapshotter(e, st, clock.NewManual(t0), nil)
	key := func(i int) []byte { return fmt.Appendf(nil, "key:%d", i) }
	charge := func(from, to int, now int64) {
		for i := from; i < to; i++ {
			_, err := e.Store().Limit(engine.KindFixed, key(i), engine.Params{Limit: 100, Window: 60e9, Cost: 1}, now)
			require.NoError(t, err)
		}
	}
	charge(0, 100, t0) // 100 entries
	require.NoError(t, snap.Save())
	charge(0, 50, t0+1e9) // keys 0-49: a second entry each
	require.NoError(t, snap.Save())
	for i := 90; i < 100; i++ {
		require.True(t, e.Store().Delete(key(i), t0+2e9))
	}
	require.NoError(t, snap.Save()) // 10 deletions
	require.Equal(t, int64(10), snap.Info().LastRecords)
	require.NoError(t, st.Close())

	for _, c := range []struct {
		now           int64
		held, expired int
	}{
		{t0 + 2e9, 90, 0},
		{t0 + 3600e9, 0, 150}, // every window over: the 150 entries that are not deletions
	} {
		st := openMem(t, fs)
		held, expired, err := LoadEngine(st, engine.New(4), c.now, nil)
		require.NoError(t, err)
		require.NoError(t, st.Close())
		require.Equal(t, c.held, held, "keys held, loaded at t0+%ds", (c.now-t0)/1e9)
		require.Equal(t, c.expired, expired, "entries expired, loaded at t0+%ds", (c.now-t0)/1e9)
	}
}

// TestExpiredKeysLeaveTheStore: a key removed by the expiry sweep is
// deleted from the store by the next snapshot.
func TestExpiredKeysLeaveTheStore(t *testing.T) { bothWays(t, testExpiredKeysLeaveTheStore) }

func testExpiredKeysLeaveTheStore(t *testing.T) {
	fs := vfs.NewMem()
	st := openMem(t, fs)
	e := engine.New(2)
	snap := NewSnapshotter(e, st, clock.NewManual(t0), nil)
	_, err := e.Store().Limit(engine.KindFixed, []byte("short"), engine.Params{Limit: 5, Window: 1e9, Cost: 1}, t0)
	require.NoError(t, err)
	_, err = e.Store().Limit(engine.KindFixed, []byte("long"), engine.Params{Limit: 5, Window: 3600e9, Cost: 1}, t0)
	require.NoError(t, err)
	require.NoError(t, snap.Save())
	require.Equal(t, int64(2), snap.Info().LastRecords)

	require.Equal(t, 1, e.Sweep(t0+2e9).Expired)
	require.NoError(t, snap.Save())
	require.Equal(t, int64(1), snap.Info().LastRecords, "the deletion")
	require.NoError(t, st.Close())

	e2, _ := reload(t, fs, t0)
	require.Equal(t, []string{"long"}, slices.Collect(maps.Keys(dump(e2, t0))), "the deletion was written")
}

// TestLoadFreesRetiredTables: a load grows the key tables step by step, with
// no sweep running yet to unmap the tables the moves empty; the load frees
// them itself, so none is left held when it returns.
func TestLoadFreesRetiredTables(t *testing.T) {
	fs := vfs.NewMem()
	st := openMem(t, fs)
	src := engine.New(1)
	for i := 0; i < 200_000; i++ {
		_, err := src.Store().Limit(engine.KindFixed, []byte(fmt.Sprint("key:", i)), engine.Params{Limit: 10, Window: 1e15, Cost: 1}, t0)
		require.NoError(t, err)
	}
	b := st.NewBatch()
	src.Dump(t0, func(r engine.Record) { require.NoError(t, b.Put(r)) })
	require.NoError(t, st.Commit(b, t0, 200_000))
	e := engine.New(1)
	held, _, err := LoadEngine(st, e, t0, nil)
	require.NoError(t, err)
	require.Equal(t, 200_000, held)
	before := e.Store().Memory().Held
	e.FreeRetired()
	require.Equal(t, before, e.Store().Memory().Held, "retired tables left held after the load")
	require.NoError(t, st.Close())
}

// TestStopWaitsForBackgroundSave: a BGSAVE whose goroutine has not begun
// when the server shuts down gives way to the final snapshot, Stop
// returns only once that goroutine has ended, and the store can then be
// closed: no save of the Snapshotter touches a closed store (pebble
// panics on one). Later BGSAVEs are refused. Before Stop existed the
// goroutine ran its save after the store had closed.
func TestStopWaitsForBackgroundSave(t *testing.T) {
	fs := vfs.NewMem()
	st := openMem(t, fs)
	e := engine.New(4)
	snap := NewSnapshotter(e, st, clock.NewManual(t0), nil)
	fill(t, e, 100, t0)
	hold, held := make(chan struct{}), make(chan struct{})
	bgHook = func() { close(held); <-hold }
	t.Cleanup(func() { bgHook = nil })
	require.NoError(t, snap.BackgroundSave())
	<-held
	stopped := make(chan struct{})
	go func() { snap.Stop(); close(stopped) }()
	select {
	case <-stopped:
		t.Fatal("Stop returned while a BGSAVE goroutine was still to run")
	case <-time.After(100 * time.Millisecond): // a check of absence: a loaded machine can only make it pass
	}
	close(hold)
	<-stopped
	require.ErrorIs(t, snap.BackgroundSave(), ErrStopped)
	require.NoError(t, snap.Save(), "the final snapshot")
	require.Equal(t, int64(1), snap.Info().Saves, "the BGSAVE gave way to the final snapshot")
	require.NoError(t, st.Close())
	e2, _ := reload(t, fs, t0)
	require.Equal(t, dump(e, t0), dump(e2, t0))
}

// TestSnapshotsFold: snapshots that each change most keys of a small
// keyspace (some deleted, one FLUSHALL) leave a bounded number of
// entries in the store, not one per change: every so often the
// snapshots fold, in steps, and the last step drops the segments before
// the first. After every snapshot, folding or not, the store loads to
// exactly the engine's keys.
func TestSnapshotsFold(t *testing.T) { bothWays(t, testSnapshotsFold) }

func testSnapshotsFold(t *testing.T) {
	fs := vfs.NewMem()
	st := openMem(t, fs)
	e := engine.New(4)
	clk := clock.NewManual(t0)
	snap := NewSnapshotter(e, st, clk, nil)
	snap.stepKeys = 100 // a fold in four steps, a shard each
	const keys, saves = 1000, 120
	r := rand.New(rand.NewPCG(3, 4))
	folds, steps, peak, tables := 0, 0, 0, 0
	for i := range saves {
		now := t0 + int64(i)*1e6
		for k := range keys {
			key := []byte(fmt.Sprint("key:", k))
			switch x := r.IntN(10); {
			case x == 0:
				e.Store().Delete(key, now)
			case x < 9:
				_, err := e.Store().Limit(engine.KindFixed, key, engine.Params{Limit: 1e9, Window: 1e15, Cost: 1}, now)
				require.NoError(t, err)
			}
		}
		if i == 70 {
			e.Store().Flush()
		}
		step := snap.foldDue()
		require.NoError(t, snap.Save())
		if step && !snap.round.on {
			folds++
		}
		if snap.round.on {
			steps++
		}
		require.NoError(t, st.Close())
		entries := 0
		st = openMem(t, fs)
		require.NoError(t, st.Load(func(engine.Record) { entries++ }))
		peak = max(peak, entries)
		require.NoError(t, st.Close())
		e2, _ := reload(t, fs, now)
		require.Equal(t, dump(e, now), dump(e2, now), "after snapshot %d", i)
		tables = max(tables, countTables(t, fs))
		st = openMem(t, fs)
		snap.store = st
	}
	require.NoError(t, st.Close())
	// Pebble's tables stay few: a fold's dropped segments are removed,
	// not only hidden (in 120 snapshots, one table each when ingested).
	require.LessOrEqual(t, tables, 60, "tables in the store at most")
	require.GreaterOrEqual(t, folds, 2, "the snapshots folded")
	require.Equal(t, 3*folds, steps, "each fold in four steps")
	require.LessOrEqual(t, peak, foldRatio*foldMin+(e.Shards()+2)*keys*2, "entries in the store at most")
}

// TestFailedSnapshotFoldsNext: after a snapshot fails, the next one
// writes every key at once and drops every segment before it.
func TestFailedSnapshotFoldsNext(t *testing.T) { bothWays(t, testFailedSnapshotFoldsNext) }

func testFailedSnapshotFoldsNext(t *testing.T) {
	mem := vfs.NewMem()
	toggle := &faultfs.Writes{}
	st := openMem(t, toggle.Wrap(mem))
	e := engine.New(4)
	snap := NewSnapshotter(e, st, clock.NewManual(t0), nil)
	fill(t, e, 100, t0)
	require.NoError(t, snap.Save())
	fill(t, e, 20, t0+1)
	toggle.On()
	require.Error(t, snap.Save())
	toggle.Off()
	require.True(t, snap.fold)
	if err := snap.Save(); err != nil { // Pebble may refuse writes until reopened
		require.NoError(t, snap.Save())
	}
	require.Equal(t, int64(e.Store().Len()), snap.Info().LastRecords, "every key")
	require.NoError(t, st.Close())
	e2, _ := reload(t, mem, t0+1)
	require.Equal(t, dump(e, t0+1), dump(e2, t0+1))
	require.Equal(t, 1, countKeys(t, mem, []byte{segPrefix}, dataEnd), "one segment of one chunk")
}

// TestUncommittedSegmentIsNotLive: a large segment is ingested before
// the meta that makes it live is committed. A crash between the two
// leaves a segment the store does not name: a load skips it, the next
// segment gets a number above it, and the next fold removes it.
func TestUncommittedSegmentIsNotLive(t *testing.T) {
	defer func(was int) { ingestMin = was }(ingestMin)
	ingestMin = 0
	fs := vfs.NewMem()
	st := openMem(t, fs)
	e := engine.New(4)
	clk := clock.NewManual(t0)
	snap := NewSnapshotter(e, st, clk, nil)
	fill(t, e, 100, t0)
	require.NoError(t, snap.Save())
	want := dump(e, t0)

	// The crash: a segment ingested, its commit never made.
	b := st.NewBatch()
	require.NotNil(t, b.w, "written as a table")
	require.NoError(t, b.Put(engine.Record{Key: "ghost", Kind: engine.KindFixed, Deadline: t0 + 60e9, A: 1}))
	require.NoError(t, b.Put(engine.Record{Key: "key:1"})) // a deletion
	b.setChunk(b.open, nil)
	require.NoError(t, b.w.Close())
	require.NoError(t, st.db.Ingest(context.Background(), []string{b.path}))
	ghost := b.Seq()
	require.NoError(t, st.Close())
	require.Equal(t, 2, countKeys(t, fs, []byte{segPrefix}, dataEnd), "two segments stored")

	e2, _ := reload(t, fs, t0)
	require.Equal(t, want, dump(e2, t0), "the uncommitted segment is not loaded")

	st = openMem(t, fs)
	require.Greater(t, st.next, ghost, "its number is not used again")
	snap = NewSnapshotter(e, st, clk, nil)
	snap.fold = true // as after a failed snapshot: every key, older segments dropped
	require.NoError(t, snap.Save())
	require.NoError(t, st.Close())
	require.Equal(t, 1, countKeys(t, fs, []byte{segPrefix}, dataEnd), "the fold removed it")
	e3, _ := reload(t, fs, t0)
	require.Equal(t, want, dump(e3, t0))
}

// TestFoldsSurviveRestarts: the count of entries since the last fold is
// kept in the store, so a server restarted after every snapshot still
// folds, and its store stays bounded instead of growing with every
// snapshot.
func TestFoldsSurviveRestarts(t *testing.T) { bothWays(t, testFoldsSurviveRestarts) }

func testFoldsSurviveRestarts(t *testing.T) {
	fs := vfs.NewMem()
	const keys, restarts = 1000, 100
	r := rand.New(rand.NewPCG(5, 6))
	peak, folds := 0, 0
	var was [2]any
	for i := range restarts {
		now := t0 + int64(i)*1e6
		st := openMem(t, fs)
		e := engine.New(4)
		_, _, err := LoadEngine(st, e, now, nil)
		require.NoError(t, err)
		snap := NewSnapshotter(e, st, clock.NewManual(now), nil)
		snap.stepKeys = 100
		if i > 0 {
			require.Equal(t, was, [2]any{snap.sinceFold, snap.round}, "restart %d: where folding stood was lost", i)
		}
		for k := range keys {
			if r.IntN(10) < 9 {
				_, err := e.Store().Limit(engine.KindFixed, []byte(fmt.Sprint("key:", k)), engine.Params{Limit: 1e9, Window: 1e15, Cost: 1}, now)
				require.NoError(t, err)
			}
		}
		require.NoError(t, snap.Save())
		was = [2]any{snap.sinceFold, snap.round}
		folds += boolInt(snap.sinceFold == 0)
		want := dump(e, now)
		require.NoError(t, st.Close())
		entries := 0
		st = openMem(t, fs)
		require.NoError(t, st.Load(func(engine.Record) { entries++ }))
		require.NoError(t, st.Close())
		peak = max(peak, entries)
		e2, _ := reload(t, fs, now)
		require.Equal(t, want, dump(e2, now), "after restart %d", i)
	}
	require.GreaterOrEqual(t, folds, 2, "the snapshots folded")
	require.LessOrEqual(t, peak, foldRatio*foldMin+(4+2)*keys*2, "entries in the store at most")
}

func boolInt(b bool) int {
	if b {
		return 1
	}
	return 0
}

// TestFoldUnderWayRestartsWithOtherShards: a fold under way at a
// restart goes on only if the engine has as many shards as before (its
// steps dump shards, and a key's shard follows their count); otherwise
// it starts again at the first shard, its count kept.
func TestFoldUnderWayRestartsWithOtherShards(t *testing.T) {
	fs := vfs.NewMem()
	st := openMem(t, fs)
	e := engine.New(4)
	snap := NewSnapshotter(e, st, clock.NewManual(t0), nil)
	snap.stepKeys = 100
	fill(t, e, 1000, t0)
	snap.sinceFold = foldRatio*foldMin + 1 // a fold is due
	require.NoError(t, snap.Save())
	require.True(t, snap.round.on, "a fold under way")
	was := snap.round
	require.NoError(t, st.Close())

	for _, c := range []struct {
		shards int
		round  foldRound
	}{{4, was}, {8, foldRound{}}} {
		st = openMem(t, fs)
		e2 := engine.New(c.shards)
		_, _, err := LoadEngine(st, e2, t0, nil)
		require.NoError(t, err)
		snap2 := NewSnapshotter(e2, st, clock.NewManual(t0), nil)
		require.Equal(t, c.round, snap2.round, "%d shards", c.shards)
		require.Equal(t, snap.sinceFold, snap2.sinceFold)
		require.NoError(t, st.Close())
	}
}

// TestTableChunksMatchBatchChunks: a segment written as a table has the
// same chunks, key for key and byte for byte, as one written in a
// batch, entries of every size among them (one longer than a chunk).
func TestTableChunksMatchBatchChunks(t *testing.T) {
	r := rand.New(rand.NewPCG(7, 8))
	var entries []byte
	count := 0
	for len(entries) < 6*chunkSize {
		n := r.IntN(600)
		if count == 500 {
			n = chunkSize + 1000 // an entry longer than a chunk
		}
		entries = AppendStateEntry(entries, []byte(fmt.Sprint("key:", count)), engine.KindLog, bytes.Repeat([]byte{byte(count)}, n))
		count++
	}
	chunks := map[string]map[string]string{}
	for _, c := range ways {
		func() {
			defer func(was int) { ingestMin = was }(ingestMin)
			ingestMin = c.min
			fs := vfs.NewMem()
			st := openMem(t, fs)
			b := st.NewBatch()
			require.Equal(t, c.name == "ingest", b.w != nil)
			require.NoError(t, b.Put(engine.Record{Key: "first", Kind: engine.KindFixed, Deadline: t0, A: 1}))
			half := EntryEnd(entries, 0)
			for half < len(entries)/2 {
				half = EntryEnd(entries, half)
			}
			require.Equal(t, count, b.Append(entries[:half])+b.Append(entries[half:]))
			require.NoError(t, b.Put(engine.Record{Key: "last", Kind: engine.KindFixed, Deadline: t0, A: 2}))
			require.NoError(t, st.Commit(b, t0, count))
			require.NoError(t, st.Close())
			db, err := pebble.Open("/data", &pebble.Options{FS: fs, ReadOnly: true})
			require.NoError(t, err)
			defer db.Close()
			it, err := db.NewIter(&pebble.IterOptions{LowerBound: []byte{segPrefix}, UpperBound: dataEnd})
			require.NoError(t, err)
			defer it.Close()
			chunks[c.name] = map[string]string{}
			for it.First(); it.Valid(); it.Next() {
				chunks[c.name][string(it.Key())] = string(it.Value())
			}
		}()
	}
	require.Greater(t, len(chunks["batch"]), 4)
	sizes := map[string][]string{}
	for name, cs := range chunks {
		for _, k := range slices.Sorted(maps.Keys(cs)) {
			sizes[name] = append(sizes[name], fmt.Sprintf("%x:%d", k, len(cs[k])))
		}
	}
	require.Equal(t, sizes["batch"], sizes["ingest"], "chunks and their sizes")
	require.True(t, maps.Equal(chunks["batch"], chunks["ingest"]), "the chunks' bytes differ")
}

// TestVersion2StoreLoads: a store of format version 2 (segments, with
// no meta naming the live ones or where folding stands) loads every
// segment; the next snapshot makes it version 3, and it loads as well.
func TestVersion2StoreLoads(t *testing.T) { bothWays(t, testVersion2StoreLoads) }

func testVersion2StoreLoads(t *testing.T) {
	fs := vfs.NewMem()
	st := openMem(t, fs)
	e := engine.New(4)
	snap := NewSnapshotter(e, st, clock.NewManual(t0), nil)
	fill(t, e, 100, t0)
	require.NoError(t, snap.Save())
	fill(t, e, 30, t0+1) // a second segment
	require.NoError(t, snap.Save())
	require.NoError(t, st.Close())
	want := dump(e, t0+1)

	// As version 2 left it.
	db, err := pebble.Open("/data", &pebble.Options{FS: fs})
	require.NoError(t, err)
	require.NoError(t, db.Set(metaFormat, []byte("2"), nil))
	require.NoError(t, db.Delete(metaLive, nil))
	require.NoError(t, db.Delete(metaFold, nil))
	require.NoError(t, db.Close())
	require.Equal(t, 2, countKeys(t, fs, []byte{segPrefix}, dataEnd), "two segments")

	e2, _ := reload(t, fs, t0+1)
	require.Equal(t, want, dump(e2, t0+1))

	st = openMem(t, fs)
	require.Equal(t, uint64(3), st.next, "numbering goes on above the stored segments")
	snap = NewSnapshotter(e2, st, clock.NewManual(t0+2), nil)
	fill(t, e2, 10, t0+2)
	require.NoError(t, snap.Save())
	require.NoError(t, st.Close())
	require.Equal(t, "3", rawGet(t, fs, metaFormat))
	require.Equal(t, "0 3", rawGet(t, fs, metaLive))
	e3, _ := reload(t, fs, t0+2)
	require.Equal(t, dump(e2, t0+2), dump(e3, t0+2))
}

// TestSnapshotKeepsItsBuffer: a small snapshot after a large one (a fold
// step and the snapshots around it) keeps the large one's buffer, so the
// next large one does not grow a new buffer by doubling; once snapshots
// stay small for some ten of them, the large buffer is let go.
func TestSnapshotKeepsItsBuffer(t *testing.T) {
	st, err := Open(Options{Dir: t.TempDir()})
	require.NoError(t, err)
	defer st.Close()
	e := engine.New(16)
	// 200,000 keys held before the snapshotter's feed starts: none of
	// its snapshots writes them all, and no fold comes in the 150,000
	// entries written below (one is due past foldRatio entries a key).
	fillThrottle(t, e, 0, 200_000, t0)
	snap := NewSnapshotter(e, st, clock.NewManual(t0), nil)
	now := t0
	save := func(keys int) {
		t.Helper()
		now++
		fillThrottle(t, e, 0, keys, now) // every call changes its key
		require.NoError(t, snap.Save())
		require.Equal(t, int64(keys), snap.lastCount.Load(), "a snapshot writes what changed")
	}
	save(20_000) // some 500 KB: four times a small one and a chunk more
	kept := cap(snap.buf)
	require.NotZero(t, kept)
	for i := range 5 {
		for _, keys := range []int{500, 20_000} {
			save(keys)
			require.Equal(t, kept, cap(snap.buf), "round %d: after a snapshot of %d changes, the buffer is the one grown before", i, keys)
		}
	}
	for range 30 {
		save(500)
	}
	require.Less(t, cap(snap.buf), kept/4, "a large buffer is let go once snapshots stay small")
}

// TestSnapshotKeepsTheFoldsBuffer: the buffer a fold step grew is kept
// through the small snapshots between folds, however many: the next
// fold's steps need it again.
func TestSnapshotKeepsTheFoldsBuffer(t *testing.T) {
	st, err := Open(Options{Dir: t.TempDir()})
	require.NoError(t, err)
	defer st.Close()
	e := engine.New(4)
	snap := NewSnapshotter(e, st, clock.NewManual(t0), nil)
	snap.minFold = 1
	now := t0
	for !snap.foldDue() { // every key written three times: a fold is due
		now++
		fillThrottle(t, e, 0, 100_000, now)
		require.NoError(t, snap.Save())
	}
	now++
	require.NoError(t, snap.Save()) // a fold in one step: every key
	require.False(t, snap.round.on)
	kept := cap(snap.buf)
	require.Greater(t, kept, 100_000*20, "the buffer holds a dump")
	for range 40 { // small snapshots, no fold due
		now++
		fillThrottle(t, e, 0, 100, now)
		require.False(t, snap.foldDue())
		require.NoError(t, snap.Save())
		require.Equal(t, kept, cap(snap.buf), "kept between folds")
	}
}

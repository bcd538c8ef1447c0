package persist

import (
	"fmt"
	"math/rand/v2"
	"testing"

	"github.com/cockroachdb/pebble/v2/vfs"
	"github.com/rlserver/rlserver/clock"
	"github.com/rlserver/rlserver/engine"
	"github.com/rlserver/rlserver/internal/faultfs"
	"github.com/stretchr/testify/require"
)

// storeEntries counts a store's entries and, among them, RL.LOG's deltas.
func storeEntries(t *testing.T, fs vfs.FS) (entries, deltas int) {
	t.Helper()
	st := openMem(t, fs)
	defer st.Close()
	require.NoError(t, st.LoadDeltas(func(engine.Record) { entries++ }, func(_, _ []byte) error {
		entries++
		deltas++
		return nil
	}))
	return entries, deltas
}

// TestLogDeltasSurviveFoldsAndRestarts: a store whose snapshots write
// RL.LOG's deltas loads, after every snapshot, to what the engine holds:
// through folds in steps (whose last step drops the segments that held
// some deltas' bases), deletions, a flush and keys of other kinds. The
// deltas keep the store near the bytes of whole records: it folds, and
// holds at most about foldRatio+1 keyspaces' worth.
func TestLogDeltasSurviveFoldsAndRestarts(t *testing.T) {
	bothWays(t, testLogDeltasSurviveFoldsAndRestarts)
}

func testLogDeltasSurviveFoldsAndRestarts(t *testing.T) {
	fs := vfs.NewMem()
	st := openMem(t, fs)
	e := engine.New(4)
	clk := clock.NewManual(t0)
	snap := NewSnapshotter(e, st, clk, nil)
	snap.stepKeys, snap.minFold = 100, 100 // a fold in four steps, a shard each
	const keys, saves = 400, 150
	r := rand.New(rand.NewPCG(5, 6))
	folds, peakDeltas := 0, 0
	for i := range saves {
		now := t0 + int64(i)*1e9
		for k := range keys {
			key := []byte(fmt.Sprint("key:", k))
			var err error
			switch x := r.IntN(100); {
			case x < 2:
				e.Store().Delete(key, now)
			case k%4 == 0:
				_, err = e.Store().Limit(engine.KindFixed, key, engine.Params{Limit: 1e9, Window: 1e15, Cost: 1}, now)
			case x < 60:
				_, err = e.Store().Limit(engine.KindLog, key, engine.Params{Limit: 1e9, Window: 100e9, Cost: int64(1 + x%3)}, now+int64(x))
			}
			require.NoError(t, err)
		}
		if i == 100 {
			e.Store().Flush()
		}
		step := snap.foldDue()
		require.NoError(t, snap.Save())
		if step && !snap.round.on {
			folds++
		}
		require.NoError(t, st.Close())
		_, deltas := storeEntries(t, fs)
		peakDeltas = max(peakDeltas, deltas)
		e2, _ := reload(t, fs, now)
		require.Equal(t, dump(e, now), dump(e2, now), "after snapshot %d", i)
		st = openMem(t, fs)
		snap.store = st
	}
	require.NoError(t, st.Close())
	require.Greater(t, peakDeltas, keys, "the store held deltas")
	require.GreaterOrEqual(t, folds, 2, "the snapshots folded")
	// Weighed by their bytes, deltas fold less often than whole records
	// would: every snapshot changes about 0.6 of the keys, so whole
	// records would fold every few snapshots.
	t.Logf("%d folds; at most %d deltas in the store", folds, peakDeltas)
}

// TestWeighed: a snapshot's entries count towards a fold by the share of
// whole records' bytes they took.
func TestWeighed(t *testing.T) {
	for _, tc := range []struct {
		n, size, saved int
		want           int64
	}{
		{100, 4000, 0, 100},    // no deltas: every entry counts
		{100, 4000, 28000, 12}, // deltas an eighth of whole records
		{100, 4000, 4000, 50},  // half
		{1, 40, 1 << 30, 1},    // at least one
		{0, 0, 0, 0},           // nothing written
		{10, 400, -5, 10},      // no saving counts as none
	} {
		require.Equal(t, tc.want, weighed(tc.n, tc.size, tc.saved), "%+v", tc)
	}
}

// TestDeltaOverAnExpiredBase: a log's base may have expired by the time
// the store is loaded while the delta on it has not (the log went on
// under a longer window). The load keeps the base until the delta is
// applied, and the key comes back whole.
func TestDeltaOverAnExpiredBase(t *testing.T) {
	fs := vfs.NewMem()
	st := openMem(t, fs)
	e := engine.New(1)
	clk := clock.NewManual(t0)
	snap := NewSnapshotter(e, st, clk, nil)
	key := []byte("log")
	short := engine.Params{Limit: 1000, Window: 100e9, Cost: 1}
	for i := range 30 {
		_, err := e.Store().Limit(engine.KindLog, key, short, t0+int64(i)*1e9)
		require.NoError(t, err)
	}
	require.NoError(t, snap.Save()) // whole: deadline t0 + 129 s
	long := engine.Params{Limit: 1000, Window: 1000e9, Cost: 1}
	_, err := e.Store().Limit(engine.KindLog, key, long, t0+40e9)
	require.NoError(t, err)
	require.NoError(t, snap.Save()) // a delta: deadline t0 + 1040 s
	require.NoError(t, st.Close())
	_, deltas := storeEntries(t, fs)
	require.Equal(t, 1, deltas)

	at := t0 + 500e9 // the base expired, the delta not
	e2, _ := reload(t, fs, at)
	require.Equal(t, dump(e, at), dump(e2, at))
	require.Len(t, dump(e2, at), 1)
	r, err := e2.Store().Limit(engine.KindLog, key, engine.Params{Limit: 31, Window: 1000e9, Cost: 1}, at)
	require.NoError(t, err)
	require.True(t, r.Limited, "31 units within the window: the base's 30 and the delta's one")

	// Loaded after the delta's deadline too, nothing is left.
	e3, _ := reload(t, fs, t0+2000e9)
	require.Empty(t, dump(e3, t0+2000e9))
	require.Zero(t, e3.Store().Len())
}

// TestFailedSnapshotAmongDeltas: a snapshot of deltas that fails to be
// written took its changes from the feed, so the deltas of the next
// would be on top of entries the store never got. The next snapshot
// writes every key whole instead, and the deltas after it load.
func TestFailedSnapshotAmongDeltas(t *testing.T) { bothWays(t, testFailedSnapshotAmongDeltas) }

func testFailedSnapshotAmongDeltas(t *testing.T) {
	mem := vfs.NewMem()
	toggle := &faultfs.Writes{}
	st := openMem(t, toggle.Wrap(mem))
	e := engine.New(4)
	snap := NewSnapshotter(e, st, clock.NewManual(t0), nil)
	p := engine.Params{Limit: 1e9, Window: 600e9, Cost: 1}
	second := 0
	admit := func() {
		for k := range 200 {
			_, err := e.Store().Limit(engine.KindLog, []byte(fmt.Sprint("log:", k)), p, t0+int64(second)*1e9)
			require.NoError(t, err)
		}
		second++
	}
	for range 20 {
		admit()
		require.NoError(t, snap.Save())
	}
	admit()
	toggle.On()
	require.Error(t, snap.Save())
	toggle.Off()
	admit()
	if err := snap.Save(); err != nil { // Pebble may refuse writes until reopened
		require.NoError(t, snap.Save())
	}
	for range 3 {
		admit()
		require.NoError(t, snap.Save())
	}
	require.NoError(t, st.Close())
	_, deltas := storeEntries(t, mem)
	require.Equal(t, 3*200, deltas, "the snapshots after the whole one wrote deltas")
	now := t0 + int64(second)*1e9
	e2, _ := reload(t, mem, now)
	require.Equal(t, dump(e, now), dump(e2, now))
	require.Len(t, dump(e2, now), 200)
}

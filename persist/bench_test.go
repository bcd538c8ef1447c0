package persist

import (
	"fmt"
	"testing"
	"time"

	"github.com/rlserver/rlserver/clock"
	"github.com/rlserver/rlserver/engine"
	"github.com/stretchr/testify/require"
)

const benchKeys = 1_000_000

func fillThrottle(b testing.TB, e *engine.Engine, from, n int, now int64) {
	st := e.Store()
	g, _ := engine.NewGCRA(99, 100, 3600)
	for i := from; i < from+n; i++ {
		if _, err := st.Throttle([]byte(fmt.Sprint("user:", i%benchKeys)), g, 1, now); err != nil {
			b.Fatal(err)
		}
	}
}

// BenchmarkSnapshot compares a full snapshot of 1M keys with an
// incremental one after 1% of them changed, on the OS file system with a
// synced commit. Run with -benchtime 5x.
func BenchmarkSnapshot(b *testing.B) {
	for _, tc := range []struct {
		name    string
		changed int
	}{{"full-1M", benchKeys}, {"incremental-1pct-of-1M", benchKeys / 100}} {
		b.Run(tc.name, func(b *testing.B) {
			st, err := Open(Options{Dir: b.TempDir()})
			require.NoError(b, err)
			defer st.Close()
			e := engine.New(16)
			clk := clock.NewManual(t0)
			snap := NewSnapshotter(e, st, clk, nil)
			fillThrottle(b, e, 0, benchKeys, t0)
			require.NoError(b, snap.Save())
			// Let Pebble absorb the initial 1M-key batch (its memtable flush
			// would otherwise land on the first measured snapshot).
			require.NoError(b, st.db.Flush())
			b.ResetTimer()
			for i := 0; i < b.N; i++ {
				b.StopTimer()
				if tc.changed == benchKeys {
					fillThrottle(b, e, 0, benchKeys, t0+int64(i+1)) // every key changes
				} else {
					fillThrottle(b, e, i*tc.changed, tc.changed, t0+int64(i+1))
				}
				b.StartTimer()
				require.NoError(b, snap.Save())
			}
			b.ReportMetric(float64(tc.changed), "keys/snapshot")
		})
	}
}

// BenchmarkLoad loads a store of 1M keys into a fresh engine.
func BenchmarkLoad(b *testing.B) {
	dir := b.TempDir()
	st, err := Open(Options{Dir: dir})
	require.NoError(b, err)
	e := engine.New(16)
	snap := NewSnapshotter(e, st, clock.NewManual(t0), nil)
	fillThrottle(b, e, 0, benchKeys, t0)
	require.NoError(b, snap.Save())
	require.NoError(b, st.Close())
	b.ResetTimer()
	for i := 0; i < b.N; i++ {
		st, err := Open(Options{Dir: dir})
		require.NoError(b, err)
		held, _, err := LoadEngine(st, engine.New(16), t0, nil)
		require.NoError(b, err)
		require.Equal(b, benchKeys, held)
		st.Close()
	}
	b.ReportMetric(float64(benchKeys), "keys")
}

// TestIncrementalSnapshotWritesOnlyChanges: after 1% of 100k keys change,
// the snapshot writes those keys only: its cost follows the changes, not
// the keyspace.
func TestIncrementalSnapshotWritesOnlyChanges(t *testing.T) {
	st, err := Open(Options{Dir: t.TempDir()})
	require.NoError(t, err)
	defer st.Close()
	e := engine.New(16)
	snap := NewSnapshotter(e, st, clock.NewManual(t0), nil)
	fillThrottle(t, e, 0, 100_000, t0)
	require.Equal(t, int64(100_000), snap.Info().ChangesSinceSave)
	require.NoError(t, snap.Save())
	require.Equal(t, int64(100_000), snap.Info().LastRecords)
	fillThrottle(t, e, 0, 1000, t0+1)
	require.Equal(t, int64(1000), snap.Info().ChangesSinceSave)
	require.NoError(t, snap.Save())
	require.Equal(t, int64(1000), snap.Info().LastRecords)
	require.NoError(t, snap.Save())
	require.Equal(t, int64(0), snap.Info().LastRecords)
}

// BenchmarkAppendRecord is the encoding of one record in persistence's
// format, as a snapshot, a full sync and a moved slot make it (a write's
// change goes to replicas in the engine's layout instead): a CL.THROTTLE
// record with a 16-byte name.
func BenchmarkAppendRecord(b *testing.B) {
	r := engine.Record{Key: "rl:gcra:00012345", Kind: engine.KindThrottle, Deadline: 1_764_892_800_123_456_789, A: 1_764_892_799_000_000_000, B: 600_000_000}
	var buf []byte
	b.ReportAllocs()
	for b.Loop() {
		buf = AppendRecord(buf[:0], r)
	}
	if len(buf) == 0 {
		b.Fatal("nothing encoded")
	}
}

// BenchmarkManyTables is a store that ingests every segment as a table of
// its own (ingestMin 1) and folds rarely (1,000 changes a snapshot against
// 1,000,000 keys: a fold after some 2,000 snapshots): how the snapshot's
// time and the load's change as Pebble's table count grows. It reports the
// mean ms a snapshot over the first and the last 10% of -benchtime
// snapshots, the tables at the end and the load's ms. Run with
// -benchtime 2000x.
func BenchmarkManyTables(b *testing.B) {
	defer func(was int) { ingestMin = was }(ingestMin)
	ingestMin = 1
	dir := b.TempDir()
	st, err := Open(Options{Dir: dir})
	require.NoError(b, err)
	e := engine.New(16)
	snap := NewSnapshotter(e, st, clock.NewManual(t0), nil)
	fillThrottle(b, e, 0, benchKeys, t0)
	require.NoError(b, snap.Save())
	require.NoError(b, st.db.Flush())
	tenth := max(b.N/10, 1)
	var first, last time.Duration
	b.ResetTimer()
	for i := 0; i < b.N; i++ {
		fillThrottle(b, e, (i*1000)%benchKeys, 1000, t0+int64(i+1))
		t := time.Now()
		require.NoError(b, snap.Save())
		d := time.Since(t)
		if i < tenth {
			first += d
		}
		if i >= b.N-tenth {
			last += d
		}
	}
	b.StopTimer()
	tables := st.db.Metrics().Total().TablesCount
	require.NoError(b, st.Close())
	t := time.Now()
	st, err = Open(Options{Dir: dir})
	require.NoError(b, err)
	held, _, err := LoadEngine(st, engine.New(16), t0, nil)
	require.NoError(b, err)
	require.Equal(b, benchKeys, held)
	load := time.Since(t)
	require.NoError(b, st.Close())
	ms := func(d time.Duration, n int) float64 { return float64(d.Microseconds()) / 1e3 / float64(n) }
	b.ReportMetric(ms(first, tenth), "ms/first-snapshots")
	b.ReportMetric(ms(last, tenth), "ms/last-snapshots")
	b.ReportMetric(float64(tables), "tables")
	b.ReportMetric(ms(load, 1), "ms/load")
}

// BenchmarkLoadLogs loads 100,000 RL.LOG keys of 60 runs each: from a
// store of one snapshot of them all (whole), and from a store written
// the way a busy server writes one, a snapshot a second with an
// admission per key each (deltas on top of folds). Run with -benchtime 3x.
func BenchmarkLoadLogs(b *testing.B) {
	const keys, runs = 100_000, 60
	p := engine.Params{Limit: 1e9, Window: 3600e9, Cost: 1}
	admit := func(e *engine.Engine, now int64) {
		for k := range keys {
			if _, err := e.Store().Limit(engine.KindLog, []byte(fmt.Sprint("user:", k)), p, now); err != nil {
				b.Fatal(err)
			}
		}
	}
	for _, steady := range []bool{false, true} {
		name := map[bool]string{false: "one-snapshot", true: "a-snapshot-a-second"}[steady]
		b.Run(name, func(b *testing.B) {
			dir := b.TempDir()
			st, err := Open(Options{Dir: dir})
			require.NoError(b, err)
			e := engine.New(16)
			snap := NewSnapshotter(e, st, clock.NewManual(t0), nil)
			for i := range runs {
				admit(e, t0+int64(i)*1e9)
				if steady || i == runs-1 {
					require.NoError(b, snap.Save())
				}
			}
			require.NoError(b, st.Close())
			entries := 0
			b.ResetTimer()
			for i := 0; i < b.N; i++ {
				st, err := Open(Options{Dir: dir})
				require.NoError(b, err)
				held, _, err := LoadEngine(st, engine.New(16), t0+runs*1e9, nil)
				require.NoError(b, err)
				require.Equal(b, keys, held)
				b.StopTimer()
				entries = 0
				require.NoError(b, st.LoadDeltas(func(engine.Record) { entries++ }, func(_, _ []byte) error { entries++; return nil }))
				b.StartTimer()
				st.Close()
			}
			b.ReportMetric(float64(entries), "entries")
		})
	}
}

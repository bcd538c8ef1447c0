package persist

import (
	"math"
	"testing"

	"github.com/cockroachdb/pebble/v2/vfs"
	"github.com/rlserver/rlserver/clock"
	"github.com/rlserver/rlserver/engine"
	"github.com/stretchr/testify/require"
)

// TestFarExpiriesSurviveAReload: CL.THROTTLE keys whose Redis expiry lies
// past the ns deadlines (docs/cl-throttle.md §6.4) keep it exactly across
// a snapshot and a restart, and a record as rlserver wrote it before (the
// deadline capped, B 0) still loads, with the expiry it had.
func TestFarExpiriesSurviveAReload(t *testing.T) { bothWays(t, testFarExpiriesSurviveAReload) }

func testFarExpiriesSurviveAReload(t *testing.T) {
	const capped = math.MaxInt64 - 1 // the deadline every ns deadline was capped at
	nowMs := t0 / 1_000_000
	fs := vfs.NewMem()
	st := openMem(t, fs)
	e := engine.New(4)
	snap := NewSnapshotter(e, st, clock.NewManual(t0), nil)
	g, err := engine.NewGCRA(0, 1, math.MaxInt64)
	require.NoError(t, err)
	_, err = e.Store().Throttle([]byte("ps"), g, 1, t0)
	require.NoError(t, err)
	written, err := e.Store().SetThrottle([]byte("m"), 1, math.MaxInt64, false, engine.SetAlways, t0)
	require.NoError(t, err)
	require.True(t, written)
	e.Apply(engine.Record{Key: "old", Kind: engine.KindThrottle, Deadline: capped, A: 42}, t0)
	want := map[string]engine.Life{
		"ps":  {Found: true, Ms: 9223372036854},
		"m":   {Found: true, Ms: math.MaxInt64 - nowMs},
		"old": {Found: true, Ms: (capped-t0+999_999)/1_000_000 - 1},
	}
	for k, l := range want {
		require.Equal(t, l, e.Store().Life([]byte(k), t0), k)
	}
	require.NoError(t, snap.Save())
	require.NoError(t, st.Close())

	e2, _ := reload(t, fs, t0)
	require.Equal(t, dump(e, t0), dump(e2, t0))
	for k, l := range want {
		require.Equal(t, l, e2.Store().Life([]byte(k), t0), k)
	}
}

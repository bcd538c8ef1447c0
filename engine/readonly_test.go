package engine

import (
	"testing"

	"github.com/stretchr/testify/require"
)

// TestReadOnlyStoreChangesNothing: through ReadOnly, CL.THROTTLE of
// quantity 0 (which redis-cell stores) and 1, and RL.* calls with and
// without cost, answer as a writable Store over the same keyspace would,
// and leave the keyspace as it was: a replica's peeks.
func TestReadOnlyStoreChangesNothing(t *testing.T) {
	const now = int64(1_700_000_000_000_000_000)
	g, err := NewGCRA(15, 30, 60)
	require.NoError(t, err)
	filled := func() *Engine {
		e := New(4)
		_, err := e.Store().Throttle([]byte("held"), g, 3, now)
		require.NoError(t, err)
		return e
	}
	e := filled()
	tat, _, err := e.Store().GetThrottle([]byte("held"), now)
	require.NoError(t, err)
	ro := e.Store().ReadOnly()
	for _, q := range []int64{0, 1} {
		for _, key := range []string{"held", "fresh"} {
			got, err := ro.Throttle([]byte(key), g, q, now+1e9)
			require.NoError(t, err)
			want, err := filled().Store().Throttle([]byte(key), g, q, now+1e9)
			require.NoError(t, err)
			require.Equal(t, want, got, "q=%d key=%s", q, key)
		}
	}
	for _, kind := range []Kind{KindFixed, KindLog, KindSlide, KindBucket} {
		for _, cost := range []int64{0, 1} {
			p := Params{Limit: 10, Window: 60e9, Rate: 10, Cost: cost}
			r, err := ro.Limit(kind, []byte("rl"), p, now)
			require.NoError(t, err)
			require.Equal(t, 10-cost, r.Remaining, "%s cost %d", kind.Name(), cost)
		}
	}
	require.Equal(t, 1, e.Store().Len(), "only the key written before")
	after, found, err := e.Store().GetThrottle([]byte("held"), now)
	require.NoError(t, err)
	require.True(t, found)
	require.Equal(t, tat, after, "its TAT untouched")
}

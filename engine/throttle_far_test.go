package engine

import (
	"math"
	"testing"

	"github.com/stretchr/testify/require"
)

// TestThrottleFarExpiry: a CL.THROTTLE key whose Redis expiry lies past
// the ns deadlines' range keeps that expiry exactly (cl-throttle.md §6.4):
// PTTL counts down to it, the key outlives every clock reading, and the
// state carries it through Dump and Restore (persistence, replication,
// slot moves). A record written before farMs existed still loads, with
// the capped answer it always had.
func TestThrottleFarExpiry(t *testing.T) {
	const now = int64(1_700_000_000_000_000_000) // mstime() = 1700000000000
	const nowMs = now / 1_000_000
	for _, tc := range []struct {
		name  string
		expMs int64 // Redis's expiry, absolute ms
		far   bool  // beyond the ns deadlines
	}{
		{"last ms in ns reach", farFromMs - 1, false},
		{"first ms beyond", farFromMs, true},
		{"period 2^63-1 s", nowMs + 9223372036854, true},
		{"PXAT 2^63-1", math.MaxInt64, true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			e := New(4)
			st := e.Store()
			key := []byte("k")
			written, err := st.SetThrottle(key, 42, tc.expMs, false, SetAlways, now)
			require.NoError(t, err)
			require.True(t, written)
			require.Equal(t, Life{Found: true, Ms: tc.expMs - nowMs}, st.Life(key, now))

			var recs []Record
			e.Dump(now, func(r Record) { recs = append(recs, r) })
			require.Len(t, recs, 1)
			r := recs[0]
			require.Equal(t, tc.far, r.Deadline == farDeadline, "deadline %d", r.Deadline)
			if tc.far {
				require.Equal(t, tc.expMs, r.B)
			} else {
				require.Equal(t, (tc.expMs+1)*1_000_000, r.Deadline)
				require.Zero(t, r.B)
			}

			e2 := New(2)
			require.True(t, e2.Restore(r, now))
			require.Equal(t, Life{Found: true, Ms: tc.expMs - nowMs}, e2.Store().Life(key, now))
			tat, found, err := e2.Store().GetThrottle(key, now)
			require.NoError(t, err)
			require.True(t, found)
			require.Equal(t, uint64(42), tat)

			// KEEPTTL keeps the expiry, far or not.
			written, err = e2.Store().SetThrottle(key, 7, NoExpiry, true, SetAlways, now)
			require.NoError(t, err)
			require.True(t, written)
			require.Equal(t, Life{Found: true, Ms: tc.expMs - nowMs}, e2.Store().Life(key, now))

			// Alive up to the clock's last millisecond if Redis would keep it.
			end := int64(farFromMs * 1_000_000)
			require.Equal(t, tc.far, st.Type(key, end) == KindThrottle)
		})
	}

	t.Run("record from before farMs", func(t *testing.T) {
		e := New(1)
		require.True(t, e.Restore(Record{Key: "old", Kind: KindThrottle, Deadline: maxDeadline, A: 42}, now))
		require.Equal(t, Life{Found: true, Ms: ceilDiv(maxDeadline-now, 1_000_000) - 1}, e.Store().Life([]byte("old"), now))
	})

	t.Run("CL.THROTTLE", func(t *testing.T) {
		e := New(1)
		st := e.Store()
		g, err := NewGCRA(0, 1, math.MaxInt64)
		require.NoError(t, err)
		_, err = st.Throttle([]byte("ps"), g, 1, now)
		require.NoError(t, err)
		require.Equal(t, Life{Found: true, Ms: 9223372036854}, st.Life([]byte("ps"), now))
		// A limited call writes nothing; a peek rewrites the same expiry.
		later := now + 86_400_000_000_000
		r, err := st.Throttle([]byte("ps"), g, 1, later)
		require.NoError(t, err)
		require.True(t, r.Limited)
		_, err = st.Throttle([]byte("ps"), g, 0, later)
		require.NoError(t, err)
		require.Equal(t, Life{Found: true, Ms: nowMs + 9223372036854 - later/1_000_000}, st.Life([]byte("ps"), later))
	})
}

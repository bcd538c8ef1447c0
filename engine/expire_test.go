package engine

import (
	"fmt"
	"testing"

	"github.com/stretchr/testify/require"
)

// TestSweepFloorIsBytes: a pass over keys none of which has expired
// examines whole steps of records until it has seen sweepMinBytes of live
// records, then stops: some 1,000 short records, but two steps of long
// logs, which cost a cache miss each to pass over.
func TestSweepFloorIsBytes(t *testing.T) {
	for _, tc := range []struct {
		name     string
		kind     Kind
		admits   int // calls a key: an RL.LOG keeps a run each
		min, max int // records one pass examines
	}{
		{"RL.FIXED", KindFixed, 1, 1000, 1500},
		{"RL.LOG of 1", KindLog, 1, 900, 1200},
		{"RL.LOG of 80", KindLog, 80, 128, 128},
	} {
		t.Run(tc.name, func(t *testing.T) {
			o := newOneShard(defaultOptions)
			now := oneShardNow
			p := Params{Limit: 1000, Window: 1e15, Cost: 1}
			for i := range 5000 {
				for range tc.admits {
					now += 1_234_567
					_, err := o.st.Limit(tc.kind, fmt.Appendf(nil, "k:%06d", i), p, now)
					require.NoError(t, err)
				}
			}
			o.s.mu.Lock()
			o.s.compactInPlaceLocked() // logs that grew left garbage
			o.s.mu.Unlock()
			require.Zero(t, o.s.garbage)
			st := o.st.e.Sweep(now)
			require.Zero(t, st.Expired)
			require.GreaterOrEqual(t, st.Examined, tc.min)
			require.LessOrEqual(t, st.Examined, tc.max)
			require.Zero(t, st.Examined%sweepChunk, "whole steps")
			// The pass began at the region's start: its records' bytes
			// reach the floor in its last step, not before.
			bytes, last := 0, 0
			for i, off := 0, 0; i < st.Examined; i++ {
				if i == st.Examined-sweepChunk {
					last = bytes
				}
				end := parseRecord(o.s.data, off).end
				bytes, off = bytes+end-off, end
			}
			require.GreaterOrEqual(t, bytes, sweepMinBytes)
			require.Less(t, last, sweepMinBytes)
		})
	}
}

// TestStateTellsWrites: Store.State's bytes change with every write that
// changes a key, and not with time alone; a key expired or deleted is not
// held.
func TestStateTellsWrites(t *testing.T) {
	e := New(4)
	st := e.Store()
	now := int64(1_700_000_000_000_000_000)
	key := []byte("k")
	state := func(at int64) (string, bool) {
		b, ok := st.State(key, at, nil)
		return string(b), ok
	}
	_, ok := state(now)
	require.False(t, ok, "no key yet")
	p := Params{Limit: 10, Window: 60e9, Cost: 1}
	_, err := st.Limit(KindFixed, key, p, now)
	require.NoError(t, err)
	s1, ok := state(now)
	require.True(t, ok)
	s2, _ := state(now + 30e9)
	require.Equal(t, s1, s2, "time alone changes nothing")
	_, err = st.Limit(KindFixed, key, p, now+30e9)
	require.NoError(t, err)
	s3, _ := state(now + 30e9)
	require.NotEqual(t, s1, s3, "a call counted")
	_, err = st.Limit(KindFixed, key, Params{Limit: 10, Window: 60e9}, now+31e9) // cost 0: a peek
	require.NoError(t, err)
	s4, _ := state(now + 31e9)
	require.Equal(t, s3, s4, "a peek writes nothing")
	_, ok = state(now + 200e9)
	require.False(t, ok, "expired")
	_, err = st.Limit(KindFixed, key, p, now+300e9)
	require.NoError(t, err)
	require.True(t, st.Delete(key, now+300e9))
	_, ok = state(now + 300e9)
	require.False(t, ok, "deleted")
}

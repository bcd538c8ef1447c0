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

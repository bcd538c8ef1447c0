package engine

import (
	"math/rand/v2"
	"testing"

	"github.com/stretchr/testify/require"
)

// TestLogAgainstBruteForce compares RL.LOG with a literal list of unit
// timestamps, from a printed seed.
func TestLogAgainstBruteForce(t *testing.T) {
	seed := uint64(rand.Int64())
	t.Logf("seed %d", seed)
	r := rand.New(rand.NewPCG(seed, 1))
	for round := 0; round < 200; round++ {
		W := int64(1+r.IntN(50)) * 1_000_000
		limit := int64(r.IntN(12))
		var entries []int64
		var total int64
		var units []int64 // brute force: one timestamp per unit
		now := int64(1_700_000_000_000_000_000)
		for op := 0; op < 200; op++ {
			now += int64(r.IntN(int(W / 3)))
			cost := int64(r.IntN(5))
			var res Result
			entries, total, res = logDecide(Params{Limit: limit, Window: W, Cost: cost}, entries, total, now)

			live := units[:0:0]
			for _, u := range units {
				if u > now-W {
					live = append(live, u)
				}
			}
			units = live
			admit := int64(len(units))+cost <= limit
			require.Equal(t, !admit, res.Limited, "seed %d op %d", seed, op)
			if admit {
				for i := int64(0); i < cost; i++ {
					units = append(units, now)
				}
			}
			require.Equal(t, int64(len(units)), total)
			require.Equal(t, max(limit-total, 0), res.Remaining)
			wantReset := int64(0)
			if len(units) > 0 {
				wantReset = units[len(units)-1] + W - now
			}
			require.Equal(t, wantReset, res.ResetAfter)
			wantRetry := int64(-1)
			if !admit && cost <= limit {
				k := int64(len(units)) + cost - limit // oldest units that must leave
				wantRetry = units[k-1] + W - now
			}
			require.Equal(t, wantRetry, res.RetryAfter, "seed %d op %d", seed, op)
			// Compactness: at most 8 bytes per unit held.
			require.LessOrEqual(t, int64(len(entries)), total)
		}
	}
}

func TestLogRunsAreCompact(t *testing.T) {
	var entries []int64
	var total int64
	now := int64(1_700_000_000_000_000_000)
	p := Params{Limit: 1 << 62, Window: 60_000_000_000, Cost: 1 << 40}
	for i := 0; i < 100; i++ {
		entries, total, _ = logDecide(p, entries, total, now+int64(i))
	}
	require.Equal(t, int64(100)<<40, total)
	require.Len(t, entries, 200, "one 16-byte run per cost-2^40 admission")
	// Several admissions in the same nanosecond merge into one run.
	entries, total = nil, 0
	p.Cost = 1
	for i := 0; i < 50; i++ {
		entries, total, _ = logDecide(p, entries, total, now)
	}
	require.Equal(t, []int64{-(now + 1), 50}, entries)
}

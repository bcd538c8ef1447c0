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
		var h held        // the log as its record holds it
		var units []int64 // brute force: one timestamp per unit
		now := int64(1_700_000_000_000_000_000)
		for op := 0; op < 200; op++ {
			now += int64(r.IntN(int(W / 3)))
			cost := int64(r.IntN(5))
			next, res, admitted := logDecide(Params{Limit: limit, Window: W, Cost: cost}, h, now, nil)
			if admitted {
				h = next
			}
			ls := logOf(h)

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
			if admit && cost > 0 {
				require.Equal(t, int64(len(units)), ls.total)
				require.Equal(t, uint64(units[0]), ls.oldest)
				// The runs decode to the units, oldest first.
				var got []int64
				words, ok := decodeRuns(nil, ls.dl, ls.runs)
				require.True(t, ok)
				for i := 0; i < len(words); {
					if words[i] < 0 {
						for range words[i+1] {
							got = append(got, -words[i]-1)
						}
						i += 2
					} else {
						got = append(got, words[i])
						i++
					}
				}
				require.Equal(t, units, got, "seed %d op %d", seed, op)
				require.Equal(t, ls.runs, appendRuns(nil, ls.dl, words), "seed %d op %d: re-encoding", seed, op)
			}
			require.Equal(t, max(limit-int64(len(units)), 0), res.Remaining)
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
			if admitted { // compactness: at most 8 bytes per unit held
				require.LessOrEqual(t, len(ls.runs), 8*len(units))
			}
		}
	}
}

func TestLogRunsAreCompact(t *testing.T) {
	var h held
	now := int64(1_700_000_000_000_000_000)
	p := Params{Limit: 1 << 62, Window: 60_000_000_000, Cost: 1 << 40}
	for i := 0; i < 100; i++ {
		next, _, ok := logDecide(p, h, now+int64(i), nil)
		require.True(t, ok)
		h = next
	}
	ls := logOf(h)
	require.Equal(t, int64(100)<<40, ls.total)
	// Runs 1 ns apart of 2^40 units: 6 bytes of count and 1 of time each,
	// but the newest, whose time (60 s before the deadline) takes 2.
	require.Equal(t, 99*(6+1)+6+2, len(ls.runs), "one small run per cost-2^40 admission")
	// Several admissions in the same nanosecond merge into one run.
	h = held{}
	p.Cost = 1
	for i := 0; i < 50; i++ {
		next, _, ok := logDecide(p, h, now, nil)
		require.True(t, ok)
		h = next
	}
	ls = logOf(h)
	words, ok := decodeRuns(nil, ls.dl, ls.runs)
	require.True(t, ok)
	require.Equal(t, []int64{-(now + 1), 50}, words)
}

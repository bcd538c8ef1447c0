package engine

import (
	"fmt"
	"math/rand/v2"
	"testing"

	"github.com/stretchr/testify/require"
)

// checkAlgorithm names what a row of the algorithms table lacks, or what
// it gets wrong, or returns nil.
func checkAlgorithm(k Kind, a *Algorithm, seen map[string]Kind) error {
	switch {
	case a == nil:
		return fmt.Errorf("kind %d: no Algorithm in the table", k)
	case a.Kind != k:
		return fmt.Errorf("kind %d: its row says Kind %d", k, a.Kind)
	case byte(k)&^hdrKind != 0:
		return fmt.Errorf("kind %d (%s): does not fit a record header's kind bits", k, a.Name)
	case a.Name == "" || a.Name == "none":
		return fmt.Errorf("kind %d: no Name", k)
	case seen[a.Name] != 0 && seen[a.Name] != k:
		return fmt.Errorf("kind %d (%s): Name taken by kind %d", k, a.Name, seen[a.Name])
	case a.encode == nil:
		return fmt.Errorf("kind %d (%s): no encode", k, a.Name)
	case a.decode == nil:
		return fmt.Errorf("kind %d (%s): no decode", k, a.Name)
	case k == KindThrottle: // decided by Store.Throttle, with redis-cell's arguments
	case a.hasRuns && a.decideRuns == nil:
		return fmt.Errorf("kind %d (%s): has runs and no decideRuns", k, a.Name)
	case !a.hasRuns && a.decide == nil:
		return fmt.Errorf("kind %d (%s): no decide", k, a.Name)
	case a.decide != nil && a.decideRuns != nil:
		return fmt.Errorf("kind %d (%s): both decide and decideRuns", k, a.Name)
	case a.hasRuns != (a.toLog != nil) || a.hasRuns != (a.fromLog != nil):
		return fmt.Errorf("kind %d (%s): runs need toLog and fromLog, and only runs do", k, a.Name)
	}
	seen[a.Name] = k
	if a.hasRuns {
		return nil // its runs are checked by TestRecordRoundTrip
	}
	// Every encoding is total: any words round-trip, at any deadline.
	r := rand.New(rand.NewPCG(uint64(k), 2))
	for range 1000 {
		w := words{randWord(r), randWord(r), randWord(r)}
		dl := uint64(randWord(r))
		b := a.encode([]byte{0xff}, dl, w, nil)
		got, runs, end := a.decode(b, 1, dl)
		if end != len(b) || runs != 0 {
			return fmt.Errorf("kind %d (%s): decode ends at %d of %d (runs %d)", k, a.Name, end, len(b), runs)
		}
		if string(a.encode(nil, dl, got, nil)) != string(b[1:]) {
			return fmt.Errorf("kind %d (%s): %v does not round-trip (got %v)", k, a.Name, w, got)
		}
	}
	return nil
}

// TestAlgorithmTableComplete: every kind from KindThrottle to the last
// row has a complete Algorithm, and every encoding round-trips.
func TestAlgorithmTableComplete(t *testing.T) {
	seen := map[string]Kind{}
	require.GreaterOrEqual(t, len(algorithms), int(KindBucket)+1)
	for k := KindThrottle; int(k) < len(algorithms); k++ {
		require.NoError(t, checkAlgorithm(k, algorithms[k], seen))
		require.True(t, k.Known())
		require.Contains(t, Kinds(), k)
	}
	require.False(t, KindNone.Known())
	require.Equal(t, "none", KindNone.Name())
	require.False(t, Kind(len(algorithms)).Known())
}

// TestIncompleteAlgorithmNamed: a row missing a piece is named with what
// it lacks.
func TestIncompleteAlgorithmNamed(t *testing.T) {
	full := quotaAlgorithm
	for _, tc := range []struct {
		mend func(a *Algorithm)
		want string
	}{
		{func(a *Algorithm) { a.Name = "" }, "kind 7: no Name"},
		{func(a *Algorithm) { a.Name = "fixed" }, "kind 7 (fixed): Name taken by kind 2"},
		{func(a *Algorithm) { a.encode = nil }, "kind 7 (quota): no encode"},
		{func(a *Algorithm) { a.decode = nil }, "kind 7 (quota): no decode"},
		{func(a *Algorithm) { a.decide = nil }, "kind 7 (quota): no decide"},
		{func(a *Algorithm) { a.hasRuns = true }, "kind 7 (quota): has runs and no decideRuns"},
		{func(a *Algorithm) { a.decideRuns = logDecide }, "kind 7 (quota): both decide and decideRuns"},
		{func(a *Algorithm) { a.Kind = KindLog }, "kind 7: its row says Kind 3"},
		{func(a *Algorithm) { a.toLog = leasesToLog }, "kind 7 (quota): runs need toLog and fromLog, and only runs do"},
		{func(a *Algorithm) {
			a.decode = func(b []byte, i int, dl uint64) (words, int, int) { return words{}, 0, len(b) }
		}, "does not round-trip"},
	} {
		a := full
		tc.mend(&a)
		seen := map[string]Kind{"fixed": KindFixed}
		err := checkAlgorithm(kindQuota, &a, seen)
		require.Error(t, err, tc.want)
		require.Contains(t, err.Error(), tc.want)
	}
	require.ErrorContains(t, checkAlgorithm(9, nil, map[string]Kind{}), "kind 9: no Algorithm in the table")
}

package clock

import (
	"testing"

	"github.com/stretchr/testify/require"
)

func TestManual(t *testing.T) {
	c := NewManual(1000)
	require.Equal(t, int64(1000), c.Now())
	require.NoError(t, c.Set(1000))
	require.ErrorIs(t, c.Set(999), ErrBackwards)
	require.Equal(t, int64(1000), c.Now())
	n, err := c.Advance(250)
	require.NoError(t, err)
	require.Equal(t, int64(1250), n)
	_, err = c.Advance(-1)
	require.Error(t, err)
	_, err = c.Advance(maxInt64)
	require.Error(t, err)
	require.Equal(t, int64(1250), c.Now())
}

func TestRealNeverBackwards(t *testing.T) {
	c := NewReal(1_700_000_000_000_000_000)
	prev := c.Now()
	require.GreaterOrEqual(t, prev, int64(1_700_000_000_000_000_000))
	for i := 0; i < 10000; i++ {
		n := c.Now()
		require.GreaterOrEqual(t, n, prev)
		prev = n
	}
}

func TestParseDuration(t *testing.T) {
	for _, tc := range []struct {
		in   string
		want int64
		err  bool
	}{
		{"5", 5_000_000, false},
		{"250ns", 250, false},
		{"3us", 3000, false},
		{"7ms", 7_000_000, false},
		{"2s", 2_000_000_000, false},
		{"1700000000000000000ns", 1700000000000000000, false},
		{"", 0, true},
		{"s", 0, true},
		{"1.5s", 0, true},
		{"10h", 0, true},
		{"99999999999999999s", 0, true},
	} {
		got, err := ParseDuration(tc.in)
		if tc.err {
			require.Error(t, err, tc.in)
			continue
		}
		require.NoError(t, err, tc.in)
		require.Equal(t, tc.want, got, tc.in)
	}
}

func TestParsePeriod(t *testing.T) {
	for _, tc := range []struct {
		in   string
		want int64
	}{
		{"1500ms", 1_500_000_000}, {"60s", 60_000_000_000}, {"5m", 300_000_000_000}, {"1h", 3_600_000_000_000},
		{"1d", 86_400_000_000_000}, {"7", 7_000_000_000}, {"1ms", 1_000_000}, {"3650d", int64(MaxPeriod)},
		{"315360000", int64(MaxPeriod)}, {"007s", 7_000_000_000},
	} {
		got, err := ParsePeriod([]byte(tc.in))
		require.NoError(t, err, tc.in)
		require.Equal(t, tc.want, got, tc.in)
	}
	for _, bad := range []string{"", "0", "0ms", "-1s", "+1s", "1.5s", "1w", "ms", "3651d", "315360001", "1 s", "1S", "99999999999999999999ms"} {
		_, err := ParsePeriod([]byte(bad))
		require.Error(t, err, bad)
	}
}

package commands

import (
	"testing"

	"github.com/rlserver/rlserver/clock"
	"github.com/rlserver/rlserver/engine"
	"github.com/stretchr/testify/require"
)

// TestCountersAddUpOverCells: commands counted in every statistics cell,
// and in cells shared by two event loops (loop i and i+stripes), add up to
// exactly what was run, whatever the number of cores; CONFIG RESETSTAT
// clears every cell.
func TestCountersAddUpOverCells(t *testing.T) {
	s := NewServer(Config{Shards: 4, MaxClients: 100}, engine.New(4), clock.NewManual(1_700_000_000_000_000_000), nil, nil)
	ping := argv("PING")
	want := 0
	for loop := 0; loop < stripes+3; loop++ {
		c, err := s.NewClient("t", "t", nil)
		require.NoError(t, err)
		c.SetStripe(loop)
		for range loop + 1 {
			s.Exec(c, ping, discard{})
			want++
		}
		s.CountTraffic(c, 14, 7)
	}
	d := s.dispatch.totals()
	require.Equal(t, []int64{int64(want), 14 * (stripes + 3), 7 * (stripes + 3), 0}, []int64{d[nCommands], d[nNetIn], d[nNetOut], d[nErrorReplies]})
	n := s.table["ping"].stats.totals()
	require.Equal(t, []int64{int64(want), 0, 0}, []int64{n[nCalls], n[nRejected], n[nFailed]})
	c, _ := s.NewClient("t", "t", nil)
	s.Exec(c, argv("CONFIG", "RESETSTAT"), discard{})
	d = s.dispatch.totals()
	require.Equal(t, []int64{0, 0, 0}, []int64{d[nCommands], d[nNetIn], d[nNetOut]})
	require.Zero(t, s.table["ping"].stats.totals()[nCalls])
}

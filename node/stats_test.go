package node_test

import (
	"testing"

	"github.com/rlserver/rlserver/clock"
	"github.com/rlserver/rlserver/engine"
	"github.com/rlserver/rlserver/internal/rltest"
	"github.com/rlserver/rlserver/node"
	"github.com/stretchr/testify/require"
)

// TestCountersAddUpOverCells: commands counted in every statistics cell,
// and in cells shared by two event loops (loop i and i+node.Stripes), add up to
// exactly what was run, whatever the number of cores; CONFIG RESETSTAT
// clears every cell.
func TestCountersAddUpOverCells(t *testing.T) {
	s := node.New(node.Config{Shards: 4, MaxClients: 100}, engine.New(4), clock.NewManual(1_700_000_000_000_000_000), node.Options{})
	ping := rltest.Argv("PING")
	want := 0
	for loop := 0; loop < node.Stripes+3; loop++ {
		c, err := s.NewClient("t", "t", nil)
		require.NoError(t, err)
		c.SetStripe(loop)
		for range loop + 1 {
			s.Exec(c, ping, rltest.Discard{})
			want++
		}
		s.CountTraffic(c, 14, 7)
	}
	d := s.DispatchTotals()
	require.Equal(t, []int64{int64(want), 14 * (node.Stripes + 3), 7 * (node.Stripes + 3), 0}, []int64{d[0], d[1], d[2], d[3]})
	n := s.CommandTotals("ping")
	require.Equal(t, []int64{int64(want), 0, 0}, []int64{n[0], n[2], n[3]})
	c, _ := s.NewClient("t", "t", nil)
	s.Exec(c, rltest.Argv("CONFIG", "RESETSTAT"), rltest.Discard{})
	d = s.DispatchTotals()
	require.Equal(t, []int64{0, 0, 0}, []int64{d[0], d[1], d[2]})
	require.Zero(t, s.CommandTotals("ping")[0])
}

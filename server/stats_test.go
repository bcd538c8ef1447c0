package server_test

import (
	"regexp"
	"strconv"
	"testing"

	"github.com/rlserver/rlserver/internal/rltest"
	"github.com/rlserver/rlserver/internal/testserver"
	"github.com/stretchr/testify/require"
)

// TestStatsAddUpAcrossLoops: every connection's commands, errors and bytes
// count in INFO stats and INFO commandstats exactly once, however the
// connections are spread over the event loops (each loop counts in a cell
// of its own, and INFO adds the cells up), and CONFIG RESETSTAT clears
// every cell.
func TestStatsAddUpAcrossLoops(t *testing.T) {
	s := testserver.Start(t)
	addr := s.Addr.String()
	var sent, commands int
	do := func(c *rltest.Conn, args ...string) string {
		t.Helper()
		sent += len(rltest.Encode(args...))
		commands++
		return c.Do(args...)
	}
	conns := make([]*rltest.Conn, 6) // over every loop on any machine up to 6 cores
	for i := range conns {
		conns[i] = rltest.Dial(t, addr)
	}
	calls := 0
	for i, c := range conns {
		for j := 0; j < 5*(i+1); j++ {
			require.Regexp(t, `^\[[01] 16 `, do(c, "CL.THROTTLE", "k"+strconv.Itoa(i), "15", "1", "60"))
			calls++
		}
		require.Equal(t, "-Cell error: Store error: Couldn't parse as integer: x", do(c, "CL.THROTTLE", "k", "x", "1", "60")) // failed
		require.Equal(t, "-ERR wrong number of arguments for 'get' command", do(c, "GET"))                                    // rejected
	}
	info := conns[0].Do("INFO", "commandstats")
	stat := func(cmd string) []string {
		m := regexp.MustCompile(`cmdstat_` + cmd + `:calls=(\d+),usec=\d+,usec_per_call=[\d.]+,rejected_calls=(\d+),failed_calls=(\d+)`).FindStringSubmatch(info)
		require.NotNil(t, m, info)
		return m[1:]
	}
	n := strconv.Itoa(len(conns))
	require.Equal(t, []string{strconv.Itoa(calls + len(conns)), "0", n}, stat(`cl\.throttle`))
	require.Equal(t, []string{"0", n, "0"}, stat("get"))

	// One INFO, its fields read from the same text: every INFO counts.
	info = rltest.InfoText(t, conns[1], "stats")
	field := func(name string) int { return int(rltest.InfoValue(t, info, name)) }
	// Counted as they start: both INFOs count themselves.
	require.Equal(t, commands+2, field("total_commands_processed"))
	require.Equal(t, 2*len(conns), field("total_error_replies"))
	// Bytes count once a reply is written: the first INFO is in, the
	// second not yet.
	require.Equal(t, sent+len(rltest.Encode("INFO", "commandstats")), field("total_net_input_bytes"))

	require.Equal(t, "+OK", conns[2].Do("CONFIG", "RESETSTAT"))
	info = rltest.InfoText(t, conns[3], "stats")
	require.Equal(t, 1, field("total_commands_processed"))
	require.Equal(t, 0, field("total_error_replies"))
	require.NotContains(t, conns[4].Do("INFO", "commandstats"), "cmdstat_cl.throttle")
}

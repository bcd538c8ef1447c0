package worstcase

import (
	"os"
	"strings"
	"testing"

	"github.com/rlserver/rlserver/internal/testserver"
	"github.com/stretchr/testify/require"
)

// specTable is docs/algorithms.md's worst-case table: admitted / peak per
// stream. The tool must reproduce it exactly through the real server.
var specTable = map[string][4][2]int{
	"RL.FIXED":  {{20, 20}, {100, 10}, {100, 10}, {30, 20}},
	"RL.LOG":    {{10, 10}, {100, 10}, {100, 10}, {20, 10}},
	"RL.SLIDE":  {{11, 11}, {100, 10}, {95, 10}, {29, 19}},
	"RL.BUCKET": {{11, 11}, {109, 19}, {100, 10}, {29, 19}},
	// Reservations (docs/reservations.md): more admitted, the same worst
	// window, counted when the units act.
	"RL.FIXED RESERVE 1s":  {{20, 20}, {110, 19}, {100, 10}, {40, 20}},
	"RL.LOG RESERVE 1s":    {{20, 10}, {110, 10}, {100, 10}, {30, 10}},
	"RL.BUCKET RESERVE 1s": {{20, 19}, {119, 19}, {100, 10}, {39, 19}},
}

// TestFullRunMatchesSpecAndReadme runs the tool exactly as `go run
// ./bench/cmd/worstcase` does (in-process server, full sweep, seed 1) and
// checks the spec's table, the token bucket's rate + capacity - 1 on the
// sweep, the 59 of the polling case, and that README.md's section is this
// run's output, not typed by hand.
func TestFullRunMatchesSpecAndReadme(t *testing.T) {
	if testing.Short() {
		t.Skip("full worst-case run: not in -short mode")
	}
	rep, err := Run(Config{RandomSeed: 1, RandomCount: 20})
	require.NoError(t, err)
	for alg, want := range specTable {
		for i, s := range []string{"A", "B", "C", "D"} {
			got := rep.Spec[alg][s]
			require.Equal(t, want[i], [2]int{got.Admitted, got.Peak}, "%s stream %s", alg, s)
		}
	}
	require.Len(t, rep.Reserve, 2*len(Reservers))
	for _, r := range append(rep.Families, rep.Reserve...) {
		switch {
		case strings.HasPrefix(r.Algorithm, "RL.LOG"):
			require.Equal(t, Limit, r.Peak, "the log is exact on %s: %s", r.Family, r.Algorithm)
		case strings.HasPrefix(r.Algorithm, "RL.BUCKET") && strings.HasPrefix(r.Family, "sweep"):
			require.Equal(t, 10+10-1, r.Peak, "token bucket: rate + capacity - 1: %s", r.Algorithm)
		}
		require.LessOrEqual(t, r.Peak, 2*Limit, "%s %s", r.Algorithm, r.Family)
	}
	for _, r := range rep.Poll {
		require.Equal(t, 59, r.Admitted, r.Algorithm)
	}
	readme, err := os.ReadFile("../../README.md")
	require.NoError(t, err)
	require.Contains(t, string(readme), rep.ReadmeSection("bench/worstcase-d.svg"),
		"README's worst-case section is stale: run go run ./bench/cmd/worstcase --svg bench/worstcase-d.svg --readme README.md")
	svg, err := os.ReadFile("../worstcase-d.svg")
	require.NoError(t, err)
	require.Equal(t, rep.SVG(), string(svg), "bench/worstcase-d.svg is stale")
}

func TestPeak(t *testing.T) {
	const ms = 1_000_000
	require.Equal(t, 0, Peak(nil))
	require.Equal(t, 2, Peak([]int64{0, 999 * ms, 1000 * ms}))
	require.Equal(t, 3, Peak([]int64{0, 1, 2, 1000 * ms}))
}

// TestAgainstRunningServer drives a separately started server (the --addr
// mode) through a reduced run.
func TestAgainstRunningServer(t *testing.T) {
	s := testserver.Start(t)
	rep, err := Run(Config{Addr: s.Addr.String(), Offsets: []int{0, 470, 990}, RandomSeed: 7, RandomCount: 2})
	require.NoError(t, err)
	for alg, want := range specTable {
		for i, st := range []string{"A", "B", "C", "D"} {
			got := rep.Spec[alg][st]
			require.Equal(t, want[i], [2]int{got.Admitted, got.Peak}, "%s stream %s", alg, st)
		}
	}
	require.Contains(t, rep.Markdown(), "| RL.LOG | sweep (18 shaped streams) | 18 |")
}

package server_test

import (
	"context"
	"fmt"
	"math/rand/v2"
	"strconv"
	"testing"
	"time"

	"github.com/cockroachdb/pebble/v2/vfs"
	"github.com/rlserver/rlserver/internal/rltest"
	"github.com/rlserver/rlserver/node"
	"github.com/rlserver/rlserver/resp"
	"github.com/rlserver/rlserver/server"
	"github.com/stretchr/testify/require"
)

// driven is a server driven in-process through Exec, its replies captured.
type driven struct {
	s *server.Server
	c *node.Client
	w *resp.Writer
}

func startNode(t *testing.T, fs vfs.FS, saveInterval time.Duration) *driven {
	t.Helper()
	s, err := server.Start(server.Options{
		Config: node.Config{Bind: "127.0.0.1", Dir: "/data", SaveInterval: saveInterval, Shards: 4,
			ClockMode: "manual", MaxClients: 10, Limits: node.DefaultLimits},
		ClockStart: rltest.StartNs, FS: fs, ExpiryInterval: 5 * time.Millisecond,
	})
	require.NoError(t, err)
	c, err := s.Node.NewClient("test", "test", nil)
	require.NoError(t, err)
	n := &driven{s: s, c: c}
	n.w = resp.NewWriter(c.Proto)
	return n
}

func (n *driven) do(args []string) string {
	b := make([][]byte, len(args))
	for i, a := range args {
		b[i] = []byte(a)
	}
	n.w.Reset()
	n.s.Node.Exec(n.c, b, n.w)
	if p := n.c.TakePark(); p != nil { // a WAIT that waits: here, in line
		p(nil)(n.w)
	}
	return string(n.w.Bytes())
}

func randomOp(r *rand.Rand) []string {
	k := "k" + strconv.Itoa(r.IntN(12))
	n := func(lo, hi int) string { return strconv.Itoa(lo + r.IntN(hi-lo+1)) }
	windows := []string{"1ms", "7ms", "250ms", "1s", "1500ms", "1m"}
	w := windows[r.IntN(len(windows))]
	switch r.IntN(15) {
	case 0:
		return []string{"CL.THROTTLE", k, n(0, 5), n(1, 10), n(1, 3), n(0, 3)}
	case 1:
		return []string{"RL.FIXED", k, n(0, 6), w, "COST", n(0, 3)}
	case 2:
		return []string{"RL.LOG", k, n(0, 6), w, "COST", n(0, 3)}
	case 3:
		return []string{"RL.SLIDE", k, n(0, 6), w, "COST", n(0, 3)}
	case 4:
		return []string{"RL.BUCKET", k, n(0, 6), n(1, 5), w, "COST", n(0, 3)}
	case 5:
		return []string{"PTTL", k}
	case 6:
		return []string{"GET", k}
	case 7:
		return []string{"TYPE", k}
	case 8:
		if r.IntN(4) == 0 {
			return []string{"DEL", k}
		}
		return []string{"EXISTS", k}
	case 9:
		if r.IntN(20) == 0 {
			return []string{"FLUSHALL"}
		}
		return []string{"TTL", k}
	case 10:
		return []string{"SET", k, strconv.FormatInt(rltest.StartNs+int64(r.IntN(5_000_000_000)), 10), "PX", n(1, 3000)}
	case 11:
		// A few logs that grow long across snapshots: their snapshots
		// write deltas (docs/persistence.md, "Storage format").
		return []string{"RL.LOG", "log" + strconv.Itoa(r.IntN(3)), "1000", "1d", "COST", n(1, 3)}
	}
	units := []string{"ns", "us", "ms", "ms", "s"}
	return []string{"DEBUG", "CLOCK", "ADVANCE", n(0, 400) + units[r.IntN(len(units))]}
}

// TestDifferentialRestarts runs the same random operations on an
// in-memory server and on one that is snapshotted to Pebble and restarted
// from it at random points; every reply must be byte-identical.
func TestDifferentialRestarts(t *testing.T) {
	seed := rand.Uint64()
	t.Logf("seed %d (set RLSERVER_SEED to replay)", seed)
	if s := envSeed(); s != 0 {
		seed = s
	}
	r := rand.New(rand.NewPCG(seed, 7))
	mem := startNode(t, nil, 0)
	defer mem.s.Close(context.Background())
	fs := vfs.NewMem()
	disk := startNode(t, fs, time.Hour) // snapshots only when told, and at shutdown
	restarts := 0
	for i := 0; i < 3000; i++ {
		if r.IntN(150) == 0 {
			if r.IntN(2) == 0 {
				require.Equal(t, "+OK\r\n", disk.do([]string{"SAVE"}))
			}
			require.NoError(t, disk.s.Shutdown(context.Background(), true))
			disk = startNode(t, fs, time.Hour)
			restarts++
		}
		op := randomOp(r)
		want, got := mem.do(op), disk.do(op)
		if want != got {
			t.Fatalf("seed %d, op %d %q: in-memory %q, restarted %q", seed, i, op, want, got)
		}
	}
	require.NoError(t, disk.s.Shutdown(context.Background(), true))
	t.Logf("%d restarts", restarts)
	require.Greater(t, restarts, 5)
}

func envSeed() uint64 {
	var s uint64
	fmt.Sscan(getenv("RLSERVER_SEED"), &s)
	return s
}

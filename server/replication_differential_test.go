package server_test

import (
	"context"
	"fmt"
	"math/rand/v2"
	"net"
	"strconv"
	"testing"
	"time"

	"github.com/rlserver/rlserver/internal/rltest"
	"github.com/stretchr/testify/require"
)

// peeks are the COST-0 requests that read a key of each TYPE without
// spending anything.
var peeks = map[string]func(k string) []string{
	"+string\r\n": func(k string) []string { return []string{"CL.THROTTLE", k, "5", "10", "1", "0"} },
	"+fixed\r\n":  func(k string) []string { return []string{"RL.FIXED", k, "6", "1s", "COST", "0"} },
	"+log\r\n":    func(k string) []string { return []string{"RL.LOG", k, "6", "1s", "COST", "0"} },
	"+slide\r\n":  func(k string) []string { return []string{"RL.SLIDE", k, "6", "1s", "COST", "0"} },
	"+bucket\r\n": func(k string) []string { return []string{"RL.BUCKET", k, "6", "2", "1s", "COST", "0"} },
}

// TestDifferentialReplication runs random operations of every command,
// DEL, FLUSHALL, expiry and clock moves on a primary with a replica, and
// the same on a reference server that never fails over. Every reply of
// the primary must be the reference's, byte for byte. At random points,
// after WAIT 1, every key reads the same on the replica as on the
// primary (TYPE, PTTL, GET and a peek). At other points the primary
// goes, the replica is promoted and a new replica follows it: the
// promoted node's replies must go on being the reference's.
func TestDifferentialReplication(t *testing.T) {
	seed := rand.Uint64()
	if s := envSeed(); s != 0 {
		seed = s
	}
	t.Logf("seed %d (set RLSERVER_SEED to replay)", seed)
	r := rand.New(rand.NewPCG(seed, 11))
	ref := startNode(t, nil, 0)
	defer ref.s.Close(context.Background())
	primary := startNode(t, nil, 0)
	newReplica := func(of *driven) *driven {
		n := startNode(t, nil, 0)
		port := strconv.Itoa(of.s.Addr.(*net.TCPAddr).Port)
		require.Equal(t, "+OK\r\n", n.do([]string{"REPLICAOF", "127.0.0.1", port}))
		return n
	}
	replica := newReplica(primary)
	defer func() {
		primary.s.Close(context.Background())
		replica.s.Close(context.Background())
	}()
	// synced writes on the primary (and the reference), so that WAIT
	// waits for every change and the primary's clock to be acknowledged,
	// and waits until the replica has.
	synced := func(i int) {
		op := []string{"RL.FIXED", "wait", "1000000", "1m"}
		require.Equal(t, ref.do(op), primary.do(op))
		rltest.WaitFor(t, 10*time.Second, "WAIT 1", func() (bool, string) {
			r := primary.do([]string{"WAIT", "1", "1000"})
			return r == ":1\r\n", fmt.Sprintf("seed %d, op %d: %q", seed, i, r)
		})
	}
	checks, failovers := 0, 0
	for i := 0; i < 2500; i++ {
		switch r.IntN(100) {
		case 0, 1:
			// The replica against the primary, key by key.
			synced(i)
			for k := range 12 {
				key := "k" + strconv.Itoa(k)
				view := [][]string{{"TYPE", key}, {"PTTL", key}, {"GET", key}}
				typ := replica.do(view[0])
				if p, ok := peeks[typ]; ok {
					view = append(view, p(key))
				}
				for _, op := range view {
					got := replica.do(op)
					want := ref.do(op)
					require.Equal(t, want, primary.do(op), "seed %d, op %d %q: primary and reference", seed, i, op)
					if want != got {
						t.Fatalf("seed %d, op %d %q: primary %q, replica %q", seed, i, op, want, got)
					}
				}
			}
			checks++
			continue
		case 2:
			// Failover: everything acknowledged, the primary goes, the
			// replica is promoted, a new replica follows it.
			synced(i)
			require.NoError(t, primary.s.Close(context.Background()))
			require.Equal(t, "+OK\r\n", replica.do([]string{"REPLICAOF", "NO", "ONE"}))
			primary, replica = replica, newReplica(replica)
			failovers++
			continue
		}
		op := randomOp(r)
		want, got := ref.do(op), primary.do(op)
		if want != got {
			t.Fatalf("seed %d, op %d %q: reference %q, primary (after %d failovers) %q", seed, i, op, want, failovers, got)
		}
	}
	t.Logf("%d comparisons of every key, %d failovers", checks, failovers)
	require.Greater(t, checks, 10)
	require.Greater(t, failovers, 5)
}

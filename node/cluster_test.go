package node_test

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/rlserver/rlserver/clock"
	"github.com/rlserver/rlserver/cluster"
	"github.com/rlserver/rlserver/engine"
	"github.com/rlserver/rlserver/internal/rltest"
	"github.com/rlserver/rlserver/internal/testnode"
	"github.com/rlserver/rlserver/node"
	"github.com/rlserver/rlserver/replication"
	"github.com/stretchr/testify/require"
)

var (
	idA = strings.Repeat("a", 40)
	idB = strings.Repeat("b", 40)
	idD = strings.Repeat("d", 40)
)

// twoShards: A (this test's usual node) owns 0-5460, B 5461-16383; D
// replicates A. "bar" is slot 5061 and "a{b}c" 3300 (A's), "foo" 12182
// (B's). Nothing listens at these addresses: the view is the map's until
// polled, and these tests never poll.
var twoShards = fmt.Sprintf(`%s 127.0.0.1:7301@17301 master - 0 0 1 connected 0-5460
%s 127.0.0.1:7302@17302 master - 0 0 2 connected 5461-16383
%s 127.0.0.1:7304@17304 slave %s 0 0 1 connected
vars currentEpoch 2 lastVoteEpoch 0
`, idA, idB, idD, idA)

// clusterNode returns a node in cluster mode as node self of the map
// text, in the role role says, on a manual clock at start.
func clusterNode(t *testing.T, text, self string, role cluster.PeerRole, start int64, partial bool) (*node.Node, *cluster.Cluster, string) {
	t.Helper()
	path := filepath.Join(t.TempDir(), "nodes.conf")
	require.NoError(t, os.WriteFile(path, []byte(text), 0o644))
	clk := clock.NewTimeline(clock.NewManual(start), 0)
	n := node.New(node.Config{Shards: 4, MaxClients: 10}, engine.New(4), clk, node.Options{})
	c, err := cluster.New(cluster.Options{Path: path, Self: self, FullCoverage: !partial,
		Role: func() cluster.PeerRole { return role }, Import: n.ImportSlots})
	require.NoError(t, err)
	n.SetCluster(c)
	return n, c, path
}

// step is one command of a transcript and its rendered reply.
type step struct {
	cmd  []string
	want string
}

func run(t *testing.T, l *testnode.Local, steps []step) {
	t.Helper()
	for i, s := range steps {
		require.Equal(t, s.want, l.Do(s.cmd...), "step %d: %q", i, s.cmd)
	}
}

func cmd(s string) []string { return strings.Fields(s) }

// infoOf parses a rendered INFO-style bulk reply.
func infoOf(t *testing.T, rendered string) map[string]string {
	t.Helper()
	txt, err := strconv.Unquote(rendered)
	require.NoError(t, err, rendered)
	return rltest.InfoFields(txt)
}

// TestClusterRouting: a primary's answers, in Redis's order of checks and
// at Redis's moments (docs/cluster.md, "Routing").
func TestClusterRouting(t *testing.T) {
	n, _, _ := clusterNode(t, twoShards, idA, cluster.PeerRole{}, rltest.StartNs, false)
	l := testnode.NewLocal(t, n)
	run(t, l, []step{
		{cmd("CLUSTER KEYSLOT foo"), "12182"},
		{cmd("CLUSTER MYID"), `"` + idA + `"`},
		{cmd("PING"), "+PONG"},
		{cmd("CL.THROTTLE foo 15 30 60"), "-MOVED 12182 127.0.0.1:7302"},
		{cmd("PTTL foo"), "-MOVED 12182 127.0.0.1:7302"},
		{cmd("CL.THROTTLE bar 0 1 60"), "[0 1 0 -1 60]"},
		// CROSSSLOT comes before MOVED, whichever key is first.
		{cmd("DEL foo bar"), "-CROSSSLOT Keys in request don't hash to the same slot"},
		{cmd("DEL bar foo"), "-CROSSSLOT Keys in request don't hash to the same slot"},
		{cmd("EXISTS {bar}x {bar}y bar"), "1"}, // a hash tag: one slot
		// WATCH is routed as any keyed command.
		{cmd("WATCH foo"), "-MOVED 12182 127.0.0.1:7302"},
		{cmd("WATCH bar foo"), "-CROSSSLOT Keys in request don't hash to the same slot"},
		{cmd("WATCH bar {bar}x"), "+OK"},
		{cmd("UNWATCH"), "+OK"},
		// RL.ALL: every key counts, however far in; a tenant's hash tag
		// keeps one call's keys in one slot.
		{cmd("RL.ALL bar FIXED 5 1m AND foo FIXED 5 1m"), "-CROSSSLOT Keys in request don't hash to the same slot"},
		{cmd("RL.ALL {bar}:u FIXED 5 1m AND {bar}:d LOG 5 1m AND foo FIXED 5 1m"), "-CROSSSLOT Keys in request don't hash to the same slot"},
		{cmd("RL.ALL foo FIXED 5 1m AND {foo}:d LOG 5 1m"), "-MOVED 12182 127.0.0.1:7302"},
		{cmd("RL.ALL {bar}:u FIXED 5 1m AND {bar}:d LOG 5 1m"), "[0 5 4 -1 60000 1 [[0 5 4 -1 40000] [0 5 4 -1 60000]]]"},
		{cmd("DEL {bar}:u {bar}:d"), "2"},
		{cmd("EXISTS bar bar"), "2"},
		{cmd("CLUSTER COUNTKEYSINSLOT 5061"), "1"},
		{cmd("CLUSTER GETKEYSINSLOT 5061 10"), `["bar"]`},
		{cmd("CLUSTER GETKEYSINSLOT 5061 0"), "[]"},
		{cmd("CLUSTER COUNTKEYSINSLOT 16384"), "-ERR Invalid slot"},
		{cmd("CLUSTER COUNTKEYSINSLOT x"), "-ERR value is not an integer or out of range"},
		{cmd("CLUSTER GETKEYSINSLOT 1 -1"), "-ERR Invalid slot or number of keys"},
		{cmd("READONLY"), "+OK"},
		{cmd("READWRITE"), "+OK"},
		{cmd("ASKING"), "+OK"},
		// A queued MOVED aborts EXEC.
		{cmd("MULTI"), "+OK"},
		{cmd("CL.THROTTLE foo 15 30 60"), "-MOVED 12182 127.0.0.1:7302"},
		{cmd("EXEC"), "-EXECABORT Transaction discarded because of previous errors."},
		// Queued commands of two slots: EXEC answers CROSSSLOT, runs
		// nothing and leaves MULTI.
		{cmd("MULTI"), "+OK"},
		{cmd("CL.THROTTLE bar 0 1 60"), "+QUEUED"},
		{cmd("CL.THROTTLE a{b}c 0 1 60"), "+QUEUED"},
		{cmd("EXEC"), "-CROSSSLOT Keys in request don't hash to the same slot"},
		{cmd("EXEC"), "-ERR EXEC without MULTI"},
		{cmd("EXISTS a{b}c"), "0"},
		// One slot: EXEC runs.
		{cmd("MULTI"), "+OK"},
		{cmd("CL.THROTTLE a{b}c 0 1 60"), "+QUEUED"},
		{cmd("EXISTS c{b}a"), "+QUEUED"},
		{cmd("EXEC"), "[[0 1 0 -1 60] 0]"},
	})
	info := infoOf(t, l.Do("INFO", "commandstats"))
	require.Contains(t, info["cmdstat_cl.throttle"], "rejected_calls=2", "a redirected call counts as rejected")
	require.Contains(t, info["cmdstat_del"], "rejected_calls=2")
	require.Equal(t, "1", infoOf(t, l.Do("INFO", "cluster"))["cluster_enabled"])
}

// TestClusterReplicaRouting: a replica sends every keyed command to the
// primary of the key's slot, reads included, unless the connection sent
// READONLY and the command only reads a slot of its own shard.
func TestClusterReplicaRouting(t *testing.T) {
	n, _, _ := clusterNode(t, twoShards, idD, cluster.PeerRole{Replica: true, Host: "127.0.0.1", Port: 7301, LinkUp: true}, rltest.StartNs, false)
	l := testnode.NewLocal(t, n)
	run(t, l, []step{
		{cmd("PTTL bar"), "-MOVED 5061 127.0.0.1:7301"},
		{cmd("CL.THROTTLE bar 0 1 60"), "-MOVED 5061 127.0.0.1:7301"},
		{cmd("READONLY"), "+OK"},
		{cmd("PTTL bar"), "-2"},
		{cmd("CL.THROTTLE bar 0 1 60 0"), "[0 1 1 -1 0]"},
		{cmd("CL.THROTTLE bar 0 1 60"), "-MOVED 5061 127.0.0.1:7301"},
		{cmd("PTTL foo"), "-MOVED 12182 127.0.0.1:7302"},
		{cmd("READWRITE"), "+OK"},
		{cmd("PTTL bar"), "-MOVED 5061 127.0.0.1:7301"},
	})
}

// TestClusterPartialCoverage: a map leaving slots unowned is refused
// unless partial coverage is allowed; then the unowned slots answer
// CLUSTERDOWN, checked on the first key before any other check.
func TestClusterPartialCoverage(t *testing.T) {
	partial := fmt.Sprintf("%s 127.0.0.1:7301@17301 master - 0 0 1 connected 0-5460\n%s 127.0.0.1:7302@17302 master - 0 0 2 connected 5461-10000\n", idA, idB)
	path := filepath.Join(t.TempDir(), "nodes.conf")
	require.NoError(t, os.WriteFile(path, []byte(partial), 0o644))
	_, err := cluster.New(cluster.Options{Path: path, Self: idA, FullCoverage: true, Role: func() cluster.PeerRole { return cluster.PeerRole{} }})
	require.ErrorContains(t, err, "6383 of 16384 slots have no owner")

	n, _, _ := clusterNode(t, partial, idA, cluster.PeerRole{}, rltest.StartNs, true)
	l := testnode.NewLocal(t, n)
	run(t, l, []step{
		{cmd("CL.THROTTLE foo 15 30 60"), "-CLUSTERDOWN Hash slot not served"},
		{cmd("DEL foo bar"), "-CLUSTERDOWN Hash slot not served"},
		{cmd("DEL bar foo"), "-CROSSSLOT Keys in request don't hash to the same slot"},
	})
	require.Equal(t, "ok", infoOf(t, l.Do("CLUSTER", "INFO"))["cluster_state"])
	require.Equal(t, "10001", infoOf(t, l.Do("CLUSTER", "INFO"))["cluster_slots_assigned"])
}

// TestClusterOff: outside cluster mode the cluster commands are refused
// with Redis's text, keys route nowhere, and INFO says so.
func TestClusterOff(t *testing.T) {
	n := node.New(node.Config{Shards: 4, MaxClients: 10}, engine.New(4), clock.NewManual(rltest.StartNs), node.Options{})
	l := testnode.NewLocal(t, n)
	for _, c := range []string{"CLUSTER INFO", "CLUSTER SLOTS", "CLUSTER KEYSLOT x", "READONLY", "READWRITE", "ASKING"} {
		require.Equal(t, "-ERR This instance has cluster support disabled", l.Do(cmd(c)...), c)
	}
	require.Equal(t, "0", l.Do("DEL", "foo", "bar"))
	require.Equal(t, "0", infoOf(t, l.Do("INFO", "cluster"))["cluster_enabled"])
}

// TestClusterHandOffKeepsLimits: slots handed from one primary to another
// carry every key's state and the clock: each key exhausted before is
// exhausted after, with the same reset time, on a receiver whose clock
// was behind; the giver redirects them and holds none.
func TestClusterHandOffKeepsLimits(t *testing.T) {
	a, _, _ := clusterNode(t, twoShards, idA, cluster.PeerRole{}, rltest.StartNs+int64(time.Hour), false)
	moved := fmt.Sprintf("%s 127.0.0.1:7301@17301 master - 0 0 1 connected 101-5460\n%s 127.0.0.1:7302@17302 master - 0 0 2 connected 0-100 5461-16383\n", idA, idB)
	b, _, _ := clusterNode(t, moved, idB, cluster.PeerRole{}, rltest.StartNs, false)
	la, lb := testnode.NewLocal(t, a), testnode.NewLocal(t, b)
	var keys []string
	for i := 0; len(keys) < 50; i++ {
		if k := fmt.Sprintf("k%d", i); cluster.Slot([]byte(k)) <= 100 {
			keys = append(keys, k)
		}
	}
	for _, k := range keys {
		require.Equal(t, "[0 1 0 -1 60]", la.Do("CL.THROTTLE", k, "0", "1", "60"))
		require.True(t, strings.HasPrefix(la.Do("RL.FIXED", "{"+k+"}f", "1", "60s"), "[0 "))
	}
	before := map[string]string{}
	for _, k := range keys {
		before[k] = la.Do("CL.THROTTLE", k, "0", "1", "60", "0")
		before["{"+k+"}f"] = la.Do("RL.FIXED", "{"+k+"}f", "1", "60s", "COST", "0")
	}
	slots, err := cluster.ParseRanges([]string{"0-100"})
	require.NoError(t, err)
	sess := a.Sessions()[0]
	payload, err := a.ClusterHandOff(sess, idB, slots)
	require.NoError(t, err)
	require.Equal(t, "0", la.Do("DBSIZE"), "the giver holds none of the keys")
	require.Equal(t, fmt.Sprintf("-MOVED %d 127.0.0.1:7302", cluster.Slot([]byte(keys[0]))), la.Do("PTTL", keys[0]))

	require.NoError(t, b.ImportSlots(slots, payload))
	require.Equal(t, rltest.StartNs+int64(time.Hour), b.Clock().Now(), "the receiver's clock is raised to the giver's")
	require.Equal(t, fmt.Sprintf("%d", 2*len(keys)), lb.Do("DBSIZE"))
	for _, k := range keys {
		require.Equal(t, before[k], lb.Do("CL.THROTTLE", k, "0", "1", "60", "0"), k)
		require.Equal(t, before["{"+k+"}f"], lb.Do("RL.FIXED", "{"+k+"}f", "1", "60s", "COST", "0"), k)
		require.True(t, strings.HasPrefix(lb.Do("CL.THROTTLE", k, "0", "1", "60"), "[1 "), "%s stays exhausted", k)
	}
}

// TestClusterReplies: CLUSTER SLOTS, SHARDS, NODES and INFO in Redis 7's
// shapes, RESP2 and RESP3, from the map as first loaded (nothing polled:
// the replica's link is not known to be up, so SLOTS leaves it out).
func TestClusterReplies(t *testing.T) {
	n, _, _ := clusterNode(t, twoShards, idA, cluster.PeerRole{Offset: 7}, rltest.StartNs, false)
	l := testnode.NewLocal(t, n)
	nodeA := `["127.0.0.1" 7301 "` + idA + `" []]`
	nodeB := `["127.0.0.1" 7302 "` + idB + `" []]`
	require.Equal(t, "[[0 5460 "+nodeA+"] [5461 16383 "+nodeB+"]]", l.Do("CLUSTER", "SLOTS"))
	shard := func(id string, port, off int, role, health string) string {
		return fmt.Sprintf(`["id" "%s" "port" %d "ip" "127.0.0.1" "endpoint" "127.0.0.1" "role" "%s" "replication-offset" %d "health" "%s"]`, id, port, role, off, health)
	}
	require.Equal(t, `[["slots" [0 5460] "nodes" [`+shard(idA, 7301, 7, "master", "online")+" "+shard(idD, 7304, 0, "replica", "loading")+`]] `+
		`["slots" [5461 16383] "nodes" [`+shard(idB, 7302, 0, "master", "online")+`]]]`, l.Do("CLUSTER", "SHARDS"))
	nodes := idA + " 127.0.0.1:7301@17301 myself,master - 0 0 1 connected 0-5460\n" +
		idB + " 127.0.0.1:7302@17302 master - 0 0 2 connected 5461-16383\n" +
		idD + " 127.0.0.1:7304@17304 slave " + idA + " 0 0 1 connected\n"
	require.Equal(t, strconv.Quote(nodes), l.Do("CLUSTER", "NODES"))
	info := infoOf(t, l.Do("CLUSTER", "INFO"))
	for k, v := range map[string]string{"cluster_state": "ok", "cluster_slots_assigned": "16384", "cluster_slots_ok": "16384",
		"cluster_slots_pfail": "0", "cluster_slots_fail": "0", "cluster_known_nodes": "3", "cluster_size": "2",
		"cluster_current_epoch": "2", "cluster_my_epoch": "1"} {
		require.Equal(t, v, info[k], k)
	}

	require.Contains(t, l.Do("HELLO", "3"), `"mode": "cluster"`)
	require.Equal(t, "[[0 5460 "+strings.Replace(nodeA, "[]]", "{}]", 1)+"] [5461 16383 "+strings.Replace(nodeB, "[]]", "{}]", 1)+"]]", l.Do("CLUSTER", "SLOTS"))
	require.Equal(t, "="+strconv.Quote("txt:"+nodes), l.Do("CLUSTER", "NODES"))
	require.True(t, strings.HasPrefix(l.Do("CLUSTER", "SHARDS"), `[{"slots": [0 5460], "nodes": [{"id": "`+idA+`", "port": 7301, `), l.Do("CLUSTER", "SHARDS"))
}

// TestImportRefusedOnceDemoted: records of slots handed over to a node
// that was made a replica while they were on their way are refused, not
// installed: a replica's keyspace is its primary's.
func TestImportRefusedOnceDemoted(t *testing.T) {
	e := engine.New(4)
	clk := clock.NewTimeline(clock.NewManual(rltest.StartNs), 0)
	m := replication.New(replication.Options{Engine: e, Clock: clk})
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan struct{})
	go func() { m.Run(ctx); close(done) }()
	t.Cleanup(func() { cancel(); <-done })
	n := node.New(node.Config{Shards: 4, MaxClients: 10}, e, clk, node.Options{Replication: m})
	payload := replication.EncodeRecords(rltest.StartNs, []engine.Record{{Key: "k", Kind: engine.KindFixed, Deadline: rltest.StartNs + 60e9, A: 1, B: 1}})
	slots, err := cluster.ParseRanges([]string{"0-16383"})
	require.NoError(t, err)
	m.ReplicaOf("127.0.0.1", 1) // demoted: its primary need not answer
	require.ErrorIs(t, n.ImportSlots(slots, payload), cluster.ErrNotPrimary)
	require.Zero(t, e.Store().Len(), "nothing installed")
}

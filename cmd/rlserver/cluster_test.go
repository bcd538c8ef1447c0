package main

// Acceptance tests of the Redis Cluster protocol (docs/cluster.md)
// against real processes on loopback: rlservers sharing one slot map file
// (--cluster-config, --cluster-node-id), cluster-aware clients (go-redis's
// ClusterClient, redis-cli -c, redis-benchmark --cluster), redis-sentinel
// failing a shard over, a slot range moved by a new map and SIGHUP, and the
// maps a node must refuse.
//
// Every node listens on the port its map line names: the ports are picked
// first (freePort), then the map is written, then the nodes start.

import (
	"bufio"
	"context"
	"crypto/sha1"
	"encoding/hex"
	"fmt"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"slices"
	"sort"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"syscall"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"
	"github.com/redis/rueidis"
	"github.com/rlserver/rlserver/internal/rltest"
	"github.com/stretchr/testify/require"
)

// ---------------------------------------------------------------------
// Hash slots, computed by the test itself.

// crc16 is CRC16-XMODEM (polynomial 0x1021, initial value 0), the hash of
// Redis Cluster's key slots.
func crc16(b []byte) uint16 {
	var crc uint16
	for _, c := range b {
		crc ^= uint16(c) << 8
		for range 8 {
			if crc&0x8000 != 0 {
				crc = crc<<1 ^ 0x1021
			} else {
				crc <<= 1
			}
		}
	}
	return crc
}

// keySlot is a key's hash slot: only the part between the first { and the
// first } after it is hashed, when that part is not empty.
func keySlot(key string) int {
	if i := strings.IndexByte(key, '{'); i >= 0 {
		if j := strings.IndexByte(key[i+1:], '}'); j > 0 {
			key = key[i+1 : i+1+j]
		}
	}
	return int(crc16([]byte(key)) & 16383)
}

// keyslotVectors are Redis's own values (cluster.md, "Hash slots").
var keyslotVectors = []struct {
	key  string
	slot int
}{
	{"123456789", 12739}, {"foo", 12182}, {"bar", 5061}, {"{user1000}.following", 3443},
	{"foo{}{bar}", 8363}, {"a{b}c", 3300}, {"{}x", 10595},
}

// keysInSlots returns n keys prefix<i>, in order of i, whose slots lie in
// [lo, hi].
func keysInSlots(prefix string, lo, hi, n int) []string {
	var out []string
	for i := 0; len(out) < n; i++ {
		if k := prefix + strconv.Itoa(i); keySlot(k) >= lo && keySlot(k) <= hi {
			out = append(out, k)
		}
	}
	return out
}

// ---------------------------------------------------------------------
// The map file.

// mapNode is one line of a slot map.
type mapNode struct {
	id      string
	port    int
	primary *mapNode // nil: a primary
	epoch   int      // the line's config epoch
	slots   [][2]int // a primary's slot ranges
}

// nodeID is a fixed 40-hex node id for a name.
func nodeID(name string) string {
	s := sha1.Sum([]byte("rlserver cluster test " + name))
	return hex.EncodeToString(s[:])
}

// cport is the cluster bus port the map names (unused by rlserver, but
// part of Redis's format): port+10000 as Redis's default, or below the
// port when that would not be a port.
func cport(port int) int {
	if port+10000 <= 65535 {
		return port + 10000
	}
	return port - 10000
}

func slotRanges(r [][2]int) string {
	var s []string
	for _, x := range r {
		if x[0] == x[1] {
			s = append(s, strconv.Itoa(x[0]))
		} else {
			s = append(s, fmt.Sprintf("%d-%d", x[0], x[1]))
		}
	}
	return strings.Join(s, " ")
}

// line is the node's map line: nodes.conf's format without myself.
func (m *mapNode) line() string {
	role, master := "master", "-"
	if m.primary != nil {
		role, master = "slave", m.primary.id
	}
	l := fmt.Sprintf("%s 127.0.0.1:%d@%d %s %s 0 0 %d connected", m.id, m.port, cport(m.port), role, master, m.epoch)
	if len(m.slots) > 0 {
		l += " " + slotRanges(m.slots)
	}
	return l
}

// writeClusterMap writes the map (each node's line, then the vars line)
// to path, atomically: a node reading it on SIGHUP sees the old file or
// the new one.
func writeClusterMap(t *testing.T, path string, currentEpoch int, nodes ...*mapNode) {
	t.Helper()
	var b strings.Builder
	for _, n := range nodes {
		b.WriteString(n.line() + "\n")
	}
	fmt.Fprintf(&b, "vars currentEpoch %d lastVoteEpoch 0\n", currentEpoch)
	writeFileAtomic(t, path, b.String())
}

func writeFileAtomic(t *testing.T, path, content string) {
	t.Helper()
	tmp := path + ".tmp"
	require.NoError(t, os.WriteFile(tmp, []byte(content), 0o644))
	require.NoError(t, os.Rename(tmp, path))
}

// ---------------------------------------------------------------------
// Nodes.

// logLines keeps a process's log lines.
type logLines struct {
	mu    sync.Mutex
	lines []string
}

func (l *logLines) add(s string) {
	l.mu.Lock()
	l.lines = append(l.lines, s)
	l.mu.Unlock()
}

// since returns the lines from index i on, and the count now.
func (l *logLines) since(i int) ([]string, int) {
	l.mu.Lock()
	defer l.mu.Unlock()
	return slices.Clone(l.lines[min(i, len(l.lines)):]), len(l.lines)
}

// cnode is a running cluster node.
type cnode struct {
	*instance
	m   *mapNode
	log *logLines
}

func (n *cnode) portStr() string { return strconv.Itoa(n.m.port) }

// startClusterNode runs the binary as the node m of the map at mapPath,
// memory only (--save-interval 0), and waits for its start-up line. When
// the test fails, the node's last log lines are printed.
func startClusterNode(t *testing.T, mapPath string, m *mapNode, args ...string) *cnode {
	t.Helper()
	args = append([]string{"--port", strconv.Itoa(m.port), "--cluster-config", mapPath, "--cluster-node-id", m.id,
		"--save-interval", "0"}, args...)
	cmd := exec.Command(buildBinary(t), args...)
	cmd.Dir = t.TempDir()
	stderr, err := cmd.StderrPipe()
	require.NoError(t, err)
	require.NoError(t, cmd.Start())
	t.Cleanup(func() { cmd.Process.Kill(); cmd.Wait() })
	log := &logLines{}
	started := make(chan string, 1)
	ended := make(chan struct{})
	go func() {
		defer close(ended)
		sc := bufio.NewScanner(stderr)
		sc.Buffer(make([]byte, 64<<10), 1<<20)
		for sc.Scan() {
			log.add(sc.Text())
			if strings.Contains(sc.Text(), "rlserver started") {
				select {
				case started <- sc.Text():
				default:
				}
			}
		}
	}()
	t.Cleanup(func() {
		if t.Failed() {
			lines, _ := log.since(0)
			t.Logf("log of node %s (port %d, pid %d), last lines:\n%s", m.id[:8], m.port, cmd.Process.Pid,
				strings.Join(lines[max(0, len(lines)-40):], "\n"))
		}
	})
	addr := "127.0.0.1:" + strconv.Itoa(m.port)
	select {
	case line := <-started:
		require.Contains(t, line, "addr="+addr, "the node listens where its map line says")
	case <-ended:
		lines, _ := log.since(0)
		t.Fatalf("node %s exited before starting:\n%s", addr, strings.Join(lines, "\n"))
	case <-time.After(20 * time.Second):
		t.Fatalf("node %s: no start-up line within 20 s", addr)
	}
	return &cnode{instance: &instance{cmd: cmd, addr: addr, c: rltest.Dial(t, addr)}, m: m, log: log}
}

// query sends one command on a new connection, closed afterwards: for
// nodes whose connections Sentinel may close (CLIENT KILL TYPE normal),
// and for polling.
func query(t *testing.T, addr string, args ...string) string {
	t.Helper()
	c := rltest.Dial(t, addr)
	defer c.Close()
	return c.Do(args...)
}

// text is the text of a bulk or verbatim reply, as rltest renders it.
func text(t *testing.T, reply string) string {
	t.Helper()
	s, err := strconv.Unquote(strings.TrimPrefix(reply, "="))
	require.NoError(t, err, "not a bulk string reply: %s", reply)
	if strings.HasPrefix(reply, "=") {
		s = strings.TrimPrefix(s, "txt:")
	}
	return s
}

func movedTo(slot int, n *cnode) string {
	return fmt.Sprintf("-MOVED %d 127.0.0.1:%d", slot, n.m.port)
}

const crossslot = "-CROSSSLOT Keys in request don't hash to the same slot"

// ---------------------------------------------------------------------
// What the nodes say about the topology.

// slotsEntry is one entry of CLUSTER SLOTS: a range and its nodes, the
// primary first.
type slotsEntry struct {
	lo, hi int
	nodes  []*mapNode
}

// slotsText renders the CLUSTER SLOTS reply (RESP2) for entries as rltest
// does: [[start end [ip port id []] ...] ...], in slot order.
func slotsText(entries ...slotsEntry) string {
	entries = slices.Clone(entries)
	sort.Slice(entries, func(i, j int) bool { return entries[i].lo < entries[j].lo })
	var es []string
	for _, e := range entries {
		parts := []string{strconv.Itoa(e.lo), strconv.Itoa(e.hi)}
		for _, n := range e.nodes {
			parts = append(parts, fmt.Sprintf(`["127.0.0.1" %d %q []]`, n.port, n.id))
		}
		es = append(es, "["+strings.Join(parts, " ")+"]")
	}
	return "[" + strings.Join(es, " ") + "]"
}

// waitSlots waits until every node's CLUSTER SLOTS is want.
func waitSlots(t *testing.T, d time.Duration, what string, nodes []*cnode, want string) {
	t.Helper()
	rltest.WaitFor(t, d, what, func() (bool, string) {
		for _, n := range nodes {
			if got := query(t, n.addr, "CLUSTER", "SLOTS"); got != want {
				return false, fmt.Sprintf("node :%d CLUSTER SLOTS\n got: %s\nwant: %s", n.m.port, got, want)
			}
		}
		return true, ""
	})
}

// canonNodesLine is a CLUSTER NODES (or map) line without its ping-sent
// and pong-received fields and without "myself,".
func canonNodesLine(t *testing.T, line string) string {
	t.Helper()
	f := strings.Fields(line)
	require.GreaterOrEqual(t, len(f), 8, "CLUSTER NODES line %q", line)
	f[2] = strings.Replace(f[2], "myself,", "", 1)
	return strings.Join(append(f[:4:4], f[6:]...), " ")
}

// nodesDiff checks addr's CLUSTER NODES: one \n-terminated line per map
// node, the same lines as the map's (ping and pong fields aside, so every
// node connected, without fail flags), as a set, and myself on the line
// of the node asked (id) only. It returns what differs, or "".
func nodesDiff(t *testing.T, addr, id string, want ...*mapNode) string {
	t.Helper()
	txt := text(t, query(t, addr, "CLUSTER", "NODES"))
	if !strings.HasSuffix(txt, "\n") {
		return fmt.Sprintf("CLUSTER NODES on %s is not \\n-terminated: %q", addr, txt)
	}
	var got, exp, myself []string
	for _, l := range strings.Split(strings.TrimSuffix(txt, "\n"), "\n") {
		got = append(got, canonNodesLine(t, l))
		f := strings.Fields(l)
		if strings.Contains(f[2], "myself") {
			myself = append(myself, f[0])
			if !strings.HasPrefix(f[2], "myself,") {
				return fmt.Sprintf("myself does not come first in the flags on %s: %q", addr, l)
			}
		}
	}
	for _, m := range want {
		exp = append(exp, canonNodesLine(t, m.line()))
	}
	sort.Strings(got)
	sort.Strings(exp)
	if !slices.Equal(exp, got) {
		return fmt.Sprintf("CLUSTER NODES on %s (ping/pong fields and myself, aside)\n got: %q\nwant: %q\nreply:\n%s", addr, got, exp, txt)
	}
	if !slices.Equal([]string{id}, myself) {
		return fmt.Sprintf("myself, on the asked node's line only (%s, id %s): %q", addr, id, txt)
	}
	return ""
}

func requireNodes(t *testing.T, n *cnode, want ...*mapNode) {
	t.Helper()
	if d := nodesDiff(t, n.addr, n.m.id, want...); d != "" {
		t.Fatal(d)
	}
}

// waitNodes waits until every node's CLUSTER NODES is the map's (each
// node polls the others every second: one started after it is seen then).
func waitNodes(t *testing.T, d time.Duration, nodes []*cnode, want ...*mapNode) {
	t.Helper()
	rltest.WaitFor(t, d, "every node's CLUSTER NODES to show the map, every node connected", func() (bool, string) {
		for _, n := range nodes {
			if diff := nodesDiff(t, n.addr, n.m.id, want...); diff != "" {
				return false, diff
			}
		}
		return true, ""
	})
}

// canonShards renders go-redis's parse of CLUSTER SHARDS as sorted lines.
func canonShards(shards []redis.ClusterShard) []string {
	var out []string
	for _, s := range shards {
		var slots, nodes []string
		for _, r := range s.Slots {
			slots = append(slots, fmt.Sprintf("%d-%d", r.Start, r.End))
		}
		for _, n := range s.Nodes {
			nodes = append(nodes, fmt.Sprintf("%s %s:%d endpoint=%s role=%s health=%s offset>=0:%v",
				n.ID, n.IP, n.Port, n.Endpoint, n.Role, n.Health, n.ReplicationOffset >= 0))
		}
		sort.Strings(nodes)
		out = append(out, "slots "+strings.Join(slots, ",")+" nodes "+strings.Join(nodes, " | "))
	}
	sort.Strings(out)
	return out
}

// wantShards is canonShards of what the map says, every node online.
func wantShards(shards ...[]*mapNode) []string {
	var out []redis.ClusterShard
	for _, sh := range shards {
		var s redis.ClusterShard
		for _, r := range sh[0].slots {
			s.Slots = append(s.Slots, redis.SlotRange{Start: int64(r[0]), End: int64(r[1])})
		}
		for i, m := range sh {
			role := "master"
			if i > 0 {
				role = "replica"
			}
			s.Nodes = append(s.Nodes, redis.Node{ID: m.id, IP: "127.0.0.1", Port: int64(m.port), Endpoint: "127.0.0.1", Role: role, Health: "online"})
		}
		out = append(out, s)
	}
	return canonShards(out)
}

// cmdstat is one command's INFO commandstats counters.
type cmdstat struct{ calls, rejected, failed int64 }

var cmdstatRE = regexp.MustCompile(`^calls=(\d+),.*rejected_calls=(\d+),failed_calls=(\d+)`)

// commandstats parses INFO commandstats: command name (cl.throttle,
// command|docs) to counters.
func commandstats(t *testing.T, addr string) map[string]cmdstat {
	t.Helper()
	out := map[string]cmdstat{}
	for k, v := range rltest.InfoFields(text(t, query(t, addr, "INFO", "commandstats"))) {
		name, ok := strings.CutPrefix(k, "cmdstat_")
		if !ok {
			continue
		}
		m := cmdstatRE.FindStringSubmatch(v)
		require.NotNil(t, m, "INFO commandstats %s:%s", k, v)
		c, _ := strconv.ParseInt(m[1], 10, 64)
		r, _ := strconv.ParseInt(m[2], 10, 64)
		f, _ := strconv.ParseInt(m[3], 10, 64)
		out[name] = cmdstat{c, r, f}
	}
	return out
}

func clusterInfo(t *testing.T, addr string) map[string]string {
	t.Helper()
	return rltest.InfoFields(text(t, query(t, addr, "CLUSTER", "INFO")))
}

// throttle runs CL.THROTTLE through a go-redis client and returns its
// first element (0 admitted, 1 limited).
func throttle(ctx context.Context, c interface {
	Do(context.Context, ...any) *redis.Cmd
}, key string, args ...any) (int64, error) {
	v, err := c.Do(ctx, append([]any{"CL.THROTTLE", key}, args...)...).Slice()
	if err != nil {
		return -1, err
	}
	if len(v) != 5 {
		return -1, fmt.Errorf("CL.THROTTLE %s: reply %v", key, v)
	}
	n, ok := v[0].(int64)
	if !ok {
		return -1, fmt.Errorf("CL.THROTTLE %s: reply %v", key, v)
	}
	return n, nil
}

// ---------------------------------------------------------------------
// 1. Three primaries and a replica.

// TestClusterThreePrimaries: three primaries (0-5460, 5461-10922,
// 10923-16383) and a replica of the first, from one map, on the manual
// clock (no limit refills while the test runs). Every node computes
// Redis's key slots and describes the same topology (SLOTS exactly, in
// slot order; NODES and SHARDS as sets, ids those of MYID); wrong nodes
// answer Redis's exact MOVED text, CROSSSLOT comes before MOVED, the
// replica redirects writes to its primary and serves reads of its shard
// after READONLY; a transaction with a redirected command aborts. A
// go-redis ClusterClient given one seed spreads 10,000 keys over exactly
// the owners, with no errors and at most a few COMMAND calls;
// redis-cli -c and redis-benchmark --cluster work unchanged.
func TestClusterThreePrimaries(t *testing.T) {
	rltest.Long(t, "a four-node cluster")
	for _, v := range keyslotVectors {
		require.Equal(t, v.slot, keySlot(v.key), "the test's own CRC16 on %q", v.key)
	}
	ctx := context.Background()
	ranges := [][2]int{{0, 5460}, {5461, 10922}, {10923, 16383}}
	var maps []*mapNode
	for i, r := range ranges {
		maps = append(maps, &mapNode{id: nodeID(fmt.Sprintf("three/p%d", i)), port: freePort(t), epoch: i + 1, slots: [][2]int{r}})
	}
	maps = append(maps, &mapNode{id: nodeID("three/r0"), port: freePort(t), primary: maps[0], epoch: 1})
	mapPath := filepath.Join(t.TempDir(), "nodes.conf")
	writeClusterMap(t, mapPath, 3, maps...)
	var nodes []*cnode
	for _, m := range maps {
		nodes = append(nodes, startClusterNode(t, mapPath, m, manual(startMs)...))
	}
	p0, p1, p2, r0 := nodes[0], nodes[1], nodes[2], nodes[3]
	primaries := nodes[:3]
	owner := func(slot int) *cnode {
		for i, r := range ranges {
			if slot >= r[0] && slot <= r[1] {
				return primaries[i]
			}
		}
		t.Fatalf("slot %d has no owner", slot)
		return nil
	}

	// The replica is listed once its link is up: then every node agrees.
	rltest.WaitLinkUp(t, r0.c)
	wantSlots := slotsText(slotsEntry{0, 5460, []*mapNode{maps[0], maps[3]}},
		slotsEntry{5461, 10922, []*mapNode{maps[1]}}, slotsEntry{10923, 16383, []*mapNode{maps[2]}})
	waitSlots(t, 20*time.Second, "every node's CLUSTER SLOTS to list the three shards and the replica", nodes, wantSlots)
	waitNodes(t, 10*time.Second, nodes, maps...)

	t.Run("topology", func(t *testing.T) {
		for _, n := range nodes {
			require.Equal(t, strconv.Quote(n.m.id), n.c.Do("CLUSTER", "MYID"), ":%d", n.m.port)
			for _, v := range keyslotVectors {
				require.Equal(t, strconv.Itoa(v.slot), n.c.Do("CLUSTER", "KEYSLOT", v.key), "CLUSTER KEYSLOT %q on :%d", v.key, n.m.port)
			}
			require.Equal(t, wantSlots, n.c.Do("CLUSTER", "SLOTS"), "CLUSTER SLOTS on :%d", n.m.port)
			requireNodes(t, n, maps...)
			myEpoch := n.m.epoch
			if n.m.primary != nil {
				myEpoch = n.m.primary.epoch
			}
			ci := clusterInfo(t, n.addr)
			for k, v := range map[string]string{"cluster_state": "ok", "cluster_slots_assigned": "16384", "cluster_slots_ok": "16384",
				"cluster_slots_pfail": "0", "cluster_slots_fail": "0", "cluster_known_nodes": "4", "cluster_size": "3",
				"cluster_current_epoch": "3", "cluster_my_epoch": strconv.Itoa(myEpoch)} {
				require.Equal(t, v, ci[k], "CLUSTER INFO %s on :%d: %v", k, n.m.port, ci)
			}
			require.Equal(t, "1", rltest.Info(t, n.c, "cluster")["cluster_enabled"], "INFO cluster on :%d", n.m.port)
			require.Contains(t, query(t, n.addr, "HELLO", "3"), `"mode": "cluster"`, "HELLO on :%d", n.m.port)
			require.Equal(t, "+OK", n.c.Do("ASKING"))
			// CLUSTER SHARDS, parsed by go-redis, in RESP2 and RESP3.
			for _, proto := range []int{2, 3} {
				c := redis.NewClient(&redis.Options{Addr: n.addr, Protocol: proto})
				shards, err := c.ClusterShards(ctx).Result()
				c.Close()
				require.NoError(t, err, "CLUSTER SHARDS on :%d, RESP%d", n.m.port, proto)
				require.Equal(t, wantShards([]*mapNode{maps[0], maps[3]}, []*mapNode{maps[1]}, []*mapNode{maps[2]}), canonShards(shards),
					"CLUSTER SHARDS on :%d, RESP%d", n.m.port, proto)
			}
		}
	})

	t.Run("routing", func(t *testing.T) {
		// Every node, every vector key: the owner serves it, every other
		// node (the replica too, without READONLY) names the owner.
		for _, n := range nodes {
			for _, v := range keyslotVectors {
				o := owner(v.slot)
				for _, cmd := range [][]string{{"PTTL", v.key}, {"EXISTS", v.key}, {"GET", v.key}} {
					want := movedTo(v.slot, o)
					if n == o {
						want = map[string]string{"PTTL": "-2", "EXISTS": "0", "GET": "(nil)"}[cmd[0]]
					}
					require.Equal(t, want, n.c.Do(cmd...), "%q on :%d (slot %d)", cmd, n.m.port, v.slot)
				}
			}
			if n != p2 {
				require.Equal(t, movedTo(12182, p2), n.c.Do("CL.THROTTLE", "foo", "15", "30", "60"), "the write on :%d", n.m.port)
			}
			// Keys of two slots: CROSSSLOT, before any MOVED, on every node.
			for _, cmd := range [][]string{{"DEL", "foo", "bar"}, {"EXISTS", "bar", "foo"}, {"DEL", "bar", "{user1000}.following"}} {
				require.Equal(t, crossslot, n.c.Do(cmd...), "%q on :%d", cmd, n.m.port)
			}
		}
		for _, n := range nodes {
			require.Equal(t, "0", n.c.Do("DBSIZE"), ":%d stored nothing", n.m.port)
		}

		// MULTI: each command is checked when queued.
		bar, user := "bar", "{user1000}.following" // slots 5061 and 3443: both p0's
		for _, tc := range []struct {
			name    string
			queued  [][]string
			replies []string
			exec    string
		}{
			{"a queued command answered MOVED", [][]string{{"CL.THROTTLE", bar, "15", "30", "60"}, {"CL.THROTTLE", "foo", "15", "30", "60"}},
				[]string{"+QUEUED", movedTo(12182, p2)}, "-EXECABORT Transaction discarded because of previous errors."},
			{"a queued command with keys of two slots", [][]string{{"CL.THROTTLE", bar, "15", "30", "60"}, {"DEL", bar, user}},
				[]string{"+QUEUED", crossslot}, "-EXECABORT Transaction discarded because of previous errors."},
			{"queued commands of two slots", [][]string{{"CL.THROTTLE", bar, "15", "30", "60"}, {"CL.THROTTLE", user, "15", "30", "60"}},
				[]string{"+QUEUED", "+QUEUED"}, crossslot},
		} {
			require.Equal(t, "+OK", p0.c.Do("MULTI"), tc.name)
			for i, q := range tc.queued {
				require.Equal(t, tc.replies[i], p0.c.Do(q...), "%s: %q", tc.name, q)
			}
			require.Equal(t, tc.exec, p0.c.Do("EXEC"), tc.name)
			require.Equal(t, "0", p0.c.Do("EXISTS", bar), "%s: nothing ran", tc.name)
			require.Equal(t, "0", p0.c.Do("EXISTS", user), "%s: nothing ran", tc.name)
		}
	})

	// A ClusterClient with one seed: 10,000 keys, each admitted once then
	// limited (CL.THROTTLE k 0 1 60: one request per minute, on a clock
	// that does not move).
	const keys = 10000
	want := map[*cnode]int{}
	bySlot := map[int][]string{}
	for i := range keys {
		k := "k" + strconv.Itoa(i)
		want[owner(keySlot(k))]++
		bySlot[keySlot(k)] = append(bySlot[keySlot(k)], k)
	}
	cc := redis.NewClusterClient(&redis.ClusterOptions{Addrs: []string{p1.addr}})
	t.Cleanup(func() { cc.Close() })
	for pass, wantV := range []int64{0, 1} {
		for i := range keys {
			k := "k" + strconv.Itoa(i)
			v, err := throttle(ctx, cc, k, 0, 1, 60)
			if err != nil || v != wantV {
				t.Fatalf("ClusterClient pass %d, CL.THROTTLE %s 0 1 60 (slot %d): %d, %v; want %d", pass+1, k, keySlot(k), v, err, wantV)
			}
		}
	}
	// rueidis, with its defaults (RESP3, CLUSTER SHARDS or SLOTS, client-side
	// caching): routes each key to its shard, where it is limited now, and
	// reads a key's TAT from its cache until another client changes it.
	rc, err := rueidis.NewClient(rueidis.ClientOption{InitAddress: []string{p1.addr}})
	require.NoError(t, err)
	t.Cleanup(rc.Close)
	for i := 0; i < keys; i += 10 {
		k := "k" + strconv.Itoa(i)
		v, err := rc.Do(ctx, rc.B().Arbitrary("CL.THROTTLE").Keys(k).Args("0", "1", "60").Build()).AsIntSlice()
		require.NoError(t, err, k)
		require.Equal(t, int64(1), v[0], "rueidis: CL.THROTTLE %s 0 1 60 (slot %d), limited after two calls", k, keySlot(k))
	}
	tat := func() (string, bool) {
		r := rc.DoCache(ctx, rc.B().Get().Key("k7").Cache(), time.Minute)
		v, err := r.ToString()
		require.NoError(t, err)
		return v, r.IsCacheHit()
	}
	first, _ := tat()
	again, hit := tat()
	require.True(t, hit, "rueidis's second GET k7 from its cache")
	require.Equal(t, first, again)
	require.Equal(t, "+OK", owner(keySlot("k7")).c.Do("SET", "k7", "12345"))
	rltest.WaitFor(t, 10*time.Second, "rueidis's cache to drop k7", func() (bool, string) {
		v, _ := tat()
		return v == "12345", v
	})
	for _, p := range primaries {
		require.Equal(t, strconv.Itoa(want[p]), p.c.Do("DBSIZE"), "DBSIZE of the primary :%d: the keys of its slots, no other", p.m.port)
		// COUNTKEYSINSLOT and GETKEYSINSLOT for the first key it owns.
		var slot int
		for i := range keys {
			if s := keySlot("k" + strconv.Itoa(i)); owner(s) == p {
				slot = s
				break
			}
		}
		require.Equal(t, strconv.Itoa(len(bySlot[slot])), p.c.Do("CLUSTER", "COUNTKEYSINSLOT", strconv.Itoa(slot)), "slot %d on :%d", slot, p.m.port)
		c := redis.NewClient(&redis.Options{Addr: p.addr})
		got, err := c.ClusterGetKeysInSlot(ctx, slot, 1000).Result()
		c.Close()
		require.NoError(t, err)
		require.ElementsMatch(t, bySlot[slot], got, "CLUSTER GETKEYSINSLOT %d 1000 on :%d", slot, p.m.port)
	}
	rltest.WaitFor(t, 10*time.Second, "the replica to hold its primary's keys", func() (bool, string) {
		got := r0.c.Do("DBSIZE")
		return got == strconv.Itoa(want[p0]), got
	})
	var commandCalls int64
	for _, n := range nodes {
		for name, s := range commandstats(t, n.addr) {
			if name == "command" || strings.HasPrefix(name, "command|") {
				commandCalls += s.calls
			}
		}
	}
	t.Logf("COMMAND calls (with its subcommands) over all nodes after the ClusterClient's 20,000 calls: %d", commandCalls)
	require.LessOrEqual(t, commandCalls, int64(6), "COMMAND calls (with its subcommands) over all nodes: the client caches the table")

	t.Run("replica reads", func(t *testing.T) {
		// A key of the replica's shard, and one of another shard.
		k := keysInSlots("k", 0, 5460, 1)[0]
		other := keysInSlots("k", 10923, 16383, 1)[0]
		c := rltest.Dial(t, r0.addr)
		require.True(t, strings.HasPrefix(p0.c.Do("CL.THROTTLE", k, "0", "1", "60"), "[1 1 0 "), "%s is limited on its primary", k)
		// A peek (quantity 0) on the primary rewrites the key as it was
		// (the clock does not move): the replica's peek must match it.
		pttl, peek := p0.c.Do("PTTL", k), p0.c.Do("CL.THROTTLE", k, "0", "1", "60", "0")
		require.Regexp(t, `^\d+$`, pttl)
		reads := [][]string{{"PTTL", k}, {"EXISTS", k}, {"CL.THROTTLE", k, "0", "1", "60", "0"}}
		for _, cmd := range append(reads, []string{"CL.THROTTLE", k, "0", "1", "60"}) {
			require.Equal(t, movedTo(keySlot(k), p0), c.Do(cmd...), "%q on the replica without READONLY", cmd)
		}
		require.Equal(t, "+OK", c.Do("READONLY"))
		for i, want := range []string{pttl, "1", peek} {
			require.Equal(t, want, c.Do(reads[i]...), "%q on the replica after READONLY", reads[i])
		}
		require.Equal(t, movedTo(keySlot(k), p0), c.Do("CL.THROTTLE", k, "0", "1", "60"), "a write: always the primary")
		require.Equal(t, movedTo(keySlot(other), p2), c.Do("PTTL", other), "a read of another shard's slot")
		require.Equal(t, "+OK", c.Do("READWRITE"))
		require.Equal(t, movedTo(keySlot(k), p0), c.Do("PTTL", k), "READWRITE undoes READONLY")
		// go-redis sends READONLY on every connection of a read-only
		// client, primaries included.
		require.Equal(t, "+OK", p0.c.Do("READONLY"))
		require.Equal(t, "+OK", p0.c.Do("READWRITE"))
	})

	t.Run("redis-cli -c", func(t *testing.T) {
		cli := rltest.Tool(t, "redis-cli")
		before := commandstats(t, p0.addr)["cl.throttle"]
		out, err := exec.Command(cli, "-c", "-h", "127.0.0.1", "-p", p0.portStr(), "CL.THROTTLE", "foo", "15", "30", "60").CombinedOutput()
		require.NoError(t, err, "%s", out)
		require.Equal(t, "0\n16\n15\n-1\n2\n", string(out), "redis-cli -c followed MOVED to the owner of foo")
		require.Equal(t, "1", p2.c.Do("EXISTS", "foo"))
		after := commandstats(t, p0.addr)["cl.throttle"]
		require.Equal(t, before.calls, after.calls, "the redirected call did not run on :%d", p0.m.port)
		require.Equal(t, before.rejected+1, after.rejected, "the redirected call counts in rejected_calls on :%d", p0.m.port)
	})

	t.Run("redis-benchmark --cluster", func(t *testing.T) {
		bench := rltest.Tool(t, "redis-benchmark")
		type counts struct{ calls, rejected, failed, errors int64 }
		sample := func() map[*cnode]counts {
			out := map[*cnode]counts{}
			for _, n := range nodes {
				s := commandstats(t, n.addr)["cl.throttle"]
				out[n] = counts{s.calls, s.rejected, s.failed, rltest.InfoInt(t, n.c, "stats", "total_error_replies")}
			}
			return out
		}
		before := sample()
		ctx, cancel := context.WithTimeout(ctx, 120*time.Second)
		defer cancel()
		const requests = 20000
		cmd := exec.CommandContext(ctx, bench, "--cluster", "-h", "127.0.0.1", "-p", p1.portStr(), "-n", strconv.Itoa(requests),
			"-c", "10", "-r", "1000000", "-q", "CL.THROTTLE", "rl:{tag}:__rand_int__", "15", "30", "60")
		var stdout, stderr strings.Builder
		cmd.Stdout, cmd.Stderr = &stdout, &stderr
		err := cmd.Run()
		out := stdout.String() + stderr.String()
		require.NoError(t, err, "redis-benchmark:\n%s", out)
		require.Contains(t, out, "Cluster has 3 master nodes:")
		var masters []string
		for _, m := range regexp.MustCompile(`(?m)^Master \d+: ([0-9a-f]{40}) (\S+)$`).FindAllStringSubmatch(out, -1) {
			masters = append(masters, m[1]+" "+m[2])
		}
		var wantMasters []string
		for _, p := range primaries {
			wantMasters = append(wantMasters, p.m.id+" "+p.addr)
		}
		require.ElementsMatch(t, wantMasters, masters, "redis-benchmark's masters:\n%s", out)
		rps := regexp.MustCompile(`[^\r\n]*requests per second[^\r\n]*`).FindString(out)
		require.NotEmpty(t, rps, "redis-benchmark's result line:\n%s", out)
		t.Logf("redis-benchmark: %s", strings.TrimSpace(rps))
		for _, bad := range []string{"rror", "WARNING", "ERR"} {
			require.NotContains(t, out, bad, "redis-benchmark's output")
		}
		// redis-benchmark 7.0 ignores error replies in cluster mode
		// (other than MOVED/ASK/CLUSTERDOWN): the nodes' counters say
		// what it got.
		after := sample()
		var calls int64
		for _, n := range nodes {
			b, a := before[n], after[n]
			require.Equal(t, b.errors, a.errors, "total_error_replies on :%d during the benchmark", n.m.port)
			require.Equal(t, b.rejected, a.rejected, "cl.throttle rejected_calls on :%d during the benchmark", n.m.port)
			require.Equal(t, b.failed, a.failed, "cl.throttle failed_calls on :%d during the benchmark", n.m.port)
			if n != r0 {
				require.Greater(t, a.calls, b.calls, "the primary :%d took some of the benchmark's calls", n.m.port)
			}
			calls += a.calls - b.calls
		}
		require.Equal(t, int64(requests), calls, "every request decided once, by a primary")
	})
}

// ---------------------------------------------------------------------
// 2. Sentinel fails a shard over.

// startShardSentinel runs redis-sentinel on port monitoring every shard
// (masters named shard0, shard1, ...) with quorum 2, a node down after
// 1 s; its log is returned.
func startShardSentinel(t *testing.T, bin string, port int, primaries []*cnode) string {
	t.Helper()
	dir := t.TempDir()
	conf := filepath.Join(dir, "sentinel.conf")
	log := filepath.Join(dir, "sentinel.log")
	var b strings.Builder
	fmt.Fprintf(&b, "port %d\nbind 127.0.0.1\ndaemonize no\ndir %s\nlogfile %s\n", port, dir, log)
	for i, p := range primaries {
		name := fmt.Sprintf("shard%d", i)
		fmt.Fprintf(&b, "sentinel monitor %s 127.0.0.1 %d 2\nsentinel down-after-milliseconds %s 1000\nsentinel failover-timeout %s 3000\n",
			name, p.m.port, name, name)
	}
	require.NoError(t, os.WriteFile(conf, []byte(b.String()), 0o644))
	cmd := exec.Command(bin, conf)
	require.NoError(t, cmd.Start())
	t.Cleanup(func() { cmd.Process.Kill(); cmd.Wait() })
	t.Cleanup(func() {
		if t.Failed() {
			if b, err := os.ReadFile(log); err == nil {
				lines := strings.Split(strings.TrimSpace(string(b)), "\n")
				t.Logf("sentinel :%d log, last lines:\n%s", port, strings.Join(lines[max(0, len(lines)-30):], "\n"))
			}
		}
	})
	return log
}

// sentinelList parses SENTINEL REPLICAS/SENTINELS of a master: one map
// per entry (sentinelEntries, for any master name).
// TestClusterSentinelFailover: three shards of a primary and a replica,
// three Sentinels monitoring every shard. A ClusterClient (one seed)
// exhausts keys of every shard (CL.THROTTLE k 15 1 3600: 16 admitted, then
// one more an hour; the real clock runs), the replicas hold them, one
// primary is killed with SIGKILL. Once Sentinel promoted its replica,
// every surviving node names the new primary (CLUSTER SLOTS, MOVED)
// within 2 s plus slack; the same client, after its first good reply of
// each shard, finds every limit held and new keys admitted with no error.
// No exhausted key is admitted during the failover either. The killed
// primary restarted from the map that calls it a primary follows the
// promoted node before it serves: it redirects writes to the new primary
// from its first request on, no node names it the shard's primary again,
// and it is listed as the new primary's replica.
func TestClusterSentinelFailover(t *testing.T) {
	rltest.Long(t, "six nodes, three Sentinels, a failover")
	sentinelBin := rltest.Tool(t, "redis-sentinel")
	ctx := context.Background()
	ranges := [][2]int{{0, 5460}, {5461, 10922}, {10923, 16383}}
	var pm, rm []*mapNode
	for i, r := range ranges {
		p := &mapNode{id: nodeID(fmt.Sprintf("failover/p%d", i)), port: freePort(t), epoch: i + 1, slots: [][2]int{r}}
		pm = append(pm, p)
		rm = append(rm, &mapNode{id: nodeID(fmt.Sprintf("failover/r%d", i)), port: freePort(t), primary: p, epoch: i + 1})
	}
	mapPath := filepath.Join(t.TempDir(), "nodes.conf")
	writeClusterMap(t, mapPath, 3, append(slices.Clone(pm), rm...)...)
	var ps, rs []*cnode
	for i := range pm {
		ps = append(ps, startClusterNode(t, mapPath, pm[i]))
	}
	for i := range rm {
		rs = append(rs, startClusterNode(t, mapPath, rm[i]))
	}
	all := append(slices.Clone(ps), rs...)
	for _, r := range rs {
		rltest.WaitLinkUp(t, r.c)
	}
	entries := func(primary []*mapNode, replica [][]*mapNode) string {
		var e []slotsEntry
		for i, r := range ranges {
			e = append(e, slotsEntry{r[0], r[1], append([]*mapNode{primary[i]}, replica[i]...)})
		}
		return slotsText(e...)
	}
	waitSlots(t, 20*time.Second, "every node's CLUSTER SLOTS to list the shards", all,
		entries(pm, [][]*mapNode{{rm[0]}, {rm[1]}, {rm[2]}}))

	var sentinels []*redis.Client
	for range 3 {
		port := freePort(t)
		startShardSentinel(t, sentinelBin, port, ps)
		c := redis.NewClient(&redis.Options{Addr: "127.0.0.1:" + strconv.Itoa(port)})
		t.Cleanup(func() { c.Close() })
		sentinels = append(sentinels, c)
	}
	rltest.WaitFor(t, 30*time.Second, "every Sentinel to see each shard's replica and the other Sentinels", func() (bool, string) {
		for i, s := range sentinels {
			for k := range ps {
				name := fmt.Sprintf("shard%d", k)
				reps, others := sentinelEntries(t, s, "REPLICAS", name), sentinelEntries(t, s, "SENTINELS", name)
				if len(reps) != 1 || reps[0]["port"] != rs[k].portStr() || reps[0]["flags"] != "slave" || len(others) != 2 {
					return false, fmt.Sprintf("sentinel %d, %s: replicas %v, %d sentinels", i, name, reps, len(others))
				}
			}
		}
		return true, ""
	})

	// Exhaust keys of every shard through one ClusterClient. It reloads
	// its slot map every second (go-redis's default is a minute; a dead
	// node's address is otherwise retried until then).
	cc := redis.NewClusterClient(&redis.ClusterOptions{Addrs: []string{ps[0].addr}, ClusterStateReloadInterval: time.Second,
		DialTimeout: time.Second, ReadTimeout: time.Second, WriteTimeout: time.Second})
	t.Cleanup(func() { cc.Close() })
	shardOf := func(key string) int {
		s := keySlot(key)
		for i, r := range ranges {
			if s >= r[0] && s <= r[1] {
				return i
			}
		}
		return -1
	}
	var exhausted []string
	perShard := make([][]string, len(ranges))
	for i := range 150 {
		k := "s:" + strconv.Itoa(i)
		for j := range 17 {
			v, err := throttle(ctx, cc, k, 15, 1, 3600)
			require.NoError(t, err, "CL.THROTTLE %s, call %d", k, j+1)
			require.Equal(t, int64(min(j/16, 1)), v, "CL.THROTTLE %s 15 1 3600, call %d: 16 admitted, then limited", k, j+1)
		}
		exhausted = append(exhausted, k)
		perShard[shardOf(k)] = append(perShard[shardOf(k)], k)
	}
	for i, keys := range perShard {
		require.GreaterOrEqual(t, len(keys), 20, "shard %d's exhausted keys", i)
	}
	// Each replica holds its primary's writes: a write on the primary's
	// own connection, then WAIT, covers every earlier one.
	for i, p := range ps {
		barrier := keysInSlots("barrier:", ranges[i][0], ranges[i][1], 1)[0]
		require.True(t, strings.HasPrefix(p.c.Do("CL.THROTTLE", barrier, "15", "1", "3600"), "[0 "))
		require.Equal(t, "1", p.c.Do("WAIT", "1", "10000"), "shard %d's replica acknowledged", i)
	}

	// Throughout the failover a second user of the client asks for the
	// exhausted keys: errors are expected while the shard has no primary,
	// an admitted request never.
	var bgAdmitted, bgErrors, bgCalls atomic.Int64
	var bgFirstAdmitted atomic.Value
	bgStop, bgDone := make(chan struct{}), make(chan struct{})
	go func() {
		defer close(bgDone)
		for i := 0; ; i++ {
			select {
			case <-bgStop:
				return
			default:
			}
			k := exhausted[i%len(exhausted)]
			switch v, err := throttle(ctx, cc, k, 15, 1, 3600); {
			case err != nil:
				bgErrors.Add(1)
				time.Sleep(10 * time.Millisecond) // pacing the retries of a dead shard, not a wait for state
			case v == 0:
				bgAdmitted.Add(1)
				bgFirstAdmitted.CompareAndSwap(nil, k)
			}
			bgCalls.Add(1)
		}
	}()
	stopBackground := func() {
		select {
		case <-bgStop:
			return
		default:
		}
		close(bgStop)
		<-bgDone
		t.Logf("during the failover the second user made %d calls: %d errors, %d admitted", bgCalls.Load(), bgErrors.Load(), bgAdmitted.Load())
		require.Zero(t, bgAdmitted.Load(), "exhausted keys admitted during the failover (the first: %v)", bgFirstAdmitted.Load())
	}
	defer stopBackground()

	const dead = 1
	killed := time.Now()
	ps[dead].stop(t, "SIGKILL")
	var promoted time.Time
	rltest.WaitFor(t, sentinelActs, "a Sentinel to name shard1's replica its master", func() (bool, string) {
		var state []string
		for i, s := range sentinels {
			a, err := s.Do(ctx, "SENTINEL", "GET-MASTER-ADDR-BY-NAME", "shard1").StringSlice()
			if err == nil && len(a) == 2 && a[1] == rs[dead].portStr() {
				promoted = time.Now()
				return true, ""
			}
			state = append(state, fmt.Sprintf("sentinel %d: %v %v", i, a, err))
		}
		return false, strings.Join(state, "; ")
	})
	t.Logf("SIGKILL to a Sentinel naming the replica: %v", promoted.Sub(killed).Round(time.Millisecond))

	// Every surviving node names the new primary: shard1 is the promoted
	// node alone (the dead one is no replica with a link up). About a
	// second on an idle machine (logged below, the figure docs quote); the
	// deadline is only what a loaded machine may need, not the claim.
	survivors := slices.DeleteFunc(slices.Clone(all), func(n *cnode) bool { return n == ps[dead] })
	newPrimaries := []*mapNode{pm[0], rm[1], pm[2]}
	after := entries(newPrimaries, [][]*mapNode{{rm[0]}, nil, {rm[2]}})
	waitSlots(t, 15*time.Second, "every surviving node's CLUSTER SLOTS to name the promoted replica", survivors, after)
	t.Logf("promotion seen to every node's CLUSTER SLOTS naming it: %v", time.Since(promoted).Round(time.Millisecond))
	// NODES and SHARDS name it too: the one live primary with shard1's
	// slots.
	for _, n := range survivors {
		txt := text(t, query(t, n.addr, "CLUSTER", "NODES"))
		var live []string
		for _, l := range strings.Split(strings.TrimSuffix(txt, "\n"), "\n") {
			f := strings.Fields(l)
			require.GreaterOrEqual(t, len(f), 8, "CLUSTER NODES line %q", l)
			flags := strings.Split(strings.Replace(f[2], "myself,", "", 1), ",")
			if slices.Contains(flags, "master") && !slices.Contains(flags, "fail") && strings.Join(f[8:], " ") == "5461-10922" {
				live = append(live, f[0])
			}
		}
		require.Equal(t, []string{rm[dead].id}, live, "CLUSTER NODES on :%d: the live primary of 5461-10922\n%s", n.m.port, txt)
		c := redis.NewClient(&redis.Options{Addr: n.addr})
		shards, err := c.ClusterShards(ctx).Result()
		c.Close()
		require.NoError(t, err, "CLUSTER SHARDS on :%d", n.m.port)
		var masters []string
		for _, sh := range shards {
			if len(sh.Slots) == 1 && sh.Slots[0] == (redis.SlotRange{Start: 5461, End: 10922}) {
				for _, nd := range sh.Nodes {
					if nd.Role == "master" && nd.Health == "online" {
						masters = append(masters, nd.ID)
					}
				}
			}
		}
		require.Equal(t, []string{rm[dead].id}, masters, "CLUSTER SHARDS on :%d: the online master of 5461-10922: %+v", n.m.port, shards)
	}
	k1 := perShard[dead][0]
	for _, n := range survivors {
		if n == rs[dead] {
			continue
		}
		require.Equal(t, movedTo(keySlot(k1), rs[dead]), query(t, n.addr, "CL.THROTTLE", k1, "15", "1", "3600"), "MOVED on :%d", n.m.port)
	}

	// The same client: errors are allowed until its first good reply of
	// each shard (it may still hold the dead node's address), none after.
	var clientErrors int
	for i, keys := range perShard {
		rltest.WaitFor(t, 15*time.Second, fmt.Sprintf("the client's first reply for shard %d", i), func() (bool, string) {
			v, err := throttle(ctx, cc, keys[0], 15, 1, 3600)
			if err != nil {
				clientErrors++
				return false, err.Error()
			}
			require.Equal(t, int64(1), v, "%s (shard %d) after the failover: still limited", keys[0], i)
			return true, ""
		})
	}
	t.Logf("client errors before its first good replies: %d; first good reply of every shard %v after the SIGKILL",
		clientErrors, time.Since(killed).Round(time.Millisecond))
	stopBackground()
	requireHeld := func(when string) {
		t.Helper()
		for _, k := range exhausted {
			v, err := throttle(ctx, cc, k, 15, 1, 3600)
			require.NoError(t, err, "%s: CL.THROTTLE %s", when, k)
			require.Equal(t, int64(1), v, "%s: %s (shard %d) is still limited", when, k, shardOf(k))
		}
	}
	requireHeld("after the failover")
	for i := range 60 {
		k := "new:" + strconv.Itoa(i)
		v, err := throttle(ctx, cc, k, 15, 1, 3600)
		require.NoError(t, err, "CL.THROTTLE %s after the failover", k)
		require.Equal(t, int64(0), v, "a new key %s (shard %d) is admitted", k, shardOf(k))
	}

	// The killed primary restarted from the same map, which calls it a
	// primary, asks its shard's other nodes before serving and follows the
	// promoted one (docs/cluster.md, "Following a failover"): it never
	// decides again, no node names it primary of the shard again, and it
	// redirects writes to the new primary from its first request on
	// (sentinel.md's trap 6, the window of double admission, is closed).
	restarted := time.Now()
	ps[dead] = startClusterNode(t, mapPath, pm[dead])
	require.Equal(t, movedTo(keySlot(k1), rs[dead]), query(t, ps[dead].addr, "CL.THROTTLE", k1, "15", "1", "3600"),
		"the restarted primary's first answer for an exhausted key of its shard")
	shard1 := fmt.Sprintf(`[5461 10922 ["127.0.0.1" %d %q []]`, rm[dead].port, rm[dead].id)
	rltest.WaitFor(t, sentinelActs, "the restarted primary to be the promoted node's replica, its link up", func() (bool, string) {
		for _, n := range all {
			s := query(t, n.addr, "CLUSTER", "SLOTS")
			require.Contains(t, s, shard1, "CLUSTER SLOTS on :%d %v after the restart: the promoted node stays shard1's primary",
				n.m.port, time.Since(restarted).Round(time.Millisecond))
		}
		// Sentinel's CLIENT KILL TYPE normal may close the poll's connection.
		f, err := rltest.AskInfo(ps[dead].addr, "replication")
		return err == nil && f["role"] == "slave" && f["master_port"] == rs[dead].portStr() && f["master_link_status"] == "up", fmt.Sprint(f, err)
	})
	t.Logf("restarted primary following the promoted node after %v", time.Since(restarted).Round(time.Millisecond))
	require.Equal(t, movedTo(keySlot(k1), rs[dead]), query(t, ps[dead].addr, "CL.THROTTLE", k1, "15", "1", "3600"),
		"the demoted node redirects writes to the new primary")
	waitSlots(t, 15*time.Second, "every node to list the demoted node as the new primary's replica", all,
		entries(newPrimaries, [][]*mapNode{{rm[0]}, {pm[dead]}, {rm[2]}}))
	requireHeld("after the old primary came back")
}

// ---------------------------------------------------------------------
// 3. A slot range moves to another shard.

// rawConn is a RESP connection a goroutine may use (no testing.T).
type rawConn struct {
	nc net.Conn
	rd *bufio.Reader
}

func (c *rawConn) do(cmds ...[]string) ([]string, error) {
	var b []byte
	for _, cmd := range cmds {
		b = append(b, rltest.Encode(cmd...)...)
	}
	c.nc.SetDeadline(time.Now().Add(10 * time.Second))
	if _, err := c.nc.Write(b); err != nil {
		return nil, err
	}
	out := make([]string, len(cmds))
	for i := range cmds {
		r, err := rltest.ReadReply(c.rd)
		if err != nil {
			return nil, err
		}
		out[i] = r
	}
	return out, nil
}

var redirectRE = regexp.MustCompile(`^-(MOVED|ASK) (\d+) (\S+)$`)

// movePoller asks for exhausted keys again and again while a slot range
// moves, as a cluster client does (following MOVED, and ASK with ASKING,
// a few hops), and counts what it finally gets. An admitted reply is a
// limit lost.
type movePoller struct {
	keys   []string
	starts []string // the addresses it asks first, in turn
	args   []string // after the key
	stop   chan struct{}
	done   chan struct{}
	rounds atomic.Int64

	mu     sync.Mutex
	counts map[string]int
	bad    []string // the first admitted or unexpected answers, with their paths
	err    error
}

func startMovePoller(keys, starts, args []string) *movePoller {
	p := &movePoller{keys: keys, starts: starts, args: args, stop: make(chan struct{}), done: make(chan struct{}), counts: map[string]int{}}
	go p.run()
	return p
}

func (p *movePoller) run() {
	defer close(p.done)
	conns := map[string]*rawConn{}
	defer func() {
		for _, c := range conns {
			c.nc.Close()
		}
	}()
	conn := func(addr string) (*rawConn, error) {
		if c := conns[addr]; c != nil {
			return c, nil
		}
		nc, err := net.DialTimeout("tcp", addr, 5*time.Second)
		if err != nil {
			return nil, err
		}
		conns[addr] = &rawConn{nc: nc, rd: bufio.NewReader(nc)}
		return conns[addr], nil
	}
	for round := 0; ; round++ {
		for i, k := range p.keys {
			select {
			case <-p.stop:
				return
			default:
			}
			addr := p.starts[(i+round)%len(p.starts)]
			cmd := append([]string{"CL.THROTTLE", k}, p.args...)
			path := fmt.Sprintf("%s (slot %d):", k, keySlot(k))
			asking := false
			var reply string
			for hop := 0; hop < 5; hop++ {
				c, err := conn(addr)
				if err != nil {
					p.fail(fmt.Errorf("%s dial %s: %w", path, addr, err))
					return
				}
				cmds := [][]string{cmd}
				if asking {
					cmds = [][]string{{"ASKING"}, cmd}
				}
				rs, err := c.do(cmds...)
				if err != nil {
					p.fail(fmt.Errorf("%s %s: %w", path, addr, err))
					return
				}
				reply = rs[len(rs)-1]
				if asking {
					path += fmt.Sprintf(" ASKING@%s=%s", addr, rs[0])
				}
				path += fmt.Sprintf(" %s=%s", addr, reply)
				m := redirectRE.FindStringSubmatch(reply)
				if m == nil {
					break
				}
				addr, asking = m[3], m[1] == "ASK"
			}
			var class string
			switch {
			case strings.HasPrefix(reply, "[1 16 0 "):
				class = "limited"
			case strings.HasPrefix(reply, "-TRYAGAIN"):
				class = "TRYAGAIN"
			case redirectRE.MatchString(reply):
				class = "redirected 5 times"
			case strings.HasPrefix(reply, "[0 "):
				class = "ADMITTED"
			default:
				class = "unexpected"
			}
			p.mu.Lock()
			p.counts[class]++
			if (class == "ADMITTED" || class == "unexpected") && len(p.bad) < 10 {
				p.bad = append(p.bad, path)
			}
			p.mu.Unlock()
		}
		p.rounds.Add(1)
	}
}

func (p *movePoller) fail(err error) {
	p.mu.Lock()
	p.err = err
	p.mu.Unlock()
}

// waitRounds waits until the poller completed n more rounds.
func (p *movePoller) waitRounds(t *testing.T, n int64, what string) {
	t.Helper()
	target := p.rounds.Load() + n
	rltest.WaitFor(t, 20*time.Second, fmt.Sprintf("%d rounds of the poller %s", n, what), func() (bool, string) {
		select {
		case <-p.done:
			p.mu.Lock()
			defer p.mu.Unlock()
			t.Fatalf("the poller stopped: %v", p.err)
		default:
		}
		return p.rounds.Load() >= target, fmt.Sprintf("%d rounds", p.rounds.Load())
	})
}

func (p *movePoller) finish(t *testing.T) {
	t.Helper()
	close(p.stop)
	<-p.done
	p.mu.Lock()
	defer p.mu.Unlock()
	t.Logf("requests for exhausted keys during the move: %v (%d rounds)", p.counts, p.rounds.Load())
	require.NoError(t, p.err, "the poller's connections")
	require.Zero(t, p.counts["ADMITTED"], "exhausted keys admitted during the move:\n%s", strings.Join(p.bad, "\n"))
	require.Zero(t, p.counts["unexpected"], "answers other than a limit, a redirect or TRYAGAIN during the move:\n%s", strings.Join(p.bad, "\n"))
}

// TestClusterMoveSlotKeepsLimits: primaries A (0-8191) and B (8192-16383)
// on the manual clock. 200 keys of slots 0-4095 are exhausted on A
// (CL.THROTTLE k 15 30 60: 16 admitted, then limited), and 20 of A's
// other slots. A new map (currentEpoch 2) gives 0-4095 to B; the nodes
// get SIGHUP one after the other, in either order, a poller asking for
// the exhausted keys throughout (as a client does, following MOVED and
// ASK). No request is ever admitted; once B serves the range every moved
// key is limited on B, A redirects them to B, both nodes describe the new
// map, and a ClusterClient that knew the old map finds every limit held.
// With B's clock an hour behind A's, B's clock is not below A's records'
// afterwards.
func TestClusterMoveSlotKeepsLimits(t *testing.T) {
	rltest.Long(t, "a slot range moved under load")
	for _, tc := range []struct {
		name    string
		bFirst  bool
		bBehind int64 // ms
	}{
		{"SIGHUP B then A", true, 0},
		{"SIGHUP A then B", false, 0},
		{"B's clock an hour behind", true, 3600_000},
	} {
		t.Run(tc.name, func(t *testing.T) {
			ctx := context.Background()
			am := &mapNode{id: nodeID("move/a"), port: freePort(t), epoch: 1, slots: [][2]int{{0, 8191}}}
			bm := &mapNode{id: nodeID("move/b"), port: freePort(t), epoch: 1, slots: [][2]int{{8192, 16383}}}
			mapPath := filepath.Join(t.TempDir(), "nodes.conf")
			writeClusterMap(t, mapPath, 1, am, bm)
			a := startClusterNode(t, mapPath, am, manual(startMs)...)
			b := startClusterNode(t, mapPath, bm, manual(startMs-tc.bBehind)...)
			ab := []*cnode{a, b}
			waitSlots(t, 10*time.Second, "both nodes' CLUSTER SLOTS", ab,
				slotsText(slotsEntry{0, 8191, []*mapNode{am}}, slotsEntry{8192, 16383, []*mapNode{bm}}))
			waitNodes(t, 10*time.Second, ab, am, bm)
			require.Equal(t, (startMs-tc.bBehind)*1000, serverTime(t, b.c))
			aTime := serverTime(t, a.c)

			moved := keysInSlots("mv:", 0, 4095, 200)
			kept := keysInSlots("st:", 4096, 8191, 20)
			var cmds [][]string
			for _, k := range append(slices.Clone(moved), kept...) {
				for range 17 {
					cmds = append(cmds, []string{"CL.THROTTLE", k, "15", "30", "60"})
				}
			}
			for i, r := range rltest.Pipeline(t, a.c, cmds) {
				want := "[0 "
				if i%17 == 16 {
					want = "[1 16 0 "
				}
				require.True(t, strings.HasPrefix(r, want), "%q, call %d: %s", cmds[i], i%17+1, r)
			}
			// A client that knows the old map.
			cc := redis.NewClusterClient(&redis.ClusterOptions{Addrs: []string{a.addr}})
			t.Cleanup(func() { cc.Close() })
			for _, k := range kept {
				v, err := throttle(ctx, cc, k, 15, 30, 60)
				require.NoError(t, err)
				require.Equal(t, int64(1), v, "%s before the move", k)
			}

			poller := startMovePoller(moved, []string{a.addr, b.addr}, []string{"15", "30", "60"})
			defer func() {
				select {
				case <-poller.stop:
					return // finished
				default:
					close(poller.stop)
				}
				<-poller.done
				poller.mu.Lock()
				defer poller.mu.Unlock()
				t.Logf("the poller, stopped by a failure: %v (%d rounds), error %v; admitted or unexpected:\n%s",
					poller.counts, poller.rounds.Load(), poller.err, strings.Join(poller.bad, "\n"))
			}()
			poller.waitRounds(t, 1, "before the move")

			am2 := &mapNode{id: am.id, port: am.port, epoch: 1, slots: [][2]int{{4096, 8191}}}
			bm2 := &mapNode{id: bm.id, port: bm.port, epoch: 2, slots: [][2]int{{0, 4095}, {8192, 16383}}}
			writeClusterMap(t, mapPath, 2, am2, bm2)
			first, second := a, b
			if tc.bFirst {
				first, second = b, a
			}
			require.NoError(t, first.cmd.Process.Signal(syscall.SIGHUP))
			rltest.WaitFor(t, 10*time.Second, "the first node to load the new map", func() (bool, string) {
				e := clusterInfo(t, first.addr)["cluster_current_epoch"]
				return e == "2", "cluster_current_epoch:" + e
			})
			// One node has the new map, the other the old one.
			poller.waitRounds(t, 2, "with one node on the new map")
			sighup := time.Now()
			require.NoError(t, second.cmd.Process.Signal(syscall.SIGHUP))
			var cmdsB [][]string
			for _, k := range moved {
				cmdsB = append(cmdsB, []string{"CL.THROTTLE", k, "15", "30", "60"})
			}
			rltest.WaitFor(t, 20*time.Second, "B to serve every moved key", func() (bool, string) {
				rs := rltest.Pipeline(t, b.c, cmdsB)
				for i, r := range rs {
					if strings.HasPrefix(r, "[0 ") {
						t.Fatalf("B admitted the exhausted key %s: %s", moved[i], r)
					}
					if !strings.HasPrefix(r, "[1 16 0 ") {
						return false, fmt.Sprintf("%s on B: %s", moved[i], r)
					}
				}
				return true, ""
			})
			t.Logf("the second SIGHUP to B serving every moved key: %v", time.Since(sighup).Round(time.Millisecond))
			poller.waitRounds(t, 2, "after the move")
			poller.finish(t)

			for _, k := range moved {
				for _, cmd := range [][]string{{"CL.THROTTLE", k, "15", "30", "60"}, {"PTTL", k}} {
					require.Equal(t, movedTo(keySlot(k), b), a.c.Do(cmd...), "%q on A after the move", cmd)
				}
			}
			for _, k := range kept {
				require.True(t, strings.HasPrefix(a.c.Do("CL.THROTTLE", k, "15", "30", "60"), "[1 16 0 "), "%s stays A's, limited", k)
				require.Equal(t, movedTo(keySlot(k), a), b.c.Do("CL.THROTTLE", k, "15", "30", "60"), "%s on B", k)
			}
			newSlots := slotsText(slotsEntry{0, 4095, []*mapNode{bm2}}, slotsEntry{4096, 8191, []*mapNode{am2}}, slotsEntry{8192, 16383, []*mapNode{bm2}})
			for _, n := range ab {
				require.Equal(t, newSlots, n.c.Do("CLUSTER", "SLOTS"), "CLUSTER SLOTS on :%d", n.m.port)
				requireNodes(t, n, am2, bm2)
				require.Equal(t, "2", clusterInfo(t, n.addr)["cluster_current_epoch"])
			}
			// The records moved with their slots.
			bySlot := map[int]int{}
			for _, k := range moved {
				bySlot[keySlot(k)]++
			}
			for s, n := range bySlot {
				require.Equal(t, strconv.Itoa(n), b.c.Do("CLUSTER", "COUNTKEYSINSLOT", strconv.Itoa(s)), "COUNTKEYSINSLOT %d on B", s)
			}
			// The old owner took the moved keys out of its keyspace
			// (docs/cluster.md, "Moving slots", step 4): one budget per key.
			require.Equal(t, strconv.Itoa(len(kept)), a.c.Do("DBSIZE"), "A holds only the keys of the slots it kept")
			require.Equal(t, "0", a.c.Do("CLUSTER", "COUNTKEYSINSLOT", strconv.Itoa(keySlot(moved[0]))))
			require.GreaterOrEqual(t, serverTime(t, b.c), aTime, "B's clock is not below the clock of the records it took in")
			// The client that knew the old map follows MOVED: every limit held.
			for _, k := range append(slices.Clone(moved), kept...) {
				v, err := throttle(ctx, cc, k, 15, 30, 60)
				require.NoError(t, err, "ClusterClient, %s after the move", k)
				require.Equal(t, int64(1), v, "ClusterClient, %s (slot %d) after the move: still limited", k, keySlot(k))
			}
		})
	}
}

// ---------------------------------------------------------------------
// 4. Maps refused.

// TestClusterMapRefused: a map with a slot given twice, an unknown
// primary, a malformed line, or leaving slots unowned refuses to start,
// naming the file and line (and what is wrong where a value says it). With
// --cluster-require-full-coverage no the partial map starts, cluster_state
// is ok and unowned slots answer CLUSTERDOWN. On SIGHUP, a map with a
// lower currentEpoch, or a malformed one, is refused (logged) and the
// loaded map kept; a higher one is taken.
func TestClusterMapRefused(t *testing.T) {
	rltest.Long(t, "a dozen refused starts of the binary")
	// The refused maps name the node at the port it is given (a free one:
	// a map taken by mistake would listen there).
	x := &mapNode{id: nodeID("refused/x"), port: freePort(t), epoch: 1, slots: [][2]int{{0, 16383}}}
	xaddr := fmt.Sprintf("127.0.0.1:%d@%d", x.port, cport(x.port))
	xl := func(slots string) string {
		return fmt.Sprintf("%s %s master - 0 0 1 connected %s", x.id, xaddr, slots)
	}
	y := nodeID("refused/y")
	unknown := nodeID("refused/nobody")
	vars := "vars currentEpoch 1 lastVoteEpoch 0"
	for _, tc := range []struct {
		name  string
		lines []string
		line  int      // the line named; 0: none
		also  []string // more text the error must contain
	}{
		{"a slot given twice", []string{xl("0-5460"), y + " 127.0.0.1:7002@17002 master - 0 0 2 connected 5000-16383", vars}, 2, []string{"5000"}},
		{"a slot given twice on one line", []string{xl("0-16383 100"), vars}, 1, []string{"100"}},
		{"an unknown primary", []string{xl("0-16383"), y + " 127.0.0.1:7002@17002 slave " + unknown + " 0 0 1 connected", vars}, 2, []string{unknown}},
		{"an id that is not 40 hex characters", []string{"abc " + xaddr + " master - 0 0 1 connected 0-16383", vars}, 1, nil},
		{"an address without a port", []string{x.id + " 127.0.0.1 master - 0 0 1 connected 0-16383", vars}, 1, nil},
		{"a line cut short", []string{x.id + " " + xaddr + " master", vars}, 1, nil},
		{"an unknown role", []string{x.id + " " + xaddr + " leader - 0 0 1 connected 0-16383", vars}, 1, nil},
		{"a slot past 16383", []string{xl("0-16384"), vars}, 1, nil},
		{"a range backwards", []string{xl("0-100 16383-101"), vars}, 1, nil},
		{"a slot that is not a number", []string{xl("0-16383x"), vars}, 1, nil},
		{"a bad vars line", []string{xl("0-16383"), "vars currentEpoch one lastVoteEpoch 0"}, 2, nil},
		{"a node listed twice", []string{xl("0-8191"), x.id + " 127.0.0.1:7002@17002 master - 0 0 2 connected 8192-16383", vars}, 2, nil},
		{"slots left unowned", []string{xl("0-16000"), vars}, 0, nil},
	} {
		t.Run(tc.name, func(t *testing.T) {
			path := filepath.Join(t.TempDir(), "nodes.conf")
			require.NoError(t, os.WriteFile(path, []byte(strings.Join(tc.lines, "\n")+"\n"), 0o644))
			code, stderr := runRefused(t, "--port", strconv.Itoa(x.port), "--cluster-config", path, "--cluster-node-id", x.id, "--save-interval", "0")
			require.NotEqual(t, 0, code, "the node started on a bad map; stderr:\n%s", stderr)
			require.NotContains(t, stderr, "rlserver started")
			named := path
			if tc.line > 0 {
				named = fmt.Sprintf("%s:%d", path, tc.line)
			}
			require.Contains(t, stderr, named, "the error names the file (and line)")
			for _, s := range tc.also {
				require.Contains(t, stderr, s, "the error says what is wrong")
			}
			if tc.name == "slots left unowned" {
				// The first unowned slot, or how many are.
				require.Regexp(t, `\b(16001|383)\b`, stderr, "the error says which slots have no owner")
			}
		})
	}
	t.Run("flags", func(t *testing.T) {
		path := filepath.Join(t.TempDir(), "nodes.conf")
		require.NoError(t, os.WriteFile(path, []byte(xl("0-16383")+"\n"+vars+"\n"), 0o644))
		for _, tc := range []struct {
			args []string
			want []string
		}{
			{[]string{"--cluster-config", path, "--cluster-node-id", unknown}, []string{path, unknown}}, // not in the map
			{[]string{"--cluster-config", path, "--cluster-node-id", "xyz"}, []string{"xyz"}},
			{[]string{"--cluster-config", path + ".missing", "--cluster-node-id", x.id}, []string{path + ".missing"}},
			{[]string{"--cluster-config", path, "--cluster-node-id", x.id, "--cluster-require-full-coverage", "maybe"},
				[]string{"cluster-require-full-coverage", "maybe"}},
		} {
			code, stderr := runRefused(t, append(tc.args, "--port", strconv.Itoa(x.port), "--save-interval", "0")...)
			require.NotEqual(t, 0, code, "%q started; stderr:\n%s", tc.args, stderr)
			for _, s := range tc.want {
				require.Contains(t, stderr, s, "%q", tc.args)
			}
		}
	})

	t.Run("partial coverage allowed", func(t *testing.T) {
		m := &mapNode{id: x.id, port: freePort(t), epoch: 1, slots: [][2]int{{0, 16000}}}
		path := filepath.Join(t.TempDir(), "nodes.conf")
		writeClusterMap(t, path, 1, m)
		n := startClusterNode(t, path, m, append(manual(startMs), "--cluster-require-full-coverage", "no")...)
		ci := clusterInfo(t, n.addr)
		require.Equal(t, "ok", ci["cluster_state"], "%v", ci)
		require.Equal(t, "16001", ci["cluster_slots_assigned"], "%v", ci)
		require.Equal(t, slotsText(slotsEntry{0, 16000, []*mapNode{m}}), n.c.Do("CLUSTER", "SLOTS"))
		unowned := keysInSlots("u", 16001, 16383, 1)[0]
		owned := keysInSlots("o", 0, 16000, 1)[0]
		require.Equal(t, "-CLUSTERDOWN Hash slot not served", n.c.Do("CL.THROTTLE", unowned, "15", "30", "60"), "slot %d", keySlot(unowned))
		require.Equal(t, "[0 16 15 -1 2]", n.c.Do("CL.THROTTLE", owned, "15", "30", "60"), "slot %d", keySlot(owned))
		// Redis's order: the first key's slot unowned, then keys of two
		// slots.
		require.Equal(t, "-CLUSTERDOWN Hash slot not served", n.c.Do("DEL", unowned, owned))
		require.Equal(t, crossslot, n.c.Do("DEL", owned, unowned))
		require.Equal(t, "1", n.c.Do("DBSIZE"))
	})

	t.Run("SIGHUP keeps the loaded map unless its epoch is higher", func(t *testing.T) {
		xm := &mapNode{id: x.id, port: freePort(t), epoch: 5, slots: [][2]int{{0, 8191}}}
		ym := &mapNode{id: y, port: freePort(t), epoch: 5, slots: [][2]int{{8192, 16383}}}
		path := filepath.Join(t.TempDir(), "nodes.conf")
		writeClusterMap(t, path, 5, xm, ym)
		xn := startClusterNode(t, path, xm, manual(startMs)...)
		yn := startClusterNode(t, path, ym, manual(startMs)...)
		xKey, yKey := keysInSlots("x", 0, 8191, 1)[0], keysInSlots("y", 8192, 16383, 1)[0]
		requireOld := func(when string) {
			t.Helper()
			require.Equal(t, "5", clusterInfo(t, xn.addr)["cluster_current_epoch"], when)
			requireNodes(t, xn, xm, ym)
			require.Equal(t, movedTo(keySlot(yKey), yn), xn.c.Do("PTTL", yKey), when)
			require.Equal(t, "-2", xn.c.Do("PTTL", xKey), when)
		}
		waitNodes(t, 10*time.Second, []*cnode{xn, yn}, xm, ym)
		requireOld("at start")
		for _, bad := range []struct{ name, content string }{
			{"a lower currentEpoch", fmt.Sprintf("%s\n%s\nvars currentEpoch 4 lastVoteEpoch 0\n",
				(&mapNode{id: xm.id, port: xm.port, epoch: 4, slots: [][2]int{{8192, 16383}}}).line(),
				(&mapNode{id: ym.id, port: ym.port, epoch: 4, slots: [][2]int{{0, 8191}}}).line())},
			{"a malformed map", fmt.Sprintf("%s\n%s 127.0.0.1\nvars currentEpoch 9 lastVoteEpoch 0\n", xm.line(), ym.id)},
		} {
			writeFileAtomic(t, path, bad.content)
			_, from := xn.log.since(0)
			require.NoError(t, xn.cmd.Process.Signal(syscall.SIGHUP))
			rltest.WaitFor(t, 10*time.Second, "a log line saying the map was refused", func() (bool, string) {
				lines, _ := xn.log.since(from)
				for _, l := range lines {
					if strings.Contains(l, path) || strings.Contains(strings.ToLower(l), "epoch") {
						t.Logf("SIGHUP with %s: %s", bad.name, l)
						return true, ""
					}
				}
				return false, strings.Join(lines, "\n")
			})
			requireOld("after SIGHUP with " + bad.name)
		}

		// A higher epoch is taken: a replica of Y joins the map.
		zm := &mapNode{id: nodeID("refused/z"), port: freePort(t), primary: ym, epoch: 6}
		ym6 := &mapNode{id: ym.id, port: ym.port, epoch: 6, slots: ym.slots}
		writeClusterMap(t, path, 6, xm, ym6, zm)
		zn := startClusterNode(t, path, zm, manual(startMs)...)
		rltest.WaitLinkUp(t, zn.c)
		for _, n := range []*cnode{xn, yn} {
			require.NoError(t, n.cmd.Process.Signal(syscall.SIGHUP))
		}
		rltest.WaitFor(t, 10*time.Second, "the nodes to load currentEpoch 6", func() (bool, string) {
			for _, n := range []*cnode{xn, yn, zn} {
				if e := clusterInfo(t, n.addr)["cluster_current_epoch"]; e != "6" {
					return false, fmt.Sprintf(":%d cluster_current_epoch:%s", n.m.port, e)
				}
			}
			return true, ""
		})
		waitNodes(t, 10*time.Second, []*cnode{xn, yn, zn}, xm, ym6, zm)
		for _, n := range []*cnode{xn, yn, zn} {
			require.Equal(t, "3", clusterInfo(t, n.addr)["cluster_known_nodes"])
		}
		waitSlots(t, 15*time.Second, "the replica listed", []*cnode{xn, yn, zn},
			slotsText(slotsEntry{0, 8191, []*mapNode{xm}}, slotsEntry{8192, 16383, []*mapNode{ym6, zm}}))
	})
}

// TestClusterDisabled: outside cluster mode the cluster commands answer
// Redis's error, and INFO cluster says cluster_enabled:0.
func TestClusterDisabled(t *testing.T) {
	n := startNode(t, t.TempDir(), manual(startMs, "--save-interval", "0")...)
	for _, cmd := range [][]string{{"CLUSTER", "INFO"}, {"CLUSTER", "SLOTS"}, {"CLUSTER", "NODES"}, {"CLUSTER", "SHARDS"},
		{"CLUSTER", "MYID"}, {"CLUSTER", "KEYSLOT", "foo"}, {"READONLY"}, {"READWRITE"}, {"ASKING"}} {
		require.Equal(t, "-ERR This instance has cluster support disabled", n.c.Do(cmd...), "%q", cmd)
	}
	require.Equal(t, "0", rltest.Info(t, n.c, "cluster")["cluster_enabled"])
	// Keys of any slots, as ever.
	require.Equal(t, "0", n.c.Do("DEL", "foo", "bar"))
}

package commands

import (
	"fmt"
	"strings"

	"github.com/rlserver/rlserver/cluster"
	"github.com/rlserver/rlserver/engine"
	"github.com/rlserver/rlserver/internal/redisint"
)

// The cluster family (docs/cluster.md): CLUSTER's subcommands, READONLY,
// READWRITE and ASKING. Replies follow Redis 7.0's shapes.

// clusterOf is the node's cluster view, or nil after replying
// ErrClusterOff.
func clusterOf(x *Ctx) *cluster.Cluster {
	c := x.N.Cluster()
	if c == nil {
		x.Error(ErrClusterOff)
	}
	return c
}

func cmdReadOnlyConn(x *Ctx) {
	if clusterOf(x) != nil {
		x.C.readOnly = true
		x.OK()
	}
}

func cmdReadWriteConn(x *Ctx) {
	if clusterOf(x) != nil {
		x.C.readOnly = false
		x.OK()
	}
}

// cmdAsking accepts ASKING: rlserver's ASK sends a client to the node
// that still decides a slot, which serves it with or without ASKING.
func cmdAsking(x *Ctx) {
	if clusterOf(x) != nil {
		x.OK()
	}
}

func cmdClusterMyID(x *Ctx) {
	if c := clusterOf(x); c != nil {
		x.W.BulkString(c.Self())
	}
}

func cmdClusterKeySlot(x *Ctx) {
	if clusterOf(x) != nil {
		x.W.Int(int64(cluster.Slot(x.Args[2])))
	}
}

// slotArg parses a slot number: not an integer is Redis's ErrNotInteger,
// out of range the caller's error.
func slotArg(x *Ctx, b []byte, bad Error) (int, bool) {
	n, ok := redisint.Parse(b)
	if !ok {
		x.Error(ErrNotInteger)
		return 0, false
	}
	if n < 0 || n >= cluster.Slots {
		x.Error(bad)
		return 0, false
	}
	return int(n), true
}

// keysInSlot passes fn each live key of slot, until fn returns false. It
// reads every shard: O(keys held).
func keysInSlot(x *Ctx, slot int, fn func(key string) bool) {
	more := true
	for i := 0; i < x.N.Shards() && more; i++ {
		x.Store.ScanShard(i, x.Now, func(k engine.KeyInfo) {
			if more && cluster.Slot([]byte(k.Key)) == slot {
				more = fn(k.Key)
			}
		})
	}
}

func cmdClusterCountKeys(x *Ctx) {
	if clusterOf(x) == nil {
		return
	}
	slot, ok := slotArg(x, x.Args[2], ErrInvalidSlot)
	if !ok {
		return
	}
	n := 0
	keysInSlot(x, slot, func(string) bool { n++; return true })
	x.W.Int(int64(n))
}

func cmdClusterGetKeys(x *Ctx) {
	if clusterOf(x) == nil {
		return
	}
	slot, ok1 := redisint.Parse(x.Args[2])
	count, ok2 := redisint.Parse(x.Args[3])
	switch {
	case !ok1 || !ok2:
		x.Error(ErrNotInteger)
		return
	case slot < 0 || slot >= cluster.Slots || count < 0:
		x.Error(ErrInvalidSlotCount)
		return
	}
	var keys []string
	keysInSlot(x, int(slot), func(k string) bool {
		if int64(len(keys)) >= count {
			return false
		}
		keys = append(keys, k)
		return true
	})
	x.W.Array(len(keys))
	for _, k := range keys {
		x.W.BulkString(k)
	}
}

// cmdClusterSlots: [[start, end, primary, replicas...]...] in slot order,
// a node as [ip, port, id, {}]; a replica once its link is up.
func cmdClusterSlots(x *Ctx) {
	c := clusterOf(x)
	if c == nil {
		return
	}
	t := c.Topology()
	w := x.W
	w.Array(len(t.Slots))
	for _, sr := range t.Slots {
		sh := t.Shards[sr.Shard]
		nodes := []cluster.NodeInfo{t.Nodes[sh.Nodes[0]]}
		for _, i := range sh.Nodes[1:] {
			if n := t.Nodes[i]; !n.Master && n.LinkUp && !n.Failed {
				nodes = append(nodes, n)
			}
		}
		w.Array(2 + len(nodes))
		w.Int(int64(sr.Start))
		w.Int(int64(sr.End))
		for _, n := range nodes {
			w.Array(4)
			w.BulkString(n.IP)
			w.Int(int64(n.Port))
			w.BulkString(n.ID)
			w.Map(0)
		}
	}
}

// cmdClusterShards: [{slots: [s, e...], nodes: [{id, port, ip, endpoint,
// role, replication-offset, health}...]}...].
func cmdClusterShards(x *Ctx) {
	c := clusterOf(x)
	if c == nil {
		return
	}
	t := c.Topology()
	w := x.W
	w.Array(len(t.Shards))
	for _, sh := range t.Shards {
		w.Map(2)
		w.BulkString("slots")
		w.Array(2 * len(sh.Ranges))
		for _, r := range sh.Ranges {
			w.Int(int64(r.Start))
			w.Int(int64(r.End))
		}
		w.BulkString("nodes")
		w.Array(len(sh.Nodes))
		for _, i := range sh.Nodes {
			n := t.Nodes[i]
			w.Map(7)
			w.BulkString("id")
			w.BulkString(n.ID)
			w.BulkString("port")
			w.Int(int64(n.Port))
			w.BulkString("ip")
			w.BulkString(n.IP)
			w.BulkString("endpoint")
			w.BulkString(n.IP)
			w.BulkString("role")
			if n.Master {
				w.BulkString("master")
			} else {
				w.BulkString("replica")
			}
			w.BulkString("replication-offset")
			w.Int(n.Offset)
			w.BulkString("health")
			switch {
			case n.Failed:
				w.BulkString("fail")
			case !n.Master && n.Offset == 0:
				w.BulkString("loading")
			default:
				w.BulkString("online")
			}
		}
	}
}

// NodesText is CLUSTER NODES: a line per node, "\n"-terminated.
func NodesText(t cluster.Topology) string {
	var b strings.Builder
	for _, n := range t.Nodes {
		flags := "slave"
		if n.Master {
			flags = "master"
		}
		if n.Self {
			flags = "myself," + flags
		}
		if n.Failed {
			flags += ",fail"
		}
		of, link := "-", "connected"
		if !n.Master {
			of = n.Of
		}
		if n.Failed {
			link = "disconnected"
		}
		fmt.Fprintf(&b, "%s %s:%d@%d %s %s 0 0 %d %s", n.ID, n.IP, n.Port, n.CPort, flags, of, n.Epoch, link)
		for _, r := range n.Ranges {
			if r.Start == r.End {
				fmt.Fprintf(&b, " %d", r.Start)
			} else {
				fmt.Fprintf(&b, " %d-%d", r.Start, r.End)
			}
		}
		b.WriteByte('\n')
	}
	return b.String()
}

func cmdClusterNodes(x *Ctx) {
	if c := clusterOf(x); c != nil {
		x.W.Verbatim(NodesText(c.Topology()))
	}
}

// cmdClusterInfo: Redis 7.0's fields; the bus counters are 0 (there is no
// bus).
func cmdClusterInfo(x *Ctx) {
	c := clusterOf(x)
	if c == nil {
		return
	}
	t := c.Topology()
	state := "ok"
	if t.Assigned < cluster.Slots && c.FullCoverage() {
		state = "fail"
	}
	size := 0
	for _, sh := range t.Shards {
		if len(sh.Ranges) > 0 {
			size++
		}
	}
	var b strings.Builder
	for _, f := range []struct {
		k string
		v any
	}{
		{"cluster_state", state}, {"cluster_slots_assigned", t.Assigned}, {"cluster_slots_ok", t.Assigned},
		{"cluster_slots_pfail", 0}, {"cluster_slots_fail", 0}, {"cluster_known_nodes", len(t.Nodes)},
		{"cluster_size", size}, {"cluster_current_epoch", t.CurrentEpoch}, {"cluster_my_epoch", t.MyEpoch},
		{"cluster_stats_messages_sent", 0}, {"cluster_stats_messages_received", 0},
		{"total_cluster_links_buffer_limit_exceeded", 0},
	} {
		fmt.Fprintf(&b, "%s:%v\r\n", f.k, f.v)
	}
	x.W.Verbatim(b.String())
}

// cmdClusterHandOff is CLUSTER HANDOFF id range...: the node with id takes
// the slots over; its records come back as one bulk string
// (docs/cluster.md, "Moving slots"). An internal command.
func cmdClusterHandOff(x *Ctx) {
	if clusterOf(x) == nil {
		return
	}
	ranges := make([]string, 0, len(x.Args)-3)
	for _, a := range x.Args[3:] {
		ranges = append(ranges, string(a))
	}
	slots, err := cluster.ParseRanges(ranges)
	if err != nil {
		x.Error(ErrInvalidSlot)
		return
	}
	payload, err := x.N.ClusterHandOff(x.C, string(x.Args[2]), slots)
	if err != nil {
		x.Error(err)
		return
	}
	x.W.Bulk(payload)
}

var clusterHelp = []string{
	"CLUSTER <subcommand> [<arg> [value] [opt] ...]. Subcommands are:",
	"COUNTKEYSINSLOT <slot>",
	"    Return the number of keys in <slot>.",
	"GETKEYSINSLOT <slot> <count>",
	"    Return key names stored by current node in a slot.",
	"INFO",
	"    Return information about the cluster.",
	"KEYSLOT <key>",
	"    Return the hash slot for <key>.",
	"MYID",
	"    Return the node id.",
	"NODES",
	"    Return cluster configuration seen by node. Output format:",
	"    <id> <ip:port> <flags> <master> <pings> <pongs> <epoch> <link> <slot> ...",
	"SLOTS",
	"    Return information about slots range mappings. Each range is made of:",
	"    start, end, master and replicas IP addresses, ports and ids",
	"SHARDS",
	"    Return information about slot range mappings and the nodes associated with them.",
	"HELP",
	"    Print this help.",
}

func cmdClusterHelp(x *Ctx) {
	if clusterOf(x) == nil {
		return
	}
	writeHelp(x, clusterHelp)
}

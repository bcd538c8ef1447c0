package cluster

import (
	"bufio"
	"bytes"
	"fmt"
	"net"
	"os"
	"strconv"
	"strings"
)

// Node is one node of the map: a line of the file.
type Node struct {
	ID        string // 40 hex digits
	IP        string // what clients are sent to (never empty)
	Port      int    // the client port
	CPort     int    // the bus port: kept for the line format, unused
	Primary   bool   // "master"; otherwise a replica of PrimaryID
	PrimaryID string // a replica's primary, "" for a primary
	Epoch     int64  // config epoch
	Line      int    // where the file gives it
}

// Addr is the node's "ip:port", as MOVED names it.
func (n *Node) Addr() string { return net.JoinHostPort(n.IP, strconv.Itoa(n.Port)) }

// Map is a slot map: every node, and which primary owns each slot. A shard
// is a primary of the map and its replicas; it is numbered by the
// primary's index in Nodes. A Map never changes once parsed.
type Map struct {
	Nodes        []Node // in file order
	CurrentEpoch int64
	// owner[s] is the index in Nodes of the primary that owns slot s, or
	// -1 if none does.
	owner [Slots]int16
}

// Owner is the shard (its map primary's index in Nodes) that owns slot s,
// or -1.
func (m *Map) Owner(s int) int { return int(m.owner[s]) }

// Index is the index in Nodes of the node with id, or -1.
func (m *Map) Index(id string) int {
	for i := range m.Nodes {
		if m.Nodes[i].ID == id {
			return i
		}
	}
	return -1
}

// ShardOf is the shard of node i: itself for a primary, its primary for a
// replica.
func (m *Map) ShardOf(i int) int {
	if m.Nodes[i].Primary {
		return i
	}
	return m.Index(m.Nodes[i].PrimaryID)
}

// Members are the nodes of shard sh: its map primary first, then its
// replicas in file order.
func (m *Map) Members(sh int) []int {
	out := []int{sh}
	for i := range m.Nodes {
		if !m.Nodes[i].Primary && m.Nodes[i].PrimaryID == m.Nodes[sh].ID {
			out = append(out, i)
		}
	}
	return out
}

// Assigned is how many slots a shard owns.
func (m *Map) Assigned() int {
	n := 0
	for _, o := range m.owner {
		if o >= 0 {
			n++
		}
	}
	return n
}

// Range is slots Start to End, both included.
type Range struct{ Start, End int }

// Ranges are the slot ranges shard sh owns, in slot order.
func (m *Map) Ranges(sh int) []Range {
	return rangesWhere(func(s int) bool { return int(m.owner[s]) == sh })
}

// rangesWhere lists the slots for which in is true as ranges, in order.
func rangesWhere(in func(s int) bool) []Range {
	var out []Range
	for s := range Slots {
		if !in(s) {
			continue
		}
		if n := len(out); n > 0 && out[n-1].End == s-1 {
			out[n-1].End = s
		} else {
			out = append(out, Range{s, s})
		}
	}
	return out
}

// Load reads and parses the map file at path (Parse).
func Load(path string) (*Map, error) {
	b, err := os.ReadFile(path)
	if err != nil {
		return nil, err
	}
	return Parse(path, b)
}

// Parse parses a map in the nodes.conf line format; name is the file's,
// for errors ("name:line: reason"). Each node line is
//
//	<id> <ip>:<port>@<cport> <flags> <primary id|-> <ping> <pong> <epoch> <link> [slot|start-end]...
//
// where flags are master or slave (replica; "myself," is ignored), and
// the one vars line "vars currentEpoch N lastVoteEpoch M" is optional.
// Blank lines and lines starting with '#' are skipped. It refuses a slot
// given twice, a replica of an unknown node or of a replica, a replica
// with slots, two nodes with one id or one address.
func Parse(name string, b []byte) (*Map, error) {
	m := &Map{}
	for i := range m.owner {
		m.owner[i] = -1
	}
	sc := bufio.NewScanner(bytes.NewReader(b))
	sc.Buffer(nil, 1<<20)
	line := 0
	fail := func(f string, a ...any) error {
		return fmt.Errorf("%s:%d: %s", name, line, fmt.Sprintf(f, a...))
	}
	type slotLine struct {
		node  int
		field string
	}
	var slots []slotLine
	for sc.Scan() {
		line++
		f := strings.Fields(sc.Text())
		if len(f) == 0 || strings.HasPrefix(f[0], "#") {
			continue
		}
		if f[0] == "vars" {
			for k := 1; k+1 < len(f); k += 2 {
				if f[k] == "currentEpoch" {
					e, err := strconv.ParseInt(f[k+1], 10, 64)
					if err != nil || e < 0 {
						return nil, fail("invalid currentEpoch %q", f[k+1])
					}
					m.CurrentEpoch = e
				}
			}
			if len(f)%2 == 0 {
				return nil, fail("vars takes name value pairs")
			}
			continue
		}
		if len(f) < 8 {
			return nil, fail("a node line has at least 8 fields, this one %d", len(f))
		}
		n := Node{ID: f[0], Line: line}
		if !isNodeID(n.ID) {
			return nil, fail("node id %q is not 40 hex digits", n.ID)
		}
		addr, cport, ok := strings.Cut(f[1], "@")
		if !ok {
			return nil, fail("address %q is not ip:port@cport", f[1])
		}
		cport, _, _ = strings.Cut(cport, ",") // a hostname after the bus port
		host, port, err := net.SplitHostPort(addr)
		if err != nil || host == "" {
			return nil, fail("address %q is not ip:port@cport", f[1])
		}
		n.IP = host
		if n.Port, err = strconv.Atoi(port); err != nil || n.Port < 1 || n.Port > 65535 {
			return nil, fail("invalid port %q", port)
		}
		if n.CPort, err = strconv.Atoi(cport); err != nil || n.CPort < 0 || n.CPort > 65535 {
			return nil, fail("invalid bus port %q", cport)
		}
		roles := 0
		for _, flag := range strings.Split(f[2], ",") {
			switch flag {
			case "myself":
			case "master":
				n.Primary = true
				roles++
			case "slave", "replica":
				roles++
			default:
				return nil, fail("flag %q: a map knows master, slave and myself", flag)
			}
		}
		switch {
		case roles != 1:
			return nil, fail("flags %q must name one role, master or slave", f[2])
		case n.Primary && f[3] != "-":
			return nil, fail("a master has \"-\" as its primary, not %q", f[3])
		case !n.Primary && !isNodeID(f[3]):
			return nil, fail("a replica's primary %q is not a node id", f[3])
		case !n.Primary:
			n.PrimaryID = f[3]
		}
		if n.Epoch, err = strconv.ParseInt(f[6], 10, 64); err != nil || n.Epoch < 0 {
			return nil, fail("invalid config epoch %q", f[6])
		}
		for _, o := range m.Nodes {
			if o.ID == n.ID {
				return nil, fail("node %s is given twice (line %d)", n.ID, o.Line)
			}
			if o.Addr() == n.Addr() {
				return nil, fail("address %s is given twice (line %d)", n.Addr(), o.Line)
			}
		}
		if !n.Primary && len(f) > 8 {
			return nil, fail("replica %s has slots", n.ID)
		}
		for _, s := range f[8:] {
			slots = append(slots, slotLine{len(m.Nodes), s})
		}
		m.Nodes = append(m.Nodes, n)
	}
	if err := sc.Err(); err != nil {
		return nil, fmt.Errorf("%s: %w", name, err)
	}
	if len(m.Nodes) == 0 {
		return nil, fmt.Errorf("%s: no nodes", name)
	}
	for _, n := range m.Nodes {
		if n.Primary {
			continue
		}
		line = n.Line
		p := m.Index(n.PrimaryID)
		switch {
		case p < 0:
			return nil, fail("replica %s follows unknown node %s", n.ID, n.PrimaryID)
		case !m.Nodes[p].Primary:
			return nil, fail("replica %s follows %s, itself a replica", n.ID, n.PrimaryID)
		}
	}
	for _, sl := range slots {
		line = m.Nodes[sl.node].Line
		lo, hi, err := parseRange(sl.field)
		if err != nil {
			return nil, fail("%v", err)
		}
		for s := lo; s <= hi; s++ {
			if o := m.owner[s]; o >= 0 {
				return nil, fail("slot %d is given twice (to %s on line %d)", s, m.Nodes[o].ID, m.Nodes[o].Line)
			}
			m.owner[s] = int16(sl.node)
		}
	}
	return m, nil
}

// parseRange parses "N" or "N-M", slots of a node line.
func parseRange(f string) (lo, hi int, err error) {
	a, b, isRange := strings.Cut(f, "-")
	if !isRange {
		b = a
	}
	lo, err1 := strconv.Atoi(a)
	hi, err2 := strconv.Atoi(b)
	if err1 != nil || err2 != nil || lo < 0 || hi >= Slots || lo > hi || strings.HasPrefix(b, "+") || strings.HasPrefix(a, "+") {
		return 0, 0, fmt.Errorf("invalid slot range %q (slots are 0-%d)", f, Slots-1)
	}
	return lo, hi, nil
}

// isNodeID reports whether s is 40 hex digits.
func isNodeID(s string) bool {
	if len(s) != 40 {
		return false
	}
	for _, c := range []byte(s) {
		if !('0' <= c && c <= '9' || 'a' <= c && c <= 'f' || 'A' <= c && c <= 'F') {
			return false
		}
	}
	return true
}

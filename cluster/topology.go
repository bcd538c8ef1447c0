package cluster

// NodeInfo is a node as CLUSTER NODES, SLOTS and SHARDS show it: its map
// line with the role it has now.
type NodeInfo struct {
	Node
	Self bool
	// Master: the node is its shard's current primary (or, unreachable,
	// was last seen as a primary). Of is a replica's current primary.
	Master bool
	Of     string
	// Failed: the node did not answer the last poll. LinkUp: a replica's
	// link to its primary is up. Offset is its replication offset.
	Failed bool
	LinkUp bool
	Offset int64
	// Epoch is its config epoch (a replica shows its primary's).
	Epoch int64
	// Ranges are the slots a current primary serves (its shard's).
	Ranges []Range
}

// ShardInfo is a shard: its slots, then its nodes, the current primary
// first.
type ShardInfo struct {
	Ranges []Range
	Nodes  []int // indexes in Topology.Nodes
}

// SlotRange is a run of slots owned by one shard (CLUSTER SLOTS).
type SlotRange struct {
	Range
	Shard int // index in Topology.Shards
}

// Topology is the cluster as this node sees it now.
type Topology struct {
	Nodes  []NodeInfo
	Shards []ShardInfo
	Slots  []SlotRange // in slot order
	// CurrentEpoch is the map's; MyEpoch this node's config epoch.
	CurrentEpoch, MyEpoch int64
	Assigned              int // slots owned by a shard
}

// Topology returns the cluster as this node sees it now.
func (c *Cluster) Topology() Topology {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.peers[c.self] = c.o.Role()
	m := c.m
	t := Topology{CurrentEpoch: m.CurrentEpoch, Assigned: m.Assigned()}
	shardOf := make([]int, len(m.Nodes)) // map primary index -> index in t.Shards
	for i, n := range m.Nodes {
		info := NodeInfo{Node: n, Self: i == c.self, Failed: !c.up[i], Offset: c.peers[i].Offset, LinkUp: c.peers[i].LinkUp}
		sh := m.ShardOf(i)
		info.Epoch = m.Nodes[sh].Epoch
		switch cur := c.cur[sh]; {
		case cur == i:
			info.Master = true
			info.Ranges = m.Ranges(sh)
		case !c.up[i] && !c.peers[i].Replica: // last seen as a primary
			info.Master = true
		default:
			info.Of = m.Nodes[cur].ID
		}
		t.Nodes = append(t.Nodes, info)
		if n.Primary {
			shardOf[i] = len(t.Shards)
			s := ShardInfo{Ranges: m.Ranges(i), Nodes: []int{c.cur[i]}}
			for _, j := range m.Members(i) {
				if j != c.cur[i] {
					s.Nodes = append(s.Nodes, j)
				}
			}
			t.Shards = append(t.Shards, s)
		}
		if i == c.self {
			t.MyEpoch = info.Epoch
		}
	}
	for s := 0; s < Slots; {
		sh := m.Owner(s)
		e := s
		for e+1 < Slots && m.Owner(e+1) == sh {
			e++
		}
		if sh >= 0 {
			t.Slots = append(t.Slots, SlotRange{Range{s, e}, shardOf[sh]})
		}
		s = e + 1
	}
	return t
}

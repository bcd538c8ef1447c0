package cluster

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"strconv"
	"sync"
	"sync/atomic"
	"time"

	"github.com/rlserver/rlserver/clock"
)

// Verdict is what routing decides for a key's slot on this node.
type Verdict uint8

// The verdicts, in the order Redis checks (docs/cluster.md, "Routing").
const (
	Serve    Verdict = iota // this node decides the slot's keys
	Moved                   // -MOVED to Addr: another node serves the slot
	Ask                     // -ASK to Addr: this node is taking the slot over; Addr still decides it
	TryAgain                // -TRYAGAIN: the slot's records are on their way here
	Down                    // -CLUSTERDOWN Hash slot not served: no shard owns the slot
)

// slot states in a view: what Route answers, before READONLY.
const (
	sServe    uint8 = iota // this node is the current primary deciding the slot
	sReplica               // this node replicates the slot's shard: READONLY reads are served here
	sMoved                 // the owner shard's current primary decides it
	sDown                  // no shard owns it
	sAsk                   // importing: the old owner still decides it (over[s])
	sTryAgain              // importing: the handoff is under way
	sGiven                 // handed over to over[s] ahead of this node's map
)

// Options configure a Cluster.
type Options struct {
	// Path is the map file; Self this node's id in it.
	Path string
	Self string
	// FullCoverage refuses a map that leaves a slot without an owner.
	FullCoverage bool
	// Password authenticates to the other nodes (masterauth).
	Password string
	Logger   *slog.Logger
	// Role reads this node's own replication role.
	Role func() PeerRole
	// Follow makes this node a replica of host:port (REPLICAOF): a node
	// the map calls a primary that finds, at start, another primary in
	// its shard (a failover happened while it was away) follows it.
	Follow func(host string, port int)
	// Import installs the records a handoff brought for slots
	// (docs/cluster.md, "Moving slots").
	Import func(slots *[Slots]bool, payload []byte) error
	// PollInterval is how often each node is asked its ROLE (1s).
	PollInterval time.Duration
}

// Cluster is this node's live view of the map: safe for concurrent use.
// Route, on every keyed command, reads an immutable view through one
// atomic load; everything else rebuilds the view under mu.
type Cluster struct {
	o   Options
	log *slog.Logger
	v   atomic.Pointer[view]

	mu    sync.Mutex
	m     *Map
	self  int        // this node's index in m
	peers []PeerRole // per node of m, as last polled; self's is read from Options.Role
	up    []bool     // per node: it answered the last poll
	cur   []int      // per shard (a map primary's index): the current primary's index
	// Slots in motion (docs/cluster.md, "Moving slots"), meaningful
	// while this node is a primary: lent are slots this node still
	// decides though the map gives them away (until their new owner
	// takes them); importing are slots the map gives this node whose
	// records are elsewhere (from[s] says where); given are slots taken
	// by another node (to[s]) ahead of this node's map.
	lent      [Slots]bool
	importing [Slots]bool
	inflight  [Slots]bool
	from      map[int]source
	to        map[int]string

	kick chan struct{} // wakes the pollers and the importer
}

// source is where an importing slot's records are: the shard (by its map
// primary's id) that owned it, or, when it was handed elsewhere, an
// address.
type source struct {
	shardID string
	addr    string
}

// view is an immutable snapshot of the routing state.
type view struct {
	state [Slots]uint8
	addr  []string // per shard: the current primary's address
	m     *Map
	over  map[int]string // per sAsk or sGiven slot: the address to name
}

// New loads the map at o.Path and returns the node's view of it.
func New(o Options) (*Cluster, error) {
	if o.Logger == nil {
		o.Logger = slog.New(slog.DiscardHandler)
	}
	if o.PollInterval <= 0 {
		o.PollInterval = time.Second
	}
	m, self, err := load(o)
	if err != nil {
		return nil, err
	}
	c := &Cluster{o: o, log: o.Logger, from: map[int]source{}, to: map[int]string{}, kick: make(chan struct{}, 1)}
	c.install(m, self)
	return c, nil
}

// load reads and checks the map: this node must be in it, and, with
// FullCoverage, every slot owned.
func load(o Options) (*Map, int, error) {
	m, err := Load(o.Path)
	if err != nil {
		return nil, 0, err
	}
	self := m.Index(o.Self)
	if self < 0 {
		return nil, 0, fmt.Errorf("%s: node %s (--cluster-node-id) is not in the map", o.Path, o.Self)
	}
	if n := m.Assigned(); o.FullCoverage && n < Slots {
		return nil, 0, fmt.Errorf("%s: %d of %d slots have no owner (set --cluster-require-full-coverage no to serve the others)", o.Path, Slots-n, Slots)
	}
	return m, self, nil
}

// install makes m the map, every node's role as the map says until
// polled.
func (c *Cluster) install(m *Map, self int) {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.m, c.self = m, self
	c.carryLocked(nil, nil, nil)
	c.rebuildLocked()
}

// carryLocked sets what is known of each node of c.m: from peers, up and
// cur (by node id) where they know it, else as the map says (a node up,
// in its map role, each shard led by its map primary).
func (c *Cluster) carryLocked(peers map[string]PeerRole, up map[string]bool, cur map[string]string) {
	m := c.m
	c.peers = make([]PeerRole, len(m.Nodes))
	c.up = make([]bool, len(m.Nodes))
	c.cur = make([]int, len(m.Nodes))
	for i, n := range m.Nodes {
		c.cur[i], c.up[i] = i, true
		if !n.Primary {
			p := &m.Nodes[m.Index(n.PrimaryID)]
			c.peers[i] = PeerRole{Replica: true, Host: p.IP, Port: p.Port}
		}
		if r, ok := peers[n.ID]; ok {
			c.peers[i], c.up[i] = r, up[n.ID]
		}
		if j := m.Index(cur[n.ID]); n.Primary && j >= 0 && m.ShardOf(j) == i {
			c.cur[i] = j
		}
	}
}

// FullCoverage reports whether a map must give every slot an owner.
func (c *Cluster) FullCoverage() bool { return c.o.FullCoverage }

// Self is this node's id.
func (c *Cluster) Self() string { return c.o.Self }

// MapRole is this node's role in the map: a primary, or a replica of the
// node at host:port.
func (c *Cluster) MapRole() (replica bool, host string, port int) {
	c.mu.Lock()
	defer c.mu.Unlock()
	n := c.m.Nodes[c.self]
	if n.Primary {
		return false, "", 0
	}
	p := c.m.Nodes[c.m.Index(n.PrimaryID)]
	return true, p.IP, p.Port
}

// Route decides a key's slot s on this node: served here, or where to
// send the client. readOK says the command only reads and the connection
// sent READONLY: a replica then serves its own shard's slots.
func (c *Cluster) Route(s int, readOK bool) (Verdict, string) {
	v := c.v.Load()
	switch v.state[s] {
	case sServe:
		return Serve, ""
	case sReplica:
		if readOK {
			return Serve, ""
		}
		return Moved, v.addr[v.m.Owner(s)]
	case sMoved:
		return Moved, v.addr[v.m.Owner(s)]
	case sAsk:
		return Ask, v.over[s]
	case sTryAgain:
		return TryAgain, ""
	case sGiven:
		return Moved, v.over[s]
	}
	return Down, ""
}

// Refused tells the cluster a request was redirected: the pollers look
// again soon, in case this node's view is behind (a failover).
func (c *Cluster) Refused() {
	select {
	case c.kick <- struct{}{}:
	default:
	}
}

// selfPrimaryLocked reports whether this node is a primary now.
func (c *Cluster) selfPrimaryLocked() bool { return !c.o.Role().Replica }

// rebuildLocked recomputes the current primaries and the view.
func (c *Cluster) rebuildLocked() {
	m := c.m
	me := c.o.Role()
	c.peers[c.self] = me
	c.up[c.self] = true
	myShard := m.ShardOf(c.self)
	for sh := range m.Nodes {
		if !m.Nodes[sh].Primary {
			continue
		}
		c.cur[sh] = c.pickLocked(sh, sh == myShard, me)
	}
	v := &view{m: m, addr: make([]string, len(m.Nodes)), over: map[int]string{}}
	for sh := range m.Nodes {
		if m.Nodes[sh].Primary {
			v.addr[sh] = m.Nodes[c.cur[sh]].Addr()
		}
	}
	primary := !me.Replica
	for s := range Slots {
		sh := m.Owner(s)
		switch {
		case primary && c.lent[s]:
			v.state[s] = sServe
		case primary && c.to[s] != "":
			v.state[s], v.over[s] = sGiven, c.to[s]
		case primary && c.importing[s] && c.inflight[s]:
			v.state[s] = sTryAgain
		case primary && c.importing[s]:
			v.state[s], v.over[s] = sAsk, c.sourceAddrLocked(c.from[s])
		case sh < 0:
			v.state[s] = sDown
		case sh == myShard && c.cur[sh] == c.self:
			v.state[s] = sServe
		case sh == myShard:
			v.state[s] = sReplica
		default:
			v.state[s] = sMoved
		}
	}
	c.v.Store(v)
}

// pickLocked chooses shard sh's current primary: this node if it is a
// primary of the shard; else the one already chosen if it still says it
// is a primary; else the first member that says so; else, for this
// node's own shard, the primary it follows; else the one chosen before.
func (c *Cluster) pickLocked(sh int, mine bool, me PeerRole) int {
	m := c.m
	members := m.Members(sh)
	if mine && !me.Replica {
		return c.self
	}
	isPrimary := func(i int) bool { return i != c.self && c.up[i] && !c.peers[i].Replica }
	prev := c.cur[sh]
	if isPrimary(prev) {
		return prev
	}
	for _, i := range members {
		if isPrimary(i) {
			return i
		}
	}
	if mine {
		for _, i := range members {
			if n := m.Nodes[i]; n.IP == me.Host && n.Port == me.Port {
				return i
			}
		}
	}
	return prev
}

// sourceAddrLocked is where an importing slot's records are now.
func (c *Cluster) sourceAddrLocked(src source) string {
	if src.shardID != "" {
		if i := c.m.Index(src.shardID); i >= 0 && c.m.Nodes[i].Primary {
			return c.m.Nodes[c.cur[i]].Addr()
		}
	}
	return src.addr
}

// Give's refusals; the wire texts are the commands package's.
var (
	ErrNotPrimary  = errors.New("cluster: this node is not a primary")
	ErrUnknownNode = errors.New("cluster: unknown node")
	ErrImporting   = errors.New("cluster: the slot is itself being imported here")
)

// ErrLowerEpoch refuses a map older than the loaded one.
var ErrLowerEpoch = errors.New("cluster: the map's currentEpoch is lower than the loaded one's")

// Reload re-reads the map file (SIGHUP). A map with a lower currentEpoch,
// or one that does not parse, is refused and the loaded one kept. Slots
// the new map gives this node's shard, held by another, are imported;
// slots it gives away are decided here until their new owner takes them.
func (c *Cluster) Reload() error {
	m, self, err := load(c.o)
	if err != nil {
		return err
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	if m.CurrentEpoch < c.m.CurrentEpoch {
		return fmt.Errorf("%w (%d < %d)", ErrLowerEpoch, m.CurrentEpoch, c.m.CurrentEpoch)
	}
	old := c.v.Load()
	primary := c.selfPrimaryLocked()
	myShard := m.ShardOf(self)
	imports := 0
	// What was learnt of each node carries over, by id.
	peers, up, cur := map[string]PeerRole{}, map[string]bool{}, map[string]string{}
	for i, n := range c.m.Nodes {
		peers[n.ID], up[n.ID] = c.peers[i], c.up[i]
		if n.Primary {
			cur[n.ID] = c.m.Nodes[c.cur[i]].ID
		}
	}
	for s := range Slots {
		mine := m.Owner(s) == myShard
		if !primary {
			c.lent[s], c.importing[s], c.inflight[s] = false, false, false
			delete(c.to, s)
			delete(c.from, s)
			continue
		}
		served := old.state[s] == sServe
		switch {
		case mine && !served && !c.importing[s]:
			// Records of the slot are where the old view sent it.
			switch old.state[s] {
			case sDown: // nobody decided it: nothing to take
			case sGiven:
				c.importing[s], c.from[s] = true, source{addr: old.over[s]}
			default: // sMoved, sReplica
				c.importing[s], c.from[s] = true, source{shardID: c.m.Nodes[c.m.Owner(s)].ID, addr: old.addr[c.m.Owner(s)]}
			}
			if c.importing[s] {
				imports++
			}
			delete(c.to, s)
		case mine:
			c.lent[s] = false
			delete(c.to, s)
		case served:
			c.lent[s] = true
		default:
			if c.importing[s] {
				c.importing[s], c.inflight[s] = false, false
				delete(c.from, s)
			}
			if c.to[s] != "" && m.Owner(s) >= 0 && m.Nodes[m.Owner(s)].Addr() == c.to[s] {
				delete(c.to, s) // the map caught up
			}
		}
	}
	c.m, c.self = m, self
	c.carryLocked(peers, up, cur)
	c.rebuildLocked()
	c.log.Info("cluster map loaded", "path", c.o.Path, "epoch", m.CurrentEpoch, "nodes", len(m.Nodes), "importing_slots", imports)
	c.Refused()
	return nil
}

// Refresh rebuilds the view from this node's role now: after making it
// a replica before it serves, so that it redirects from its first
// request. Unlike Kick it waits, so it must not be called holding the
// lock Options.Role takes.
func (c *Cluster) Refresh() {
	c.mu.Lock()
	c.rebuildLocked()
	c.mu.Unlock()
}

// Kick tells the cluster this node's role changed: the view is rebuilt
// and the pollers look again. It returns at once (the caller may hold
// the lock Options.Role takes).
func (c *Cluster) Kick() {
	go func() {
		c.mu.Lock()
		c.rebuildLocked()
		c.mu.Unlock()
	}()
	c.Refused()
}

// Give hands slots to the node with id (its CLUSTER HANDOFF): from now
// on this node sends their requests to it. It reports whether this node
// can: it must be a primary and import none of them itself. The caller
// then takes the slots' records out (after the requests already routed
// here have ended) and sends them.
func (c *Cluster) Give(id string, slots *[Slots]bool) error {
	c.mu.Lock()
	defer c.mu.Unlock()
	if !c.selfPrimaryLocked() {
		return ErrNotPrimary
	}
	i := c.m.Index(id)
	if i < 0 {
		return fmt.Errorf("%w %s", ErrUnknownNode, id)
	}
	for s, want := range slots {
		if want && c.importing[s] {
			return fmt.Errorf("%w (slot %d)", ErrImporting, s)
		}
	}
	addr := c.m.Nodes[i].Addr()
	for s, want := range slots {
		if want {
			c.lent[s] = false
			if c.m.Owner(s) != i {
				c.to[s] = addr
			}
		}
	}
	c.rebuildLocked()
	return nil
}

// Run polls every other node's ROLE every PollInterval (and when kicked),
// and imports the slots the map gives this node, until ctx ends.
func (c *Cluster) Run(ctx context.Context) {
	var wg sync.WaitGroup
	wg.Add(1)
	go func() { defer wg.Done(); c.importLoop(ctx) }()
	c.pollLoop(ctx)
	wg.Wait()
}

// Probe asks every other node its ROLE once, and, if this node is a
// primary and another node of its shard is one too (it was failed over
// while away), follows that one. The server calls it before it serves.
func (c *Cluster) Probe(ctx context.Context) {
	peers := c.newPeers()
	defer closePeers(peers)
	c.pollOnce(ctx, peers)
	c.mu.Lock()
	me := c.o.Role()
	var follow *Node
	if !me.Replica {
		for _, i := range c.m.Members(c.m.ShardOf(c.self)) {
			if i != c.self && c.up[i] && !c.peers[i].Replica {
				n := c.m.Nodes[i]
				follow = &n
				break
			}
		}
	}
	c.mu.Unlock()
	if follow != nil && c.o.Follow != nil {
		c.log.Warn("another node of this shard is its primary now: following it", "primary", follow.Addr(), "id", follow.ID)
		c.o.Follow(follow.IP, follow.Port)
		c.Refresh()
	}
}

// newPeers makes a connection holder per node of the current map.
func (c *Cluster) newPeers() map[string]*peer {
	c.mu.Lock()
	defer c.mu.Unlock()
	out := map[string]*peer{}
	for i, n := range c.m.Nodes {
		if i != c.self {
			out[n.ID] = &peer{addr: n.Addr(), password: c.o.Password}
		}
	}
	return out
}

// closePeers closes every connection of peers.
func closePeers(peers map[string]*peer) {
	for _, p := range peers {
		p.close()
	}
}

// pollOnce asks each peer its ROLE, all at once, and rebuilds the view.
func (c *Cluster) pollOnce(ctx context.Context, peers map[string]*peer) {
	type answer struct {
		id   string
		role PeerRole
		ok   bool
	}
	answers := make(chan answer, len(peers))
	for id, p := range peers {
		go func() {
			v, err := p.do(ctx, 500*time.Millisecond, "ROLE")
			var r PeerRole
			if err == nil {
				r, err = parseRole(v)
			}
			answers <- answer{id, r, err == nil}
		}()
	}
	got := make([]answer, 0, len(peers))
	for range peers {
		got = append(got, <-answers)
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	for _, a := range got {
		if i := c.m.Index(a.id); i >= 0 {
			if a.ok {
				c.peers[i] = a.role
			}
			c.up[i] = a.ok
		}
	}
	c.rebuildLocked()
}

func (c *Cluster) pollLoop(ctx context.Context) {
	peers := c.newPeers()
	defer func() { closePeers(peers) }() // the map may replace peers
	t := time.NewTicker(c.o.PollInterval)
	defer t.Stop()
	last := time.Time{}
	for {
		select {
		case <-ctx.Done():
			return
		case <-t.C:
		case <-c.kick:
			// At most one extra round per 100ms, however many refusals.
			if time.Since(last) < 100*time.Millisecond {
				select {
				case <-ctx.Done():
					return
				case <-time.After(100*time.Millisecond - time.Since(last)):
				}
			}
		}
		// The map may have changed (Reload): keep the connections of
		// nodes still in it at the same address.
		fresh := c.newPeers()
		for id, p := range fresh {
			if old, ok := peers[id]; ok && old.addr == p.addr {
				fresh[id] = old
			}
		}
		for id, p := range peers {
			if fresh[id] != p {
				p.close()
			}
		}
		peers = fresh
		c.pollOnce(ctx, peers)
		last = time.Now()
	}
}

// importLoop takes the importing slots from where their records are,
// every 200ms until ctx ends (importPending).
func (c *Cluster) importLoop(ctx context.Context) {
	clock.Every(ctx, 200*time.Millisecond, func() { c.importPending(ctx) })
}

// importPending takes the importing slots, one source at a time, until
// none is left or a source fails (tried again next time).
func (c *Cluster) importPending(ctx context.Context) {
	for {
		addr, slots := c.nextImport()
		if slots == nil {
			return
		}
		err := c.importFrom(ctx, addr, slots)
		c.finishImport(slots, err == nil)
		if err != nil {
			c.log.Warn("cluster slot import failed; retrying", "from", addr, "err", err)
			return
		}
	}
}

// nextImport picks the slots to import from one source and marks them in
// flight (requests for them get TRYAGAIN from now on).
func (c *Cluster) nextImport() (string, *[Slots]bool) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if !c.selfPrimaryLocked() {
		return "", nil
	}
	var slots *[Slots]bool
	addr := ""
	for s := range Slots {
		if !c.importing[s] || c.inflight[s] {
			continue
		}
		a := c.sourceAddrLocked(c.from[s])
		if slots == nil {
			slots, addr = new([Slots]bool), a
		}
		if a == addr {
			slots[s] = true
			c.inflight[s] = true
		}
	}
	if slots != nil {
		c.rebuildLocked()
	}
	return addr, slots
}

// finishImport ends the handoff of slots: served here if it succeeded,
// else sent back to their source (ASK) until the next try.
func (c *Cluster) finishImport(slots *[Slots]bool, ok bool) {
	c.mu.Lock()
	defer c.mu.Unlock()
	for s, in := range slots {
		if !in {
			continue
		}
		c.inflight[s] = false
		if ok {
			c.importing[s] = false
			delete(c.from, s)
		}
	}
	c.rebuildLocked()
}

// importFrom asks the node at addr for slots (CLUSTER HANDOFF) and
// installs what it sends.
func (c *Cluster) importFrom(ctx context.Context, addr string, slots *[Slots]bool) error {
	args := []string{"CLUSTER", "HANDOFF", c.o.Self}
	for _, r := range rangesOf(slots) {
		args = append(args, strconv.Itoa(r.Start)+"-"+strconv.Itoa(r.End))
	}
	p := &peer{addr: addr, password: c.o.Password}
	defer p.close()
	v, err := p.do(ctx, 10*time.Second, args...)
	if err != nil {
		return err
	}
	payload, ok := v.([]byte)
	if !ok {
		return errors.New("cluster: HANDOFF reply is not a bulk string")
	}
	if err := c.o.Import(slots, payload); err != nil {
		return err
	}
	c.log.Info("cluster slots imported", "from", addr, "slots", fmt.Sprint(rangesOf(slots)), "bytes", len(payload))
	return nil
}

// rangesOf lists a slot set as ranges.
func rangesOf(slots *[Slots]bool) []Range {
	return rangesWhere(func(s int) bool { return slots[s] })
}

// ParseRanges parses "N" and "N-M" arguments into a slot set.
func ParseRanges(args []string) (*[Slots]bool, error) {
	slots := new([Slots]bool)
	for _, a := range args {
		lo, hi, err := parseRange(a)
		if err != nil {
			return nil, err
		}
		for s := lo; s <= hi; s++ {
			slots[s] = true
		}
	}
	return slots, nil
}

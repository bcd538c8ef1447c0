package node

import (
	"bytes"
	"cmp"
	"context"
	"slices"
	"sync"
	"sync/atomic"

	"github.com/rlserver/rlserver/commands"
	"github.com/rlserver/rlserver/engine"
)

// Client-side caching (CLIENT TRACKING; the commands' side is in
// commands/tracking.go): the keys tracking connections read, and the
// invalidations sent when they change.
//
// A connection in the default mode has the keys of each read-only
// command it runs remembered, before the command reads them; a write
// command's keys are looked up after it has written. So a write either
// finds the reader's key (and invalidates it) or came before the read
// (which then saw it): no write between the two goes untold, on any
// event loop. A key is forgotten once its invalidation is sent, as in
// Redis: the connection remembers it again when it reads it again.
//
// A BCAST connection is told of every change to a key under its
// prefixes, one message per prefix and command. A change is what
// engine.Store.State tells apart (kind, deadline, state), as for WATCH:
// a write that leaves a key as it was (a refused limiter call, a DEL of
// no key) sends nothing, as in Redis; unlike Redis, neither does a SET of
// the value the key holds. Keys the engine changes on its own (expiry,
// eviction, a primary's stream, a flush) come through engine.OnChange.
//
// Lock order: a shard's lock (OnChange runs under it), then tr.mu, then
// the clients' and the sessions' locks; tr.mu is never held while a
// shard's lock is taken.

// tracking is the node's table of tracked keys.
type tracking struct {
	// maxKeys is tracking-table-max-keys: past it, keys (any) are told
	// as changed and forgotten (0: no limit).
	maxKeys atomic.Int64

	mu sync.Mutex
	// keys maps a key read to the IDs of the connections that read it,
	// in the default mode; items counts the pairs.
	keys  map[string]map[int64]struct{}
	items int
	// prefixes maps a BCAST prefix to the IDs of its connections.
	prefixes map[string]map[int64]struct{}

	// changes are the tracked keys the engine changed on its own while
	// a connection tracked (engine.OnChange: expired, evicted, applied
	// from a primary), copied, and nil for a flush, for RunTracking (or
	// the FLUSHALL that made one); wake tells RunTracking.
	chMu    sync.Mutex
	changes [][]byte
	wake    chan struct{}
}

// changed is the engine's OnChange while a connection tracks: it keeps a
// copy of a tracked key (or a flush's nil) and wakes RunTracking. It may
// run under a shard lock.
func (tr *tracking) changed(key []byte) {
	if key != nil { // nil: a flush, kept as nil
		tr.mu.Lock() // never held while a shard lock is taken
		t := tr.tracked(key)
		tr.mu.Unlock()
		if !t {
			return
		}
		key = bytes.Clone(key)
	}
	tr.chMu.Lock()
	first := len(tr.changes) == 0
	tr.changes = append(tr.changes, key)
	tr.chMu.Unlock()
	if first {
		select {
		case tr.wake <- struct{}{}:
		default:
		}
	}
}

// RunTracking sends, until ctx is done, the invalidations of the keys the
// engine changed on its own (tracking.changed), as they come.
func (n *Node) RunTracking(ctx context.Context) {
	tr := &n.track
	for {
		select {
		case <-ctx.Done():
			return
		case <-tr.wake:
		}
		n.drainChanges(nil)
	}
}

// drainChanges sends the invalidations of the engine's changes not yet
// sent, in order: a key at a time, as Redis signals each, and a flush to
// every tracking connection. c is the connection whose command made them
// (a FLUSHALL), nil for none.
func (n *Node) drainChanges(c *Client) {
	tr := &n.track
	tr.chMu.Lock()
	keys := tr.changes
	tr.changes = nil
	tr.chMu.Unlock()
	for _, k := range keys {
		if k == nil {
			n.flushTracking(c)
			continue
		}
		n.invalidate(nil, [][]byte{k})
	}
}

// defaultTrackingMaxKeys is Redis's tracking-table-max-keys.
const defaultTrackingMaxKeys = 1_000_000

// ClientExists reports whether a connection has the client ID id
// (commands.Node).
func (n *Node) ClientExists(id int64) bool {
	c := n.client(id)
	return c != nil && !c.Killed()
}

// Track sets s's client-side caching mode (commands.Node): t, or off for
// the zero Tracking. BCAST's prefixes are registered here; the keys of
// the default mode as the connection reads them.
func (n *Node) Track(s *commands.Session, t commands.Tracking) {
	tr := &n.track
	tr.mu.Lock()
	was := s.Tracking()
	if was.On && was.BCast {
		for _, p := range was.Prefixes {
			if ids := tr.prefixes[p]; ids != nil {
				delete(ids, s.ID)
				if len(ids) == 0 {
					delete(tr.prefixes, p)
				}
			}
		}
	}
	if t.On && t.BCast {
		if tr.prefixes == nil {
			tr.prefixes = map[string]map[int64]struct{}{}
		}
		for _, p := range t.Prefixes {
			if tr.prefixes[p] == nil {
				tr.prefixes[p] = map[int64]struct{}{}
			}
			tr.prefixes[p][s.ID] = struct{}{}
		}
	}
	switch {
	case t.On && !was.On:
		if n.trackers.Add(1) == 1 {
			n.engine.OnChange(tr.changed)
		}
	case !t.On && was.On:
		if n.trackers.Add(-1) == 0 {
			n.engine.OnChange(nil)
		}
	}
	s.SetTracking(t)
	tr.mu.Unlock()
}

// remember records the keys of a read-only command c runs, if c tracks
// them (commands.Session.Remembers). Called before the command reads.
func (n *Node) remember(c *Client, cmd *commands.Command, args [][]byte) {
	tr := &n.track
	tr.mu.Lock()
	if tr.keys == nil {
		tr.keys = map[string]map[int64]struct{}{}
	}
	cmd.KeyPositions(args, func(i int) {
		ids := tr.keys[string(args[i])]
		if ids == nil {
			ids = map[int64]struct{}{}
			tr.keys[string(args[i])] = ids
		}
		if _, ok := ids[c.ID]; !ok {
			ids[c.ID] = struct{}{}
			tr.items++
		}
	})
	var evicted []string
	if max := tr.maxKeys.Load(); max > 0 {
		for k := range tr.keys {
			if int64(len(tr.keys)-len(evicted)) <= max {
				break
			}
			evicted = append(evicted, k)
		}
	}
	tr.mu.Unlock()
	for _, k := range evicted { // as if changed: their readers drop them
		n.invalidate(nil, [][]byte{[]byte(k)})
	}
}

// trackedWrite is what a write command's key held before it ran, for a
// key someone tracked then: the argument's index and the state
// (engine.Store.State; empty for no key, as for WATCH).
type trackedWrite struct {
	arg   int
	state []byte
}

// tracked reports whether a change to key must be told: a connection
// read it, or a BCAST prefix starts it. Call with tr.mu held.
func (tr *tracking) tracked(key []byte) bool {
	if tr.keys[string(key)] != nil {
		return true
	}
	for p := range tr.prefixes {
		if under(key, p) {
			return true
		}
	}
	return false
}

// under reports whether prefix p starts key.
func under(key []byte, p string) bool { return len(key) >= len(p) && string(key[:len(p)]) == p }

// beforeWrite keeps, in c's scratch (empty between commands: afterWrite
// empties it), the states of the keys of a write command that someone
// tracks now, for afterWrite to compare.
func (n *Node) beforeWrite(c *Client, cmd *commands.Command, args [][]byte, now int64, st engine.Store) {
	tr := &n.track
	tr.mu.Lock()
	cmd.KeyPositions(args, func(i int) {
		if tr.tracked(args[i]) {
			k := len(c.trackWrites) // its state's buffer reused
			c.trackWrites = slices.Grow(c.trackWrites, 1)[:k+1]
			c.trackWrites[k].arg = i
		}
	})
	tr.mu.Unlock()
	for j := range c.trackWrites {
		tw := &c.trackWrites[j]
		tw.state, _ = st.State(args[tw.arg], now, tw.state[:0])
	}
}

// afterWrite invalidates the keys a write command changed: those
// tracked before it ran whose state is no longer what it was, and those
// tracked since (a read registered meanwhile, on another event loop),
// whatever they hold. A keyless write (FLUSHALL) told the engine's
// OnChange of its flush: it is sent now, after the command's reply, unless
// RunTracking has already sent it.
func (n *Node) afterWrite(c *Client, cmd *commands.Command, args [][]byte, now int64, st engine.Store) {
	defer func() { c.trackWrites = c.trackWrites[:0] }()
	if cmd.FirstKey <= 0 { // no keys (a command of movable keys has its first)
		n.drainChanges(c)
		return
	}
	// The keys tracked now, under one lock; then, outside it, which of
	// them changed. A key tracked before and not now was told already (a
	// change on another connection forgot it).
	c.trackNow = c.trackNow[:0]
	tr := &n.track
	tr.mu.Lock()
	cmd.KeyPositions(args, func(i int) {
		if tr.tracked(args[i]) {
			c.trackNow = append(c.trackNow, i)
		}
	})
	tr.mu.Unlock()
	var changed [][]byte
	j := 0 // both lists are in argument order
	for _, i := range c.trackNow {
		for j < len(c.trackWrites) && c.trackWrites[j].arg < i {
			j++
		}
		if j < len(c.trackWrites) && c.trackWrites[j].arg == i {
			c.trackState, _ = st.State(args[i], now, c.trackState[:0])
			if bytes.Equal(c.trackState, c.trackWrites[j].state) {
				continue
			}
		}
		changed = append(changed, args[i])
	}
	if len(changed) > 0 {
		n.invalidate(c, changed)
	}
}

// invalidate tells the connections tracking keys that they changed, by
// c (nil: by no connection, an eviction from the table): the default
// mode's readers, which forget the keys, and the BCAST connections whose
// prefixes start them, one message per prefix.
func (n *Node) invalidate(c *Client, keys [][]byte) {
	type send struct {
		id   int64
		keys [][]byte
		bc   bool
	}
	var sends []send
	tr := &n.track
	tr.mu.Lock()
	// In Redis's order: each key's readers as the key is changed, then,
	// before the event loop sleeps, each prefix's connections.
	for _, k := range keys {
		ids := tr.keys[string(k)]
		if ids == nil {
			continue
		}
		delete(tr.keys, string(k))
		tr.items -= len(ids)
		for _, id := range sortedKeys(ids) {
			sends = append(sends, send{id: id, keys: [][]byte{k}})
		}
	}
	if len(tr.prefixes) > 0 {
		for _, p := range sortedKeys(tr.prefixes) {
			var ks [][]byte
			for _, k := range keys {
				if under(k, p) {
					ks = append(ks, k)
				}
			}
			if len(ks) == 0 {
				continue
			}
			for _, id := range sortedKeys(tr.prefixes[p]) {
				sends = append(sends, send{id: id, keys: ks, bc: true})
			}
		}
	}
	tr.mu.Unlock()
	for _, s := range sends {
		target := n.client(s.id)
		if target == nil || target.Killed() {
			continue
		}
		t := target.Tracking()
		if !t.On || t.BCast != s.bc || t.NoLoop && target == c {
			continue // tracking off or changed since the key was read; or the connection's own change
		}
		n.sendTracking(c, target, t, s.keys)
	}
}

// sortedKeys is m's keys in ascending order (client IDs, prefixes), in
// one allocation.
func sortedKeys[K cmp.Ordered, V any](m map[K]V) []K {
	out := make([]K, 0, len(m))
	for k := range m {
		out = append(out, k)
	}
	slices.Sort(out)
	return out
}

// flushTracking tells every tracking connection that every key changed
// (FLUSHALL, by c), and forgets the keys read.
func (n *Node) flushTracking(c *Client) {
	tr := &n.track
	tr.mu.Lock()
	tr.keys, tr.items = nil, 0
	tr.mu.Unlock()
	n.clientsMu.Lock()
	var targets []*Client
	for _, t := range n.clients {
		if t.TrackingOn() && !t.Killed() {
			targets = append(targets, t)
		}
	}
	n.clientsMu.Unlock()
	slices.SortFunc(targets, func(a, b *Client) int { return int(a.ID - b.ID) })
	for _, t := range targets {
		n.sendTracking(c, t, t.Tracking(), nil)
	}
}

// sendTracking sends target (tracking as t) an invalidation of keys, or
// of every key for nil keys (a flush), on its own connection (RESP3) or on its
// redirect's: a push in RESP3, a message on __redis__:invalidate to a
// RESP2 redirect that subscribed to anything. RESP2 without a redirect
// gets nothing, as in Redis. A redirect whose client has gone is marked
// broken, and a RESP3 target told so. What goes to c, the connection
// whose command changed the keys, follows that command's reply
// (pendingTracking).
func (n *Node) sendTracking(c, target *Client, t commands.Tracking, keys [][]byte) {
	dest, redirected := target, false
	if t.Redirect != 0 {
		dest = n.client(t.Redirect)
		if dest == nil || dest.Killed() {
			target.BreakRedirect()
			if target.Proto() >= 3 {
				n.deliverTo(c, target, &Message{RedirBroken: t.Redirect})
			}
			return
		}
		redirected = true
	}
	if dest.Proto() < 3 {
		if ch, pat := dest.Subscriptions(); !redirected || ch+pat == 0 {
			return
		}
	}
	m := &Message{Invalidate: true}
	for _, k := range keys {
		m.Keys = append(m.Keys, bytes.Clone(k))
	}
	n.deliverTo(c, dest, m)
}

// deliverTo queues m for dest; for c itself (the connection whose
// command is running), after the command's reply.
func (n *Node) deliverTo(c, dest *Client, m *Message) {
	switch {
	case dest == c:
		c.trackPending = append(c.trackPending, m)
	case dest.deliver != nil:
		dest.deliver(m)
	}
}

// writePendingTracking writes, after a command's reply (after EXEC's,
// for its commands), what its changes told its own connection.
func (c *Client) writePendingTracking(w commands.Writer) {
	for _, m := range c.trackPending {
		m.WriteTo(w)
	}
	clear(c.trackPending)
	c.trackPending = c.trackPending[:0]
}

// trackingStats is INFO's tracking_total_keys, tracking_total_items and
// tracking_total_prefixes.
func (n *Node) trackingStats() (keys, items, prefixes int) {
	tr := &n.track
	tr.mu.Lock()
	defer tr.mu.Unlock()
	return len(tr.keys), tr.items, len(tr.prefixes)
}

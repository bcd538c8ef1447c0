package node

import (
	"net"

	"github.com/rlserver/rlserver/acl"
	"sort"
	"sync/atomic"
	"time"

	"github.com/rlserver/rlserver/clock"
	"github.com/rlserver/rlserver/commands"
)

// Client is one connection registered with the node: its protocol state
// (the Session the commands see) and what the dispatcher keeps for it. The
// resp package creates it with NewClient and passes it to every Exec on
// that connection; only that connection's goroutine calls Exec with it.
type Client struct {
	*commands.Session

	ctx commands.Ctx // reused for every command: no allocation per command
	// lastLookup is the top-level command this client sent last (a
	// lookup cache; commandNamed).
	lastLookup *commands.Command
	// mark is the monotonic ns (clock.Mono) at which the current command
	// began: the end of the previous one, or the moment its batch was
	// read (Mark).
	mark int64
	// stripe is the statistics cell the client's commands count in.
	stripe uint32
	// looped: an event loop serves the client and pumps the replication
	// stream at the end of each round (SetLooped).
	looped bool
	// seq is odd while a command that drain waits for may run: Exec
	// counts its keyed and write commands, and an event loop each batch
	// of commands it reads (BeginBatch). Node.drain waits for it to move
	// on.
	seq atomic.Uint64
	// settling: the client waits in a drain of its own (CLIENT PAUSE,
	// Node.settle). It runs nothing else meanwhile, so no drain waits for
	// it: two pauses on two event loops would otherwise wait for each
	// other.
	settling atomic.Bool
	// handoff, once set (PSYNC), takes the connection over after the
	// command's reply is written (TakeHandoff).
	handoff func(conn net.Conn, pending []byte)
	// inExec: EXEC is running the client's queued commands (under every
	// shard's lock: nothing may wait).
	inExec bool
	// afterExec are what EXEC's commands left to do once every shard's
	// lock is released (REPLICAOF).
	afterExec []func()
	// deliver, set by the connection (SetDeliver), queues a message for
	// it to write as soon as it can: what other connections publish.
	// Safe for concurrent use.
	deliver func(*Message)
	// trackWrites is a write command's tracked keys before it ran
	// (tracking.go), reused from command to command; trackPending is
	// what its changes told this connection, written after its reply.
	trackWrites  []trackedWrite
	trackPending []*Message
	// trackNow and trackState are afterWrite's scratch: the arguments of
	// the keys tracked after the write, and a key's state then.
	trackNow   []int
	trackState []byte
}

// SetDeliver sets how messages published by other connections reach
// this one. Call it before the client runs its first command.
func (c *Client) SetDeliver(f func(*Message)) { c.deliver = f }

// TakeHandoff returns, once, what takes over the client's connection
// after the current command (a replica's PSYNC hands it to replication),
// or nil. The connection writes its pending replies, leaves the client,
// and passes the connection and the bytes it read but did not parse.
func (c *Client) TakeHandoff() func(conn net.Conn, pending []byte) {
	h := c.handoff
	c.handoff = nil
	return h
}

// NewClient registers a connection from addr ("ip:port") to laddr; close
// closes it from another goroutine (CLIENT KILL), and is set before the
// client is listed, so a kill never finds a client it cannot close. It
// returns commands.ErrDenied to refuse a peer protected mode keeps out
// (Protects), commands.ErrMaxClients when maxclients is reached.
func (n *Node) NewClient(addr, laddr string, close func()) (*Client, error) {
	if n.Protects(addr) {
		n.stats.rejectedConns.Add(1)
		return nil, commands.ErrDenied
	}
	n.clientsMu.Lock()
	defer n.clientsMu.Unlock()
	if max := n.maxClients.Load(); max > 0 && int64(len(n.clients)) >= max {
		n.stats.rejectedConns.Add(1)
		return nil, commands.ErrMaxClients
	}
	s := commands.NewSession(n.nextID.Add(1), addr, laddr, n.defaultUser, !n.authRequired(), close)
	c := &Client{Session: s, stripe: uint32(s.ID) % stripes, mark: clock.Mono()}
	n.clients[s.ID] = c
	n.stats.connections.Add(1)
	return c, nil
}

// NewInternalClient registers a client for a front of the node that is
// not a RESP connection (the Envoy rate limit service): authenticated, as
// a user allowed every command, never refused by maxclients or protected
// mode (the front has its own transport and its own authentication). It
// is listed by CLIENT LIST under name, with addr as its address, and
// CLIENT KILL passes it by (it has no connection to close). Like a
// connection's, it runs commands on one goroutine at a time; call Mark
// before each command and RemoveClient when done.
func (n *Node) NewInternalClient(name, addr string) *Client {
	n.clientsMu.Lock()
	defer n.clientsMu.Unlock()
	s := commands.NewSession(n.nextID.Add(1), addr, addr, acl.NewUser(name, acl.DefaultRules(n.catalog)), true, func() {})
	s.SetName(name)
	s.SetInternal()
	c := &Client{Session: s, stripe: uint32(s.ID) % stripes, mark: clock.Mono()}
	n.clients[s.ID] = c
	return c
}

// Protects reports whether protected mode refuses a connection from addr
// ("ip:port"), as Redis 7.0's clientAcceptHandler does: protected mode is
// on, the default user has no password, and the peer is not on the
// loopback interface. An address that is not an IP (an in-process
// client) is local.
func (n *Node) Protects(addr string) bool {
	if !n.protectedMode.Load() || n.PasswordRequired() {
		return false
	}
	return !isLoopback(addr)
}

// isLoopback reports whether addr's host is a loopback IP, or not an IP
// at all.
func isLoopback(addr string) bool {
	host, _, err := net.SplitHostPort(addr)
	if err != nil {
		host = addr
	}
	ip := net.ParseIP(host)
	return ip == nil || ip.IsLoopback()
}

// RemoveClient unregisters a closed connection, and its subscriptions.
// Call it from the connection's goroutine.
func (n *Node) RemoveClient(c *Client) {
	c.UnsubscribeAll(n)
	if c.TrackingOn() {
		n.Track(c.Session, commands.Tracking{})
	}
	n.clientsMu.Lock()
	delete(n.clients, c.ID)
	n.clientsMu.Unlock()
}

// Sessions lists the connected clients' sessions by ID; those being
// killed are gone even before their connection ends.
func (n *Node) Sessions() []*commands.Session {
	n.clientsMu.Lock()
	out := make([]*commands.Session, 0, len(n.clients))
	for _, c := range n.clients {
		if !c.Killed() {
			out = append(out, c.Session)
		}
	}
	n.clientsMu.Unlock()
	sort.Slice(out, func(i, j int) bool { return out[i].ID < out[j].ID })
	return out
}

// connectedClients counts the registered connections.
func (n *Node) connectedClients() int {
	n.clientsMu.Lock()
	defer n.clientsMu.Unlock()
	return len(n.clients)
}

// SetStripe tells the client which statistics cell to count its commands
// in: the connection's event loop passes its own index, so that loops on
// different cores never update one cache line (see stripes). Call it
// before the client's first command. Without it, a client counts in the
// cell its ID picks.
func (c *Client) SetStripe(loop int) { c.stripe = uint32(loop) % stripes }

// SetLooped tells the client that an event loop serves it, and calls
// Node.PumpReplication after its rounds: its writes then leave the
// replication pump to the loop instead of waking its goroutine. Call it
// before the client's first command.
func (c *Client) SetLooped() { c.looped = true }

// BeginBatch and EndBatch bracket a batch of commands that an event loop
// (SetLooped) runs on the client: one count for the batch instead of two
// atomic adds a command (seq). Nothing in between may wait for another
// client's commands.
func (c *Client) BeginBatch() { c.seq.Add(1) }

// EndBatch ends what BeginBatch began.
func (c *Client) EndBatch() { c.seq.Add(1) }

// Mark records that a new batch of commands has just been read, so the
// first command's time excludes the wait for input. The connection calls
// it after a blocking read.
func (c *Client) Mark() { c.mark = clock.Mono() }

// Idle is how long the client has been without a command (the idle
// timeout's measure).
func (c *Client) Idle() time.Duration { return c.Session.Idle() }

// OutputOver reports whether a client with unread bytes of replies (ours
// not yet sent and the socket's not yet acknowledged) must be closed by
// the client output buffer limit, at now; over the soft limit it starts
// (or keeps) the clock in *since, under it it stops it. A true answer is
// counted (INFO stats) and logged: the connection closes.
func (n *Node) OutputOver(c *Client, unread int64, since *time.Time, now time.Time) bool {
	o := n.outputLimit.Load()
	switch {
	case o.Hard > 0 && unread > o.Hard:
	case o.Soft > 0 && unread > o.Soft:
		if since.IsZero() {
			*since = now
		}
		if now.Sub(*since) < time.Duration(o.SoftSeconds)*time.Second {
			return false
		}
	default:
		*since = time.Time{}
		return false
	}
	n.outputClosed(c, o, "unread_bytes", unread)
	return true
}

// outputClosed counts and logs a client closed by the output limit o,
// with what else the caller knows.
func (n *Node) outputClosed(c *Client, o *OutputLimit, attrs ...any) {
	n.stats.outputDisconnects.Add(1)
	n.log.Warn("client closed for overcoming its output buffer limit", append([]any{"addr", c.Addr, "id", c.ID, "limit", o.String()}, attrs...)...)
}

// OutputCheckAt is the size of a write from which the connection checks
// what its socket holds unread against the output limit: a quarter of
// the smaller limit set; 0 with none.
func (n *Node) OutputCheckAt() int {
	o := n.outputLimit.Load()
	at := o.Hard
	if o.Soft > 0 && (at == 0 || o.Soft < at) {
		at = o.Soft
	}
	return int(at / 4)
}

// OutputSoftExpired reports whether a client over the soft limit since
// since has been so for too long (the loop's once-a-second check of the
// clients it cannot write to); like OutputOver it counts and logs.
func (n *Node) OutputSoftExpired(c *Client, since time.Time, now time.Time) bool {
	o := n.outputLimit.Load()
	if since.IsZero() || o.Soft == 0 || now.Sub(since) < time.Duration(o.SoftSeconds)*time.Second {
		return false
	}
	n.outputClosed(c, o)
	return true
}

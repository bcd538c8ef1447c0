package node

import (
	"bytes"
	"context"

	"github.com/rlserver/rlserver/acl"
	"github.com/rlserver/rlserver/clock"
	"github.com/rlserver/rlserver/commands"
	"github.com/rlserver/rlserver/engine"
	"github.com/rlserver/rlserver/internal/ascii"
)

// Exec runs one command for client c, writing its reply to w. args[0] is
// the command name; args are valid only during the call.
//
// The dispatcher's checks, in order: the command exists, the client is
// authenticated, the arity, key sizes, the user's permissions, in cluster
// mode the keys' slot (route), subscribed mode, MULTI's rules, writes
// refused on a read-only node. Then it reads the clock once and runs the
// handler.
func (n *Node) Exec(c *Client, args [][]byte, w commands.Writer) {
	if c.Quiet() { // CLIENT REPLY OFF or SKIP: the reply is dropped
		w = commands.QuietWriter{W: w, S: c.Session}
	}
	if h := n.exec(c, args, w); h != nil {
		_ = n.execHeld(context.Background(), c, args, w, h)
	}
	c.EndCommand(args)
}

// ExecContext is Exec for a front's internal client, which has no
// connection to park: a command held by a FAILOVER or CLIENT PAUSE
// (hold.go) waits here, where it no longer counts as running, until the
// hold ends, and then runs (or is held again). If ctx ends first, the
// command never runs and ExecContext returns ctx's error.
func (n *Node) ExecContext(ctx context.Context, c *Client, args [][]byte, w commands.Writer) error {
	if c.Quiet() {
		w = commands.QuietWriter{W: w, S: c.Session}
	}
	defer c.EndCommand(args)
	if h := n.exec(c, args, w); h != nil {
		return n.execHeld(ctx, c, args, w, h)
	}
	return nil
}

// execHeld waits for the end of the hold h (or ctx's), then runs the
// command again, as often as it is held.
func (n *Node) execHeld(ctx context.Context, c *Client, args [][]byte, w commands.Writer, h chan struct{}) error {
	for h != nil {
		n.blocked.Add(1)
		select {
		case <-h:
			n.blocked.Add(-1)
		case <-ctx.Done():
			n.blocked.Add(-1)
			return ctx.Err()
		}
		c.Mark()
		h = n.exec(c, args, w)
	}
	return nil
}

// exec is Exec. A command that a hold holds (hold.go) is parked
// on its connection, to run when the hold ends; on an internal client
// exec returns the channel that closes when the hold ends or changes, and
// the caller waits.
func (n *Node) exec(c *Client, args [][]byte, w commands.Writer) (held chan struct{}) {
	if len(args) == 0 {
		return nil
	}
	d := n.dispatch.cell(c.stripe)
	d[nCommands].Add(1)
	cmd, err := n.resolve(c, args)
	dry := false // a replica's peek: answered, stored nowhere
	if err == "" && !c.looped && (n.cluster != nil && cmd.FirstKey > 0 || cmd.Has(commands.FlagWrite|commands.FlagTxnControl)) {
		// Odd from before the routing check and the check for held
		// writes until the command has run: a slot handoff waits for
		// the commands routed before it, a FAILOVER for the writes
		// that began before it held them (drain). Counted before held
		// is read, so that one of the two sees the other. An event
		// loop counts a batch of commands at once (BeginBatch).
		c.seq.Add(1)
		defer c.seq.Add(1)
	}
	routed := false // refused by the cluster's routing: a redirection, sent as it is
	if err == "" && n.cluster != nil && (cmd.FirstKey > 0 || cmd.Has(commands.FlagTxnControl)) {
		err = n.route(c, cmd, args)
		routed = err != ""
	}
	if err == "" {
		h := n.held.Load()
		var refused bool
		switch err, refused = c.SubscribedRefuses(cmd.Name); {
		case h != nil && h.all && cmd.Name != "psync":
			// CLIENT PAUSE ALL: every command waits, but a replica's
			// sync, which changes nothing here and hands its
			// connection over after its reply.
			return n.park(c, h, cmd.Has(commands.FlagWrite), args)
		case refused:
		case c.InMulti() && cmd.Has(commands.FlagNoMulti):
			err = commands.ErrNotInMulti
		case cmd.Has(commands.FlagWrite): // refused at queue time too, as Redis does
			ro := n.readOnly.Load()
			if ro == nil && h == nil {
				break
			}
			peek := cmd.Peek != nil && cmd.Peek(args)
			switch {
			case h != nil && !c.InMulti() && !peek:
				return n.park(c, h, true, args)
			case ro != nil && peek:
				dry = true
			case ro != nil:
				err = *ro
			}
		case cmd.Has(commands.FlagTxnControl):
			if h != nil && cmd.Name == "exec" && n.queuesWrite(c) {
				return n.park(c, h, true, args)
			}
		}
	}
	if err != "" {
		d[nErrorReplies].Add(1)
		if cmd != nil {
			n.perCmd[cmd.Index].cell(c.stripe)[nRejected].Add(1)
		}
		c.RefusedInMulti()
		if cmd != nil && cmd.Name == "exec" { // a refused EXEC drops the transaction, as in Redis
			c.DiscardMulti()
			if !routed {
				err = commands.ErrExecRefused(err) // execCommandAbort's words
			}
		}
		w.Error(string(err))
		return nil
	}
	if c.InMulti() && !cmd.Has(commands.FlagTxnControl) {
		c.Enqueue(args)
		w.Simple("QUEUED")
		return nil
	}
	var now int64
	if !cmd.Clockless {
		// The clock reads at c.mark, the monotonic reading that ended
		// the previous command (or began the batch): the dispatcher's
		// timing and the clock share one reading per command.
		now = n.nowAt(c.mark)
	}
	st := n.engine.Store()
	if dry {
		st = st.ReadOnly()
	} else if cmd.Has(commands.FlagWrite) {
		c.Wrote()
		n.run(c, cmd, args, w, now, st)
		n.tellReplication(c)
		return nil
	}
	n.run(c, cmd, args, w, now, st)
	return nil
}

// RunQueued runs EXEC's queue for s's client as one atomic step: every
// shard is locked for the duration and every command sees the clock
// reading now. Each command is checked again (a write refused meanwhile
// is refused here too) and its reply written to w.
func (n *Node) RunQueued(s *commands.Session, queue [][][]byte, w commands.Writer, now int64) {
	c := n.clientOf(s)
	saved := c.ctx // EXEC's own context: the queued runs reuse c.ctx
	c.inExec = true
	defer func() {
		c.inExec = false
		n.tellReplication(c)
		for _, f := range c.afterExec {
			f()
		}
		c.afterExec = nil
		c.writePendingTracking(unquiet(w)) // after EXEC's reply, as Redis sends them
	}()
	n.engine.Atomic(func(st engine.Store) {
		var buf []byte
		for _, wk := range s.Watched() {
			buf, _ = st.State(wk.Key, now, buf[:0])
			if !bytes.Equal(buf, wk.State) {
				w.NullArray() // a watched key changed: nothing runs
				return
			}
		}
		w.Array(len(queue))
		for _, args := range queue {
			cmd, err := n.resolve(c, args)
			cst := st
			if err == "" && cmd.Has(commands.FlagWrite) {
				if ro := n.readOnly.Load(); ro == nil {
					c.Wrote()
				} else if cmd.Peek != nil && cmd.Peek(args) {
					cst = st.ReadOnly()
				} else {
					err = *ro
				}
			}
			if err != "" {
				w.Error(string(err))
				continue
			}
			n.run(c, cmd, args, w, now, cst)
		}
	})
	c.ctx = saved
}

// deferInExec, when s's client is running EXEC (under every shard's
// lock), keeps f to run once EXEC has, and reports true; otherwise it
// reports false and the caller goes on now.
func (n *Node) deferInExec(s *commands.Session, f func()) bool {
	c := n.clientOf(s)
	if c == nil || !c.inExec {
		return false
	}
	c.afterExec = append(c.afterExec, f)
	return true
}

// tellReplication tells replication that a write ran, c's (nil for
// none: an expiry sweep, a slot handover): for the event loop's
// PumpReplication when a loop serves c (replication.Manager.ChangedOnLoop),
// else for the pump's goroutine (replication.Manager.Changed).
func (n *Node) tellReplication(c *Client) {
	switch {
	case n.repl == nil:
	case c != nil && c.looped:
		n.repl.ChangedOnLoop()
	default:
		n.repl.Changed()
	}
}

// ReplicationPending reports whether writes wait for the replication pump
// (replication.Manager.Pending).
func (n *Node) ReplicationPending() bool { return n.repl != nil && n.repl.Pending() }

// PumpReplication runs the replication pump on the calling event loop
// after a round that wrote: before the round's replies are sent, so its
// replicas get the round's changes first, or, on a busy loop, once a
// later round has run (replication.Manager.PumpNow). It reports false if
// the pump's goroutine has the changes: the loop then yields to it.
func (n *Node) PumpReplication() bool { return n.repl != nil && n.repl.PumpNow() }

// clientOf finds the client of a session of this node.
func (n *Node) clientOf(s *commands.Session) *Client {
	if s == nil {
		return nil
	}
	return n.client(s.ID)
}

// client is the client with ID id, nil if none.
func (n *Node) client(id int64) *Client {
	n.clientsMu.Lock()
	defer n.clientsMu.Unlock()
	return n.clients[id]
}

// AppendKey appends the keys of the command args to keys, for Prefetch:
// the first key of a command with a key range, every key of one that
// finds its keys in its arguments (RL.ALL: each limit's, which its
// decision looks up one after the other), while keys holds fewer than
// PrefetchMax. Call it from the client's connection goroutine, as Exec.
func (n *Node) AppendKey(keys [][]byte, c *Client, args [][]byte) [][]byte {
	if len(args) < 2 {
		return keys
	}
	cmd := n.commandNamed(c, args[0])
	if cmd == nil || cmd.FirstKey <= 0 || cmd.FirstKey >= len(args) {
		return keys
	}
	if cmd.NextKey == nil {
		return append(keys, args[cmd.FirstKey])
	}
	cmd.KeyPositions(args, func(i int) {
		if len(keys) < PrefetchMax {
			keys = append(keys, args[i])
		}
	})
	return keys
}

// Prefetch brings the keys' state into the CPU cache ahead of the commands
// that will use them (engine.Prefetch): a connection's pipelined batch.
func (n *Node) Prefetch(keys [][]byte) { n.engine.Prefetch(keys) }

// Prefetches reports whether Prefetch loads anything (engine.Prefetches):
// on a small keyspace, which stays in the CPU cache, a connection need not
// gather its batch's keys.
func (n *Node) Prefetches() bool { return n.engine.Prefetches() }

// PrefetchMax is how many keys one Prefetch call takes at most
// (engine.PrefetchMax), for the connections that gather them.
const PrefetchMax = engine.PrefetchMax

// atClock is a clock that can read at a monotonic reading its caller took
// with clock.Mono (clock.Real and clock.Manual are).
type atClock interface{ NowAt(mono int64) int64 }

// nowAt reads the server clock at the monotonic reading m (clock.Mono).
func (n *Node) nowAt(m int64) int64 {
	if c, ok := n.clock.(atClock); ok {
		return c.NowAt(m)
	}
	return n.clock.Now()
}

// run executes a resolved command with the given clock reading and store.
//
// Timing takes one monotonic reading per command: a command runs from the
// end of the previous one (or its batch's Mark) to its own end.
func (n *Node) run(c *Client, cmd *commands.Command, args [][]byte, w commands.Writer, now int64, st engine.Store) {
	x := &c.ctx
	*x = commands.Ctx{N: n, C: c.Session, W: w, Args: args, Now: now, Store: st}
	tracking := n.trackers.Load() > 0 // client-side caching (tracking.go)
	if tracking {
		switch {
		case cmd.Has(commands.FlagReadOnly) && cmd.FirstKey > 0 && c.Remembers():
			n.remember(c, cmd, args)
		case cmd.Has(commands.FlagWrite):
			n.beforeWrite(c, cmd, args, now, st)
		}
	}
	cmd.Run(x)
	if cmd.Has(commands.FlagWrite) && (tracking || n.trackers.Load() > 0) {
		// Read again after the write: a connection that turned tracking
		// on and read a key meanwhile is told too (every key tracked now
		// counts as changed when beforeWrite did not run).
		n.afterWrite(c, cmd, args, now, st) // the only one to leave c anything pending
		if len(c.trackPending) > 0 && !c.inExec {
			c.writePendingTracking(unquiet(w))
		}
	}
	end := clock.Mono()
	cs := n.perCmd[cmd.Index].cell(c.stripe)
	cs[nCalls].Add(1)
	cs[nNs].Add(end - c.mark)
	n.observe(c, cmd, args, end-c.mark)
	if d, ok := x.Decision(); ok {
		n.decided(c, d, args[cmd.FirstKey], end)
	}
	for _, d := range x.Decisions() {
		n.decided(c, d, args[d.Key], end)
	}
	c.mark = end
	if x.Failed() {
		cs[nFailed].Add(1)
		n.dispatch.cell(c.stripe)[nErrorReplies].Add(1)
	}
	c.Done(end)
	x.Args = nil
}

// commandNamed finds the top-level command name in the table. Clients
// mostly repeat one command: the client's last one is tried first, which
// saves the lower-casing and the map lookup. It runs on the client's
// connection goroutine only (the cache is not shared).
func (n *Node) commandNamed(c *Client, name []byte) *commands.Command {
	cmd := c.lastLookup
	if cmd == nil || !ascii.EqualFold(name, cmd.Name) {
		cmd = n.table.Lookup(name)
		if cmd != nil {
			c.lastLookup = cmd
		}
	}
	return cmd
}

// resolve finds the command (or subcommand) for args and applies the
// checks every command gets: existence, authentication, arity, key size,
// permissions (inside EXEC with Redis's text for rules changed since the
// command was queued).
// It returns the command and, if refused, the error.
func (n *Node) resolve(c *Client, args [][]byte) (*commands.Command, commands.Error) {
	cmd := n.commandNamed(c, args[0])
	if cmd == nil {
		c.Named(nil) // CLIENT LIST's cmd=NULL, as Redis's lastcmd
		return nil, commands.ErrUnknownCommand(args)
	}
	if cmd.Sub != nil && len(args) >= 2 {
		sub := commands.Table(cmd.Sub).Lookup(args[1])
		if sub == nil {
			c.Named(nil)
			if !c.Authenticated() && !cmd.Has(commands.FlagNoAuth) && n.authRequired() {
				return cmd, commands.ErrNoAuth
			}
			return cmd, commands.ErrUnknownSubcommand(args[1], cmd.Name)
		}
		cmd = sub
	}
	if !c.inExec { // EXEC's commands leave it EXEC, as in Redis
		c.Named(&cmd.Name) // the command as soon as it is found, refused or not, as Redis's lastcmd
	}
	if !c.Authenticated() && !cmd.Has(commands.FlagNoAuth) && n.authRequired() {
		return cmd, commands.ErrNoAuth
	}
	if !cmd.ArityOK(len(args)) {
		return cmd, commands.ErrWrongArgs(cmd.Name)
	}
	if n.keyTooLong(cmd, args) {
		c.CloseWhenReplied()
		return cmd, commands.ErrKeyTooLong
	}
	// The user's permissions, where Redis checks them: after the login
	// and the arity, before the cluster's routing. A user allowed
	// everything (the default user, unless changed) costs two loads and
	// a test.
	if r := c.User().Rules(); !r.Unrestricted() {
		if d, at := r.Check(n.catalog.Command(cmd.Index), args); d != acl.Allowed {
			n.refused(c, cmd, args, d, at)
			return cmd, commands.ErrNoPerm(d, cmd.Name, c.inExec)
		}
	}
	return cmd, ""
}

// keyTooLong reports whether a key argument of the call is longer than
// the key limit. Most calls have no argument that long at all, which a
// pass over the lengths shows without finding the keys (for a command of
// movable keys, finding them is parsing its grammar).
func (n *Node) keyTooLong(cmd *commands.Command, args [][]byte) bool {
	lim := n.cfg.Limits.MaxKeyLen
	long := false
	for _, a := range args[1:] {
		long = long || len(a) > lim
	}
	if !long {
		return false
	}
	tooLong := false
	cmd.KeyPositions(args, func(i int) { tooLong = tooLong || len(args[i]) > lim })
	return tooLong
}

// unquiet is w without CLIENT REPLY's filter: out-of-band messages (an
// invalidation) go whether replies do or not, as in Redis.
func unquiet(w commands.Writer) commands.Writer {
	if q, ok := w.(commands.QuietWriter); ok {
		return q.W
	}
	return w
}

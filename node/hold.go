package node

import (
	"time"

	"github.com/rlserver/rlserver/commands"
)

// Holds: while a FAILOVER runs (failover.go), or a CLIENT PAUSE lasts, the
// node holds commands back, as Redis's pauses do: the write commands (an
// EXEC with one queued too), or with CLIENT PAUSE ALL every command. A
// held command waits for the hold to end, parked on its connection, which
// reads nothing more meanwhile (an internal client waits in ExecContext),
// then runs as if it had just come.

// hold is the hold in force (Node.held). ch closes when it ends or
// changes: a waiter then looks again. all: every command waits, not only
// the writes.
type hold struct {
	ch  chan struct{}
	all bool
}

// holds are what holds commands now. Guarded by Node.holdMu.
type holds struct {
	failover   bool      // a FAILOVER waits for its replica
	pauseUntil time.Time // the end of CLIENT PAUSE; zero for none
	pauseAll   bool      // CLIENT PAUSE ALL, not WRITE
	pauseTimer *time.Timer
}

// setHoldLocked puts the hold that n.holds asks for in force, closing
// the one before, so that its waiters look again. n.holdMu must be held.
func (n *Node) setHoldLocked() {
	paused := !n.holds.pauseUntil.IsZero() && time.Now().Before(n.holds.pauseUntil)
	if !paused {
		n.holds.pauseUntil, n.holds.pauseAll = time.Time{}, false
	}
	var next *hold
	if n.holds.failover || paused {
		next = &hold{ch: make(chan struct{}), all: paused && n.holds.pauseAll}
	}
	if old := n.held.Swap(next); old != nil {
		close(old.ch)
	}
}

// holdWrites holds the write commands (on) until it is called with off: a
// FAILOVER's hold.
func (n *Node) holdWrites(on bool) {
	n.holdMu.Lock()
	defer n.holdMu.Unlock()
	n.holds.failover = on
	n.setHoldLocked()
}

// Pause is CLIENT PAUSE, run by s: it holds the write commands, or with
// all every command, for d. A pause already in force is extended, and
// made to hold every command if either does, as Redis's are. It returns
// once the commands already running on other clients have ended (inside
// EXEC, once EXEC has run): from its reply on, no write changes the
// keyspace or the replication stream until the pause ends, as none
// could on single-threaded Redis.
func (n *Node) Pause(s *commands.Session, d time.Duration, all bool) {
	n.pause(d, all)
	if !n.deferInExec(s, func() { n.settle(s) }) {
		n.settle(s)
	}
}

// settle waits, as s's client, for the commands running on other
// clients (drain). It counts as settling meanwhile, so that a drain of
// another client's does not wait for it.
func (n *Node) settle(s *commands.Session) {
	if c := n.clientOf(s); c != nil {
		c.settling.Store(true)
		defer c.settling.Store(false)
	}
	n.drain(s.ID)
}

// pause puts CLIENT PAUSE's hold in force (Pause).
func (n *Node) pause(d time.Duration, all bool) {
	n.holdMu.Lock()
	defer n.holdMu.Unlock()
	until := time.Now().Add(d)
	if until.After(n.holds.pauseUntil) {
		n.holds.pauseUntil = until
	}
	n.holds.pauseAll = n.holds.pauseAll || all
	if n.holds.pauseTimer != nil {
		n.holds.pauseTimer.Stop()
	}
	n.holds.pauseTimer = time.AfterFunc(time.Until(n.holds.pauseUntil), func() {
		n.holdMu.Lock()
		defer n.holdMu.Unlock()
		n.setHoldLocked()
	})
	n.setHoldLocked()
}

// Unpause is CLIENT UNPAUSE: the pause ends now (a FAILOVER's hold stays).
func (n *Node) Unpause() {
	n.holdMu.Lock()
	defer n.holdMu.Unlock()
	n.holds.pauseUntil, n.holds.pauseAll = time.Time{}, false
	if n.holds.pauseTimer != nil {
		n.holds.pauseTimer.Stop()
	}
	n.setHoldLocked()
}

// covers reports whether the hold h holds a command; write: it is a write
// command, or an EXEC with one queued.
func (h *hold) covers(write bool) bool { return h != nil && (h.all || write) }

// park holds a command on c until no hold holds it, and counts it then.
// A connection's client parks: its connection reads nothing more until
// the command has run, and takes the park again if a later hold holds it
// (Session.TakePark after the reply's write). An internal client has no
// connection: park returns the hold's channel, and ExecContext waits.
func (n *Node) park(c *Client, h *hold, write bool, args [][]byte) chan struct{} {
	n.dispatch.cell(c.stripe)[nCommands].Add(-1)
	if c.Internal() {
		return h.ch
	}
	q := commands.CloneArgs(args)
	c.Park(func(gone <-chan struct{}) func(commands.Writer) {
		n.blocked.Add(1)
		defer n.blocked.Add(-1)
		for h := n.held.Load(); h.covers(write); h = n.held.Load() {
			select {
			case <-h.ch:
			case <-gone:
				return func(commands.Writer) {} // the client went: the command never runs
			}
		}
		return func(w commands.Writer) {
			// On its connection's loop, or goroutine, counted as
			// running before it looks for a hold: a hold that began
			// since parks it again (the connection takes the new
			// park), or a FAILOVER's waits for it.
			if c.looped {
				c.BeginBatch()
				defer c.EndBatch()
			}
			c.Mark()
			n.exec(c, q, w)
		}
	})
	return nil
}

// queuesWrite reports whether c's MULTI queue holds a write command: its
// EXEC waits while writes are held, as Redis pauses such an EXEC.
func (n *Node) queuesWrite(c *Client) bool {
	for _, args := range c.Queued() {
		if cmd := n.table.Lookup(args[0]); cmd == nil || cmd.Has(commands.FlagWrite) {
			return true
		}
	}
	return false
}

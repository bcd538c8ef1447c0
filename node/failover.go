package node

import (
	"errors"

	"github.com/rlserver/rlserver/commands"
	"github.com/rlserver/rlserver/replication"
)

// A coordinated failover (FAILOVER, docs/replication.md): replication
// runs it (replication.Manager.Failover); the node holds the write
// commands meanwhile, as Redis's CLIENT PAUSE WRITE does, and runs them
// when it ends: refused as a replica's, or run on the primary again if
// the failover was aborted.

// Failover starts a FAILOVER (commands.FailoverArgs), or ends one (ABORT),
// and answers at once. Inside EXEC too: the failover waits for EXEC's end
// (drain), and the transaction's writes after it run, as one unit.
func (n *Node) Failover(s *commands.Session, a commands.FailoverArgs) error {
	if n.cluster != nil {
		return commands.ErrFailoverCluster
	}
	if n.repl == nil {
		return errNoReplication
	}
	if a.Abort {
		if err := n.repl.AbortFailover(); err != nil {
			return commands.ErrFailoverNone
		}
		return nil
	}
	h := make(chan struct{}) // this failover's hold
	err := n.repl.Failover(replication.FailoverOptions{
		Host: a.Host, Port: a.Port, Timeout: a.Timeout, Force: a.Force,
		Hold:   func() { n.held.Store(&h) },
		Settle: func() { n.drain(-1) },
		End: func(followed bool, host string, port int) {
			if followed {
				n.setReplicaOf(host, port)
			}
			n.resumeWrites(&h)
		},
	})
	switch {
	case err == nil:
		return nil
	case errors.Is(err, replication.ErrFailoverRunning):
		return commands.ErrFailoverRunning
	case errors.Is(err, replication.ErrFailoverOnReplica):
		return commands.ErrFailoverOnReplica
	case errors.Is(err, replication.ErrFailoverNoReplicas):
		return commands.ErrFailoverNoReplicas
	case errors.Is(err, replication.ErrFailoverForceArgs):
		return commands.ErrFailoverForce
	case errors.Is(err, replication.ErrFailoverNotReplica):
		return commands.ErrFailoverNotReplica
	case errors.Is(err, replication.ErrFailoverTargetOffline):
		return commands.ErrFailoverOffline
	}
	return commands.Error("ERR " + err.Error())
}

// resumeWrites ends the hold h: the writes it held run. held is cleared
// first (unless a later failover's hold is in force already), so a write
// that wakes finds no hold, or the later one.
func (n *Node) resumeWrites(h *chan struct{}) {
	n.held.CompareAndSwap(h, nil)
	close(*h)
}

// hold keeps a write command for the end of the failover that holds
// writes (h closes then), and counts it then. A connection's client
// parks: its connection reads nothing more until the write has run. An
// internal client has no connection: hold returns h, and Exec waits.
func (n *Node) hold(c *Client, h chan struct{}, args [][]byte) chan struct{} {
	n.dispatch.cell(c.stripe)[nCommands].Add(-1)
	if c.Internal() {
		return h
	}
	q := make([][]byte, len(args)) // args are the connection's buffer's
	for i, a := range args {
		q[i] = append([]byte(nil), a...)
	}
	c.Park(func(gone <-chan struct{}) func(commands.Writer) {
		for ; h != nil; h = heldChan(n) {
			select {
			case <-h:
			case <-gone:
				return func(commands.Writer) {} // the client went: the write never runs
			}
		}
		return func(w commands.Writer) {
			// On its connection's loop, or goroutine. A failover
			// that began since waits for it (it counts as running),
			// so it is not held.
			if c.looped {
				c.BeginBatch()
				defer c.EndBatch()
			}
			c.Mark()
			n.exec(c, q, w, false)
		}
	})
	return nil
}

// heldChan is the hold in force, nil for none.
func heldChan(n *Node) chan struct{} {
	if h := n.held.Load(); h != nil {
		return *h
	}
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

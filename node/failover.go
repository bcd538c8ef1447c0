package node

import (
	"errors"

	"github.com/rlserver/rlserver/commands"
	"github.com/rlserver/rlserver/replication"
)

// A coordinated failover (FAILOVER, docs/replication.md): replication
// runs it (replication.Manager.Failover); the node holds the write
// commands meanwhile (hold.go), as Redis's CLIENT PAUSE WRITE does, and
// runs them when it ends: refused as a replica's, or run on the primary
// again if the failover was aborted.

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
	err := n.repl.Failover(replication.FailoverOptions{
		Host: a.Host, Port: a.Port, Timeout: a.Timeout, Force: a.Force,
		Hold:   func() { n.holdWrites(true) },
		Settle: func() { n.drain(-1) },
		End: func(followed bool, host string, port int) {
			if followed {
				n.setReplicaOf(host, port)
			}
			n.holdWrites(false)
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

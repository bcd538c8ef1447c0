package node

import (
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
	if err == nil {
		return nil
	}
	if wire, ok := failoverRefusals[err]; ok {
		return wire
	}
	return commands.Error("ERR " + err.Error())
}

// failoverRefusals are Redis's texts for replication's refusals.
var failoverRefusals = map[error]commands.Error{
	replication.ErrFailoverRunning:       commands.ErrFailoverRunning,
	replication.ErrFailoverOnReplica:     commands.ErrFailoverOnReplica,
	replication.ErrFailoverNoReplicas:    commands.ErrFailoverNoReplicas,
	replication.ErrFailoverForceArgs:     commands.ErrFailoverForce,
	replication.ErrFailoverNotReplica:    commands.ErrFailoverNotReplica,
	replication.ErrFailoverTargetOffline: commands.ErrFailoverOffline,
}

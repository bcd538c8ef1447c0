package node

import (
	"errors"
	"net"
	"strconv"
	"time"

	"github.com/rlserver/rlserver/commands"
	"github.com/rlserver/rlserver/replication"
)

// The node's side of replication (docs/replication.md): the commands
// reach the replication.Manager through these methods.

// errNoReplication: a node built without a Manager (tests of the
// dispatcher alone).
const errNoReplication commands.Error = "ERR replication is not set up on this node"

// Replication is the node's replication manager, nil if it has none.
func (n *Node) Replication() *replication.Manager { return n.repl }

// ReplicaOf makes the node follow host:port (REPLICAOF host port).
// Inside EXEC, which holds every shard's lock, the change is made once
// EXEC has run (afterExec); the reply is the same.
func (n *Node) ReplicaOf(s *commands.Session, host string, port int) (bool, error) {
	if n.repl == nil {
		return false, errNoReplication
	}
	if n.deferInExec(s, func() { n.ReplicaOf(nil, host, port) }) {
		return n.repl.Follows(host, port), nil
	}
	already := n.repl.ReplicaOf(host, port)
	if !already {
		n.setReplicaOf(host, port)
	}
	return already, nil
}

// ReplicaOfNoOne promotes the node (REPLICAOF NO ONE); inside EXEC, once
// EXEC has run.
func (n *Node) ReplicaOfNoOne(s *commands.Session) error {
	if n.repl == nil {
		return errNoReplication
	}
	if n.deferInExec(s, func() { n.ReplicaOfNoOne(nil) }) {
		return nil
	}
	n.repl.NoOne()
	n.setReplicaOf("", 0)
	return nil
}

// setReplicaOf keeps the configuration's replicaof in step (CONFIG GET).
func (n *Node) setReplicaOf(host string, port int) {
	n.cfgMu.Lock()
	defer n.cfgMu.Unlock()
	if host == "" {
		n.cfg.ReplicaOf = ""
		return
	}
	n.cfg.ReplicaOf = host + " " + strconv.Itoa(port)
}

// Role is ROLE's reply.
func (n *Node) Role() commands.Role {
	if n.repl == nil {
		return commands.Role{}
	}
	r := n.repl.Role()
	out := commands.Role{Replica: r.Replica, Offset: r.Offset, Host: r.Host, Port: r.Port, State: r.State}
	for _, rep := range r.Replicas {
		out.Replicas = append(out.Replicas, commands.RoleReplica{IP: rep.IP, Port: rep.Port, Offset: rep.Offset})
	}
	return out
}

// Psync hands s's connection to replication after this command.
func (n *Node) Psync(s *commands.Session, replid string, offset int64, failover bool) error {
	if n.repl == nil {
		return errNoReplication
	}
	c := n.clientOf(s)
	if c == nil {
		return errNoReplication
	}
	if failover { // its primary hands over (FAILOVER): take over, then serve it as a replica
		switch err := n.repl.TakeOver(replid); {
		case errors.Is(err, replication.ErrTakeOverOnPrimary):
			return commands.ErrPsyncFailoverOnPrimary
		case err != nil:
			return commands.ErrPsyncFailoverReplID
		}
		n.setReplicaOf("", 0)
	}
	sync := replication.Sync{ReplID: replid, Offset: offset, Port: s.ReplPort, IP: s.ReplIP}
	c.handoff = func(conn net.Conn, pending []byte) { n.repl.Serve(conn, pending, sync) }
	return nil
}

// Wait is WAIT: replicas that acknowledged s's writes, now or, when it
// must wait for them, later (replication.Manager.Wait). Inside EXEC it
// never waits, as Redis's does not.
func (n *Node) Wait(s *commands.Session, replicas int, timeout time.Duration) (int, func(gone <-chan struct{}) int, error) {
	if n.repl == nil {
		return 0, nil, nil
	}
	if n.repl.IsReplica() {
		return 0, nil, commands.ErrWaitOnReplica
	}
	c := n.clientOf(s)
	now, later := n.repl.Wait(replicas, timeout, s.HasWritten(), c == nil || !c.inExec)
	if later == nil {
		return now, nil, nil
	}
	return now, func(gone <-chan struct{}) int {
		n.blocked.Add(1) // blocked_clients, as Redis counts a blocked WAIT
		defer n.blocked.Add(-1)
		return later(gone)
	}, nil
}

// KillPrimaryLink cuts a replica's link to its primary.
func (n *Node) KillPrimaryLink() int {
	if n.repl == nil {
		return 0
	}
	return n.repl.KillPrimary()
}

// KillReplicaLinks cuts the links of this node's replicas.
func (n *Node) KillReplicaLinks() int {
	if n.repl == nil {
		return 0
	}
	return n.repl.KillReplicas()
}

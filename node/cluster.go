package node

import (
	"time"

	"github.com/rlserver/rlserver/cluster"
	"github.com/rlserver/rlserver/commands"
	"github.com/rlserver/rlserver/engine"
	"github.com/rlserver/rlserver/replication"
)

// Cluster is the node's view of the cluster, nil outside cluster mode.
func (n *Node) Cluster() *cluster.Cluster { return n.cluster }

// route applies the cluster's checks to a keyed command, in Redis's
// order (docs/cluster.md, "Routing"): the first key's slot unowned is
// CLUSTERDOWN; keys of two slots, CROSSSLOT; then the slot is served here
// or the client is redirected. EXEC checks its whole queue at once; a
// keyless command passes.
func (n *Node) route(c *Client, cmd *commands.Command, args [][]byte) commands.Error {
	if cmd.FirstKey > 0 && cmd.FirstKey == cmd.LastKey && cmd.NextKey == nil && len(args) > cmd.FirstKey {
		// One key, the limiters' case: its slot's verdict says it all.
		slot := cluster.Slot(args[cmd.FirstKey])
		return n.verdict(slot, c.ReadOnlyCluster() && !writes(cmd, args))
	}
	r := slotCheck{n: n, slot: -1}
	if cmd.Has(commands.FlagTxnControl) && cmd.FirstKey == 0 { // not WATCH, routed by its keys
		if cmd.Name != "exec" || !c.InMulti() {
			return ""
		}
		for _, q := range c.Queued() {
			qc := n.table.Lookup(q[0])
			if qc != nil && qc.Sub != nil && len(q) > 1 {
				qc = commands.Table(qc.Sub).Lookup(q[1])
			}
			if qc != nil && r.check(qc, q) {
				break
			}
		}
	} else if cmd.FirstKey > 0 {
		r.check(cmd, args)
	}
	if r.err != "" || r.slot < 0 {
		return r.err
	}
	return n.verdict(r.slot, c.ReadOnlyCluster() && !r.write)
}

// writes reports whether a call changes state: a write command other
// than a peek (a limiter call of cost 0).
func writes(cmd *commands.Command, args [][]byte) bool {
	return cmd.Has(commands.FlagWrite) && (cmd.Peek == nil || !cmd.Peek(args))
}

// slotCheck gathers the slot of a request's keys, over one command or
// EXEC's queue: the first key's, unless a check fails first (err).
type slotCheck struct {
	n     *Node
	slot  int // -1 until a key is seen
	write bool
	err   commands.Error
}

// check adds one command's keys; it reports whether the request is
// refused already.
func (r *slotCheck) check(cmd *commands.Command, args [][]byte) bool {
	cmd.KeyPositions(args, func(i int) {
		if r.err != "" {
			return
		}
		s := cluster.Slot(args[i])
		switch {
		case r.slot < 0:
			r.slot = s
			if v, _ := r.n.cluster.Route(s, false); v == cluster.Down {
				r.err = commands.ErrClusterDown
			}
		case s != r.slot:
			r.err = commands.ErrCrossSlot
		}
	})
	r.write = r.write || cmd.FirstKey > 0 && writes(cmd, args)
	return r.err != ""
}

// verdict is the routing answer for slot: "" when it is decided here.
func (n *Node) verdict(slot int, readOK bool) commands.Error {
	v, addr := n.cluster.Route(slot, readOK)
	switch v {
	case cluster.Serve:
		return ""
	case cluster.Moved:
		n.cluster.Refused()
		return commands.ErrMoved(slot, addr)
	case cluster.Ask:
		return commands.ErrAsk(slot, addr)
	case cluster.TryAgain:
		return commands.ErrTryAgain
	}
	return commands.ErrClusterDown
}

// ClusterHandOff gives slots to the node with id (CLUSTER HANDOFF): from
// now on their requests are sent there; once every command already past
// its routing check has ended, their keys are taken out of the keyspace
// (and so out of the replicas' and the snapshots') and returned, encoded
// with this node's clock reading, for the new owner to install.
func (n *Node) ClusterHandOff(s *commands.Session, id string, slots *[cluster.Slots]bool) ([]byte, error) {
	if n.cluster == nil {
		return nil, commands.ErrClusterOff
	}
	if err := n.cluster.Give(id, slots); err != nil {
		return nil, err
	}
	n.drain(s.ID)
	now := n.clock.Now()
	recs := n.engine.Take(now, func(k []byte) bool { return slots[cluster.Slot(k)] })
	n.tellReplication(nil)
	n.log.Info("cluster slots handed over", "to", id, "keys", len(recs))
	// The receiver's clock rises to the reading sent, which covers every
	// lease token issued here (engine/lease.go).
	return replication.EncodeRecords(max(now, n.engine.TokenHigh()), recs), nil
}

// drain waits until every command that was running when it was called,
// on any client but self, has ended: each client's in-flight count moves
// on from the odd value it had. Exec counts every keyed command in
// cluster mode (a slot handoff's wait), else every write (a FAILOVER's).
// A client settling (CLIENT PAUSE's own drain) runs nothing and is not
// waited for.
func (n *Node) drain(self int64) {
	type busy struct {
		c   *Client
		seq uint64
	}
	var wait []busy
	n.clientsMu.Lock()
	for id, c := range n.clients {
		if q := c.seq.Load(); id != self && q&1 == 1 {
			wait = append(wait, busy{c, q})
		}
	}
	n.clientsMu.Unlock()
	for _, b := range wait {
		for b.c.seq.Load() == b.seq && !b.c.settling.Load() {
			time.Sleep(20 * time.Microsecond)
		}
	}
}

// raiser is a clock that can be moved forward (clock.Timeline).
type raiser interface{ Raise(p int64) }

// ImportSlots installs the records another shard handed over for slots
// (cluster.Options.Import): the clock moves up to the sender's reading,
// any key of the slots held here is dropped, the records are applied
// (reaching the replicas and the snapshots), and, with persistence on, a
// snapshot is written before the slots are served.
func (n *Node) ImportSlots(slots *[cluster.Slots]bool, payload []byte) error {
	if n.repl != nil && n.repl.IsReplica() {
		// Demoted while the records were on their way: a replica's
		// keyspace is its primary's, and another shard's records would
		// make it differ. The import fails (its source keeps answering
		// ASK for the slots until the next try, which only a primary makes).
		return cluster.ErrNotPrimary
	}
	var recs []engine.Record
	src, err := replication.DecodeRecords(payload, func(r engine.Record) error {
		recs = append(recs, r)
		return nil
	})
	if err != nil {
		return err
	}
	if r, ok := n.clock.(raiser); ok {
		r.Raise(src)
	}
	now := n.clock.Now()
	n.engine.Take(now, func(k []byte) bool { return slots[cluster.Slot(k)] })
	for _, r := range recs {
		n.engine.Apply(r, now)
	}
	n.tellReplication(nil)
	if n.snap != nil {
		if err := n.snap.Save(); err != nil {
			n.log.Error("snapshot after a slot import failed", "err", err)
		}
	}
	return nil
}

package node

import (
	"runtime"
	"time"

	"github.com/rlserver/rlserver/commands"
	"github.com/rlserver/rlserver/engine"
	"github.com/rlserver/rlserver/internal/proc"
)

// Observed is what the metrics endpoint reads of the node, each value
// from the counters the node keeps anyway (docs/protocol.md,
// "Observability"): nothing on the hot path counts twice for it.
type Observed struct {
	Commands  []CommandObserved
	Decisions [8][nResults]int64 // by kind and result
	Keys      [8]int             // by kind
	Clients   int
	// Memory in bytes by kind: keyspace (held outside the Go heap),
	// records, garbage, go_heap, rss.
	Memory map[string]int64
	// Snapshots: on at all; the last one's duration, the last good
	// one's Unix time (s), failures since start.
	Snapshots         bool
	SnapshotDuration  time.Duration
	LastSnapshotUnix  int64
	SnapshotErrors    int64
	ClockOffset       time.Duration
	ReplOffset        int64
	ReplLag           time.Duration // -1: a replica whose link is down
	ConnectedReplicas int
	TopRejected       []commands.TopEntry
	Leases            engine.LeaseStats

	// ReplRefusedUnits and ReplFailedSyncs: a replica's links dropped
	// for a unit of its primary's stream it refused, and its full syncs
	// that failed, since the start.
	ReplRefusedUnits, ReplFailedSyncs int64
	// ACLDenied counts the refusals of the users' rules and the failed
	// logins (the ACL log's entries, each counted), by reason: auth,
	// command, key, channel.
	ACLDenied map[string]int64
}

// CommandObserved is one command's counts and latency histogram.
type CommandObserved struct {
	Name                    string
	Calls, Rejected, Failed int64
	Nanos                   int64
	Buckets                 []int64 // nil: never called; bounds from HistUpper
}

// KindName is the metrics label of a kind ("" for none).
func KindName(k int) string { return kindNames[k] }

// ResultName is the metrics label of a decision result.
func ResultName(r int) string { return resultNames[r] }

// Observe reads what the metrics endpoint exports; top is how many of
// the most rejected keys to include.
func (n *Node) Observe(top int) Observed {
	o := Observed{Decisions: n.Decisions(), Clients: n.connectedClients(), Leases: n.engine.LeaseStats(), ACLDenied: n.ACLDenied()}
	st := n.engine.Store()
	o.Keys = st.Kinds()
	for _, c := range n.table.All() {
		t := n.perCmd[c.Index].totals()
		b := n.buckets(c.Index)
		if t[nCalls]+t[nRejected] == 0 && b == nil {
			continue
		}
		o.Commands = append(o.Commands, CommandObserved{Name: c.Name, Calls: t[nCalls], Rejected: t[nRejected],
			Failed: t[nFailed], Nanos: t[nNs], Buckets: b})
	}
	var m runtime.MemStats
	runtime.ReadMemStats(&m)
	ks := st.Memory()
	o.Memory = map[string]int64{"keyspace": ks.Held, "records": ks.Records, "garbage": ks.Garbage,
		"go_heap": int64(m.HeapAlloc), "rss": proc.RSS()}
	if n.snap != nil {
		i := n.snap.Info()
		o.Snapshots, o.SnapshotDuration, o.LastSnapshotUnix, o.SnapshotErrors = true, i.LastDuration, i.LastSaveUnix, i.Errors
	}
	o.ClockOffset = time.Duration(n.clockOffset(n.clock.Now()))
	if n.repl != nil {
		o.ReplOffset, o.ReplLag, o.ConnectedReplicas = n.repl.Lag()
		o.ReplRefusedUnits, o.ReplFailedSyncs = n.repl.Failures()
	}
	if top > 0 {
		o.TopRejected = n.TopRejected(top)
	}
	return o
}

// clockOffset is the server clock, read at now, minus the wall clock, in
// ns: against the wall clock a real clock follows (its own reading of
// it), else against the system's.
func (n *Node) clockOffset(now int64) int64 {
	if o, ok := n.clock.(interface{ Offset() int64 }); ok {
		return o.Offset()
	}
	if o, ok := n.clock.(interface{ Offset() (int64, bool) }); ok {
		if off, ok := o.Offset(); ok {
			return off
		}
	}
	return now - time.Now().UnixNano()
}

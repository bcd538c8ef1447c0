package node

import (
	"context"
	"fmt"
	"runtime/metrics"
	"time"

	"github.com/rlserver/rlserver/engine"
	"github.com/rlserver/rlserver/internal/ascii"
)

// Memory pressure (docs/protocol.md, "Memory"): every few milliseconds
// the node adds up its memory, the keyspace outside the Go heap and the
// Go heap's live objects (INFO's used_memory, without stopping the
// world), and tells the engine whether it is over --maxmemory; the
// engine then refuses or makes room for new keys (engine/maxmemory.go).

// policyNames are --maxmemory-policy's values, Redis's names.
var policyNames = map[string]engine.EvictPolicy{"noeviction": engine.NoEviction, "volatile-ttl": engine.VolatileTTL}

// ParsePolicy parses a --maxmemory-policy value.
func ParsePolicy(v string) (engine.EvictPolicy, error) {
	p, ok := policyNames[ascii.Lower(v)]
	if !ok {
		return 0, fmt.Errorf("maxmemory-policy must be noeviction or volatile-ttl, got %q", v)
	}
	return p, nil
}

// policyName is the name of p.
func policyName(p engine.EvictPolicy) string {
	for name, q := range policyNames {
		if q == p {
			return name
		}
	}
	return "noeviction"
}

// usedMemory is the node's memory for maxmemory: the keyspace held
// outside the Go heap plus the Go heap's objects, in bytes.
func (n *Node) usedMemory() int64 {
	s := []metrics.Sample{{Name: "/memory/classes/heap/objects:bytes"}}
	metrics.Read(s)
	heap := int64(0)
	if s[0].Value.Kind() == metrics.KindUint64 {
		heap = int64(s[0].Value.Uint64())
	}
	return heap + n.engine.Store().Memory().Held
}

// RunMaxMemory checks the node's memory against maxmemory every interval
// until ctx ends, while there is a maxmemory; without one it sleeps until
// CONFIG SET gives one (an idle node wakes for nothing).
func (n *Node) RunMaxMemory(ctx context.Context, interval time.Duration) {
	t := time.NewTimer(0)
	defer t.Stop()
	for {
		select {
		case <-ctx.Done():
			return
		case <-t.C:
		case <-n.maxMemorySet:
		}
		max := n.maxMemory.Load()
		n.engine.SetFull(max > 0 && n.usedMemory() > max)
		if max > 0 {
			t.Reset(interval)
		} else {
			t.Stop()
		}
	}
}

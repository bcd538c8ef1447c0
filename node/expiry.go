package node

import (
	"context"
	"time"

	"github.com/rlserver/rlserver/clock"
)

// RunExpiry drops expired keys in the background every interval until ctx
// is done, counting them for INFO stats (expired_keys).
func (n *Node) RunExpiry(ctx context.Context, interval time.Duration) {
	counted := func(k int) { n.stats.expiredKeys.Add(int64(k)) }
	clock.Every(ctx, interval, func() {
		st := n.engine.SweepCounting(n.clock.Now(), counted)
		if st.Expired > 0 {
			n.tellReplication(nil) // the replicas drop them now, not at the pump's next tick
		}
		for h := int64(st.LongestHold); ; {
			if old := n.stats.expireHold.Load(); h <= old || n.stats.expireHold.CompareAndSwap(old, h) {
				break // (a CONFIG RESETSTAT in between is not overwritten)
			}
		}
	})
}

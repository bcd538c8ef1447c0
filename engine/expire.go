package engine

// sweepChunk is how many slab slots one sweep step examines under a shard
// lock; it bounds how long a request can wait behind the sweeper.
const sweepChunk = 1024

// sweepCursor remembers where each shard's sweep stopped (index by shard).
type sweeper struct {
	cursor []int
}

// SweepStats counts what one sweep pass did.
type SweepStats struct {
	Examined, Expired int
}

// Sweep drops expired keys, Redis style: per shard it examines chunks of
// slots from where it last stopped, and moves on to the next chunk only
// while more than a quarter of the chunk had expired, so an idle keyspace
// costs little and a mass expiry is reclaimed quickly. Shards left mostly
// empty are compacted so their memory is returned.
func (e *Engine) Sweep(now int64) SweepStats {
	var st SweepStats
	for si, s := range e.shards {
		start := e.sweep.cursor[si]
		for scanned := 0; ; {
			s.mu.Lock()
			if e.sweep.cursor[si] >= len(s.slab) {
				e.sweep.cursor[si] = 0
			}
			c := e.sweep.cursor[si]
			end := min(c+sweepChunk, len(s.slab))
			expired := 0
			for i := c; i < end; i++ {
				en := &s.slab[i]
				if en.kind != KindNone && !en.alive(now) {
					s.removeLocked(uint32(i))
					expired++
				}
			}
			st.Examined += end - c
			st.Expired += expired
			scanned += end - c
			e.sweep.cursor[si] = end
			wrapped := end >= len(s.slab) || (c < start && end >= start)
			if wrapped || scanned >= len(s.slab) || expired*4 <= end-c {
				s.compactLocked()
				if e.sweep.cursor[si] > len(s.slab) {
					e.sweep.cursor[si] = 0
				}
				s.mu.Unlock()
				break
			}
			s.mu.Unlock()
		}
	}
	return st
}

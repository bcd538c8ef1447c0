package engine

import "runtime"

// sweepChunk is how many records one sweep step examines under a shard
// lock; it bounds how long a request can wait behind the sweeper.
const sweepChunk = 1024

// sweeper remembers where each shard's sweep stopped: a record offset in
// the shard's data region (index by shard).
type sweeper struct {
	cursor []int
	epoch  []uint64 // the shard's epoch the cursor belongs to
}

// SweepStats counts what one sweep pass did.
type SweepStats struct {
	Examined, Expired int
}

// Sweep drops expired keys, Redis style: per shard it examines chunks of
// records from where it last stopped, and moves on to the next chunk only
// while more than a quarter of the chunk had expired, so an idle keyspace
// costs little and a mass expiry is reclaimed quickly. Shards left mostly
// garbage or empty are compacted so their memory is returned.
func (e *Engine) Sweep(now int64) SweepStats {
	var st SweepStats
	for si, s := range e.shards {
		scanned := 0
		for {
			s.mu.Lock()
			size := len(s.data)
			off := e.sweep.cursor[si]
			if off >= size || e.sweep.epoch[si] != s.epoch {
				off = 0
			}
			examined, expired := 0, 0
			for ; off < size && examined < sweepChunk; examined++ {
				p := parseRecord(s.data, off)
				if p.hdr&hdrDead == 0 && !p.e.alive(now) {
					s.removeLocked(off, tagOf(s.hash(p.key)))
					expired++
				}
				off = p.end
			}
			e.sweep.cursor[si], e.sweep.epoch[si] = off, s.epoch
			st.Examined += examined
			st.Expired += expired
			scanned += examined
			if off >= size || scanned >= s.count+examined || expired*4 <= examined {
				s.maybeCompactLocked()
				s.mu.Unlock()
				break
			}
			s.mu.Unlock()
			// Let requests run between chunks: on one P (GOMAXPROCS=1) a
			// long mass expiry would otherwise hold the CPU until the Go
			// scheduler preempts it, 10 ms later, and show in the p99.
			runtime.Gosched()
		}
	}
	return st
}

package engine

import (
	"runtime"
	"time"
)

// sweepChunk is how many records one sweep step examines under a shard
// lock: small steps bound how long a request can wait behind the sweeper.
// sweepMinBytes is how many bytes of live records a pass examines in each
// shard at least (more while a quarter of them had expired). A floor in
// bytes follows the memory the sweep is there to reclaim: some 1,000
// records of 31-40 bytes (a limiter of words, a key of 17-20 bytes), and a
// step or two of full RL.LOG logs of some 450 bytes, each of which costs a
// cache miss to pass over.
const (
	sweepChunk    = 64
	sweepMinBytes = 32 << 10
)

// migrateStep is how many slots of an old table (growing or shrinking) the
// sweep moves over under one hold of the shard lock.
const migrateStep = 1024

// SweepStats counts what one sweep pass did.
type SweepStats struct {
	Examined, Expired int
	// LongestHold is the longest the pass held one shard's lock at a
	// time: what a request on that shard could have waited behind it.
	LongestHold time.Duration
}

// Sweep drops expired keys, Redis style: per shard it examines chunks of
// records from where it last stopped, and goes on past sweepMinBytes of
// live records only while more than a quarter of a chunk's live records had
// expired, so an idle keyspace costs little and a mass expiry is reclaimed
// quickly. It
// finishes moving a table that is growing and compacts a shard an eighth
// garbage, in steps, then moves a table left mostly empty into a smaller
// one, in steps too. It yields the processor between steps: on one P
// (GOMAXPROCS=1) requests run between them instead of waiting for the Go
// scheduler to preempt the sweep 10 ms later. Sweep must not run
// concurrently with itself.
func (e *Engine) Sweep(now int64) SweepStats { return e.SweepCounting(now, nil) }

// SweepCounting is Sweep that also tells onExpired, if not nil, how many
// keys each step dropped, while the step still holds the shard's lock:
// a count kept with it (INFO's expired_keys) never lags the keys gone,
// where the pass's total arrives only once every shard was swept.
func (e *Engine) SweepCounting(now int64, onExpired func(n int)) SweepStats {
	var st SweepStats
	for _, s := range e.shards {
		var hold time.Duration // the pass's longest step in this shard
		steps := func(step func() (more bool)) { hold = max(hold, s.inSteps(step)) }
		scanned, keys := 0, -1 // live records seen this pass; keys when it began
		scannedBytes := 0      // and their bytes
		steps(func() bool {
			if keys < 0 {
				keys = s.count
			}
			size := len(s.data)
			off := s.sweepAt
			if off >= size {
				off = 0
			}
			examined, live, expired := 0, 0, 0
			s.decisionTimeLocked(now) // see lookupLocked
			for ; off < size && examined < sweepChunk; examined++ {
				p := parseRecord(s.data, off)
				if p.hdr&hdrDead == 0 {
					live++
					scannedBytes += p.end - off
					if !p.e.alive(now) {
						if f := e.changed.Load(); f != nil {
							(*f)(p.key)
						}
						s.droppedLocked(p.e)
						s.removeLocked(off, tagOf(s.hash(p.key)))
						expired++
					}
				}
				off = p.end
			}
			s.sweepAt = off
			st.Examined += examined
			st.Expired += expired
			if onExpired != nil && expired > 0 {
				onExpired(expired)
			}
			scanned += live
			// Live records decide: dead ones (garbage awaiting compaction)
			// say nothing about expiry, and a chunk of nothing but garbage
			// is passed over. A pass sees each key at most once.
			return off < size && scanned < keys && (scannedBytes < sweepMinBytes || live == 0 || expired*4 > live)
		})
		// A table moving in steps (growing, or shrinking): move the rest.
		move := func() bool {
			if s.old != nil {
				s.migrateLocked(migrateStep)
			}
			return s.old != nil
		}
		steps(move)
		steps(func() bool {
			return (s.compacting || s.wastefulLocked()) && !s.compactStepLocked(compactStep)
		})
		steps(func() bool { return s.releaseStepLocked(releaseStep) })
		// A table left mostly empty (keys went) moves into a smaller one,
		// and the region is cut to fit, once the compaction above has run.
		steps(func() bool {
			if s.sparseLocked() && !s.compacting && s.old == nil && e.filling.Load() == 0 {
				if s.garbage > 0 {
					s.compactInPlaceLocked() // records that died since: little
				}
				s.shrinkLocked()
			}
			return false
		})
		runtime.Gosched()
		steps(move)
		s.freeRetired()
		st.LongestHold = max(st.LongestHold, hold)
		runtime.Gosched()
	}
	return st
}

// inSteps runs step under the shard lock, again while it reports more to
// do, yielding the processor between steps with the lock released. It
// returns the longest step, lock wait excluded.
func (s *shard) inSteps(step func() (more bool)) (longest time.Duration) {
	for {
		s.mu.Lock()
		t0 := time.Now()
		more := step()
		longest = max(longest, time.Since(t0))
		s.mu.Unlock()
		if !more {
			return longest
		}
		runtime.Gosched()
	}
}

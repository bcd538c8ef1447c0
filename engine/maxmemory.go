package engine

import (
	"errors"
	"sync/atomic"
)

// Memory pressure (docs/protocol.md, "Memory"): when the node's memory
// passes its maxmemory, the engine is told it is full (SetFull). A full
// engine creates no key under the noeviction policy (ErrOOM; a peek is
// answered without storing the fresh key), and under volatile-ttl makes
// room first by evicting the key closest to its reset among a sample of
// the shard's keys: the one whose state matters least. Keys that exist
// keep working either way, so a limit already counting is never lost
// to the pressure under noeviction.

// ErrOOM refuses a new key while the engine is full under noeviction.
var ErrOOM = errors.New("engine: out of memory")

// EvictPolicy is what a full engine does with a new key.
type EvictPolicy int32

// The policies, Redis's names.
const (
	NoEviction  EvictPolicy = iota // refuse new keys
	VolatileTTL                    // evict the key nearest its deadline
)

// evictSample is how many of a shard's keys an eviction compares: Redis
// samples 5; a few more costs little in one shard's region and picks
// a key nearer the true minimum.
const evictSample = 16

// pressure is the engine's memory state.
type pressure struct {
	full    atomic.Bool
	policy  atomic.Int32
	evicted atomic.Int64
}

// SetFull tells the engine whether the node is over its maxmemory.
func (e *Engine) SetFull(full bool) { e.mem.full.Store(full) }

// SetEvictPolicy sets what a full engine does with new keys.
func (e *Engine) SetEvictPolicy(p EvictPolicy) { e.mem.policy.Store(int32(p)) }

// EvictPolicy is the policy SetEvictPolicy set.
func (e *Engine) EvictPolicy() EvictPolicy { return EvictPolicy(e.mem.policy.Load()) }

// Evicted counts the keys evicted for memory since the start.
func (e *Engine) Evicted() int64 { return e.mem.evicted.Load() }

// ResetEvicted zeroes Evicted (CONFIG RESETSTAT).
func (e *Engine) ResetEvicted() { e.mem.evicted.Store(0) }

// roomLocked decides whether s may add a new key now: nil if it may
// (under volatile-ttl after evicting one), ErrOOM if not.
func (st Store) roomLocked(s *shard, now int64) error {
	if !st.e.mem.full.Load() {
		return nil
	}
	if EvictPolicy(st.e.mem.policy.Load()) == NoEviction {
		return ErrOOM
	}
	if s.evictLocked(now, st.e.changed.Load()) {
		st.e.mem.evicted.Add(1)
	}
	return nil
}

// full reports whether a new key would be refused (a peek then stores
// nothing).
func (st Store) full() bool {
	return st.e.mem.full.Load() && EvictPolicy(st.e.mem.policy.Load()) == NoEviction
}

// evictLocked removes, of up to evictSample live records from where the
// previous eviction (or the expiry sweep) stopped, the one with the
// earliest deadline (an expired one at once). A lease key is never
// evicted while a lease lives: its slots would come back before their
// leases end, and more would be in flight than its limit. Nor is a key
// with reservations in line: new calls would act before them, and more
// than the limit would act in their window. It reports whether it
// removed one.
func (s *shard) evictLocked(now int64, changed *func(key []byte)) bool {
	if len(s.data) == 0 {
		return false
	}
	best, bestDl, seen := -1, int64(0), 0
	off := s.sweepAt
	if off >= len(s.data) {
		off = 0
	}
	for wrapped := false; seen < evictSample; {
		if off >= len(s.data) {
			if wrapped {
				break
			}
			off, wrapped = 0, true
		}
		p := parseRecord(s.data, off)
		if p.hdr&hdrDead == 0 {
			seen++
			if p.e.kind == KindLease && p.e.alive(now) || p.inLine(now) {
				off = p.end
				continue
			}
			if best < 0 || p.e.deadline < bestDl {
				best, bestDl = off, p.e.deadline
			}
			if !p.e.alive(now) {
				break
			}
		}
		off = p.end
	}
	s.sweepAt = off
	if best < 0 {
		return false
	}
	p := parseRecord(s.data, best)
	if changed != nil {
		(*changed)(p.key)
	}
	s.removeLocked(best, tagOf(s.hash(p.key)))
	return true
}

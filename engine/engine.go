package engine

import (
	"errors"
	"hash/maphash"
	"math/bits"
	"sync"
	"sync/atomic"
	"unsafe"
)

// Kind is the algorithm a key holds. A key holds one kind for its life;
// another algorithm's command on it answers ErrWrongType.
type Kind uint8

// The kinds of key. KindNone is "no such key".
const (
	KindNone Kind = iota
	KindThrottle
	KindFixed
	KindLog
	KindSlide
	KindBucket
)

// TypeName is the name TYPE answers: "string" for CL.THROTTLE keys (as in
// redis-cell, where they are Redis strings), the algorithm's name for RL.*
// keys, "none" for a missing key.
func (k Kind) TypeName() string {
	switch k {
	case KindThrottle:
		return "string"
	case KindFixed:
		return "fixed"
	case KindLog:
		return "log"
	case KindSlide:
		return "slide"
	case KindBucket:
		return "bucket"
	}
	return "none"
}

// ErrWrongType: the key holds another algorithm's state.
var ErrWrongType = errors.New("engine: wrong kind of value")

// never is the deadline of a key without expiry.
const never = int64(1<<63 - 1)

// entry is one key's state. deadline is the first Unix ns at which the key
// no longer exists (alive iff now < deadline); a, b, c are the algorithm's
// state words (CL.THROTTLE: a = TAT as uint64 bits; RL.LOG: a = units
// held, b = slot of its log in the shard's logs).
type entry struct {
	deadline int64
	a, b, c  int64
	keyOff   uint32 // the key's bytes: arena[keyOff : keyOff+keyLen]
	keyLen   uint32
	tag      uint32 // low 32 bits of the key's hash: its slot in the table
	kind     Kind
	dirty    bool // changed since the last Changes call (only while tracking)
}

func (e *entry) alive(now int64) bool { return now < e.deadline }

// shard is one slice of the keyspace: a table (table.go) from keys to
// indexes in a slab of entries, so updating an existing key neither
// allocates nor rehashes.
type shard struct {
	mu      sync.Mutex
	slots   []uint64 // the key table
	count   int      // keys in the table
	arena   []byte   // key bytes
	garbage int      // arena bytes of removed keys
	slab    []entry
	free    []uint32
	// logs holds RL.LOG entries by slot (entry.b); logFree lists free slots.
	logs    [][]int64
	logFree []int64
	// Change tracking for snapshots (only when track is set): slots
	// changed and keys deleted since the last Changes call, and whether
	// the shard was flushed meanwhile.
	track   bool
	pending *atomic.Int64 // the engine's count of len(dirty)+len(deleted) over all shards
	dirty   []uint32
	deleted []string
	flushed bool
	peak    int // most keys held since the last compaction
	_       [64]byte
}

func newShard() *shard { return &shard{} }

// lookupLocked returns the slab index of a live key (hash h), dropping it
// first if it has expired (lazy expiry).
func (s *shard) lookupLocked(h uint64, key []byte, now int64) (uint32, bool) {
	i, ok := s.findLocked(h, key)
	if !ok {
		return 0, false
	}
	if !s.slab[i].alive(now) {
		s.removeLocked(i)
		return 0, false
	}
	return i, true
}

func (s *shard) insertLocked(h uint64, key []byte, e entry) uint32 {
	e.keyOff, e.keyLen, e.tag = uint32(len(s.arena)), uint32(len(key)), uint32(h)
	s.arena = append(s.arena, key...)
	var i uint32
	if n := len(s.free); n > 0 {
		i = s.free[n-1]
		s.free = s.free[:n-1]
		s.slab[i] = e
	} else {
		i = uint32(len(s.slab))
		s.slab = append(s.slab, e)
	}
	s.placeLocked(e.tag, i)
	if s.count > s.peak {
		s.peak = s.count
	}
	return i
}

// putLocked stores e at slot i (exists) or at a new slot for key, and
// returns the slot. It frees a log the new state no longer uses and marks
// the slot changed.
func (s *shard) putLocked(i uint32, exists bool, h uint64, key []byte, e entry) uint32 {
	if exists {
		old := s.slab[i]
		if old.kind == KindLog && (e.kind != KindLog || e.b != old.b) {
			s.freeLogLocked(old.b)
		}
		e.keyOff, e.keyLen, e.tag = old.keyOff, old.keyLen, old.tag
		s.slab[i] = e
	} else {
		i = s.insertLocked(h, key, e)
	}
	if s.track && !s.slab[i].dirty {
		s.slab[i].dirty = true
		s.dirty = append(s.dirty, i)
		s.pending.Add(1)
	}
	return i
}

func (s *shard) removeLocked(i uint32) {
	if s.slab[i].kind == KindLog {
		s.freeLogLocked(s.slab[i].b)
	}
	if s.track {
		s.deleted = append(s.deleted, string(s.keyLocked(i)))
		s.pending.Add(1)
	}
	s.unplaceLocked(s.slab[i].tag, i)
	s.garbage += int(s.slab[i].keyLen)
	s.slab[i] = entry{}
	s.free = append(s.free, i)
}

// compactLocked rebuilds the table, slab and arena when most of what they
// hold is free or garbage, so memory comes back after traffic stops.
func (s *shard) compactLocked() {
	n := s.count
	sparse := s.peak >= 1024 && n <= s.peak/4
	wasteful := s.garbage >= 64<<10 && s.garbage > len(s.arena)/2
	if !sparse && !wasteful {
		return
	}
	slab := make([]entry, 0, n)
	arena := make([]byte, 0, len(s.arena)-s.garbage)
	var logs [][]int64
	for i := range s.slab {
		e := s.slab[i]
		if e.kind == KindNone {
			continue
		}
		if e.kind == KindLog {
			logs = append(logs, s.logs[e.b])
			e.b = int64(len(logs) - 1)
		}
		key := s.arena[e.keyOff : e.keyOff+e.keyLen]
		e.keyOff = uint32(len(arena))
		arena = append(arena, key...)
		slab = append(slab, e)
	}
	s.slab, s.arena, s.garbage, s.free, s.peak = slab, arena, 0, nil, n
	s.slots, s.count = make([]uint64, slotsFor(n)), 0
	for i := range s.slab {
		s.placeLocked(s.slab[i].tag, uint32(i))
	}
	s.logs, s.logFree = logs, nil
	if s.track {
		before := len(s.dirty)
		s.dirty = s.dirty[:0]
		for i := range s.slab {
			if s.slab[i].dirty {
				s.dirty = append(s.dirty, uint32(i))
			}
		}
		s.pending.Add(int64(len(s.dirty) - before))
	}
}

func (s *shard) newLogLocked() int64 {
	if n := len(s.logFree); n > 0 {
		slot := s.logFree[n-1]
		s.logFree = s.logFree[:n-1]
		return slot
	}
	s.logs = append(s.logs, nil)
	return int64(len(s.logs) - 1)
}

func (s *shard) freeLogLocked(slot int64) {
	s.logs[slot] = nil
	s.logFree = append(s.logFree, slot)
}

// Engine is the sharded keyspace. It is safe for concurrent use; each
// operation on a key locks only that key's shard.
type Engine struct {
	shards []*shard
	mask   uint64
	seed   maphash.Seed
	sweep  sweeper // used only by Sweep, which must not run concurrently with itself
	// pending counts tracked changes not yet taken by Changes (all shards).
	pending atomic.Int64
}

// New returns an engine with n shards; n is rounded up to a power of two
// (at least 1).
func New(n int) *Engine {
	if n < 1 {
		n = 1
	}
	n = 1 << bits.Len(uint(n-1))
	e := &Engine{shards: make([]*shard, n), mask: uint64(n - 1), seed: maphash.MakeSeed()}
	e.sweep.cursor = make([]int, n)
	for i := range e.shards {
		e.shards[i] = newShard()
		e.shards[i].pending = &e.pending
	}
	return e
}

// Shards returns the number of shards.
func (e *Engine) Shards() int { return len(e.shards) }

// shardOf returns key's shard and hash: the hash's top bits pick the
// shard, its low 32 bits the slot in the shard's table.
func (e *Engine) shardOf(key []byte) (*shard, uint64) {
	h := maphash.Bytes(e.seed, key)
	return e.shards[(h>>32)&e.mask], h
}

// Store returns a handle whose every operation locks the shard it needs.
func (e *Engine) Store() Store { return Store{e: e} }

// Atomic runs fn with every shard locked, so the operations fn makes on its
// Store form one atomic step (MULTI/EXEC). Shards are locked in index
// order, so concurrent Atomic calls cannot deadlock. fn must not call
// Engine.Store or Atomic.
func (e *Engine) Atomic(fn func(Store)) {
	for _, s := range e.shards {
		s.mu.Lock()
	}
	defer func() {
		for _, s := range e.shards {
			s.mu.Unlock()
		}
	}()
	fn(Store{e: e, held: true})
}

// Store performs keyspace operations, either locking per operation or,
// inside Atomic, under locks already held. Keys passed in are only read
// during the call; the Store copies what it keeps. Times are Unix ns.
type Store struct {
	e    *Engine
	held bool
}

func (st Store) lock(s *shard) {
	if !st.held {
		s.mu.Lock()
	}
}

func (st Store) unlock(s *shard) {
	if !st.held {
		s.mu.Unlock()
	}
}

// Throttle runs CL.THROTTLE for quantity q on key at now and stores the
// outcome. Errors: ErrWrongType (nothing changed), ErrExpire (the TAT was
// stored without expiry, as redis-cell on Redis 7 leaves it).
func (st Store) Throttle(key []byte, g GCRA, q, now int64) (ThrottleResult, error) {
	s, h := st.e.shardOf(key)
	st.lock(s)
	defer st.unlock(s)
	i, ok := s.lookupLocked(h, key, now)
	var tat uint64
	if ok {
		if s.slab[i].kind != KindThrottle {
			return ThrottleResult{}, ErrWrongType
		}
		tat = uint64(s.slab[i].a)
	}
	d, err := g.Decide(tat, ok, now, q)
	if d.Write {
		s.putLocked(i, ok, h, key, entry{kind: KindThrottle, a: int64(d.NewTAT), deadline: throttleDeadline(now, d.TTLMs)})
	}
	return d.Result, err
}

// throttleDeadline turns a Redis relative TTL in ms into a deadline in ns:
// Redis expires a key when its ms clock is strictly past now_ms + ttl, so
// the key lives through the whole of that last millisecond. ttl -1 and
// below mean no expiry.
func throttleDeadline(now, ttlMs int64) int64 {
	if ttlMs < 0 {
		return never
	}
	return RedisDeadline(now/1_000_000 + ttlMs)
}

// GetThrottle returns the TAT stored at a CL.THROTTLE key. found is false
// for a missing key; ErrWrongType for an RL.* key.
func (st Store) GetThrottle(key []byte, now int64) (tat uint64, found bool, err error) {
	s, h := st.e.shardOf(key)
	st.lock(s)
	defer st.unlock(s)
	i, ok := s.lookupLocked(h, key, now)
	if !ok {
		return 0, false, nil
	}
	if s.slab[i].kind != KindThrottle {
		return 0, true, ErrWrongType
	}
	return uint64(s.slab[i].a), true, nil
}

// SetCondition restricts SetThrottle (SET's NX and XX).
type SetCondition uint8

// SET conditions.
const (
	SetAlways SetCondition = iota
	SetIfMissing
	SetIfExists
)

// SetThrottle stores tat at key as a CL.THROTTLE key (SET), replacing any
// value of any kind. deadline is an absolute ns deadline (0 = no expiry);
// keepTTL keeps the key's current deadline. It reports whether the value
// was written (NX/XX may refuse).
func (st Store) SetThrottle(key []byte, tat uint64, deadline int64, keepTTL bool, cond SetCondition, now int64) bool {
	s, h := st.e.shardOf(key)
	st.lock(s)
	defer st.unlock(s)
	i, ok := s.lookupLocked(h, key, now)
	if (cond == SetIfMissing && ok) || (cond == SetIfExists && !ok) {
		return false
	}
	if deadline == 0 {
		deadline = never
	}
	e := entry{kind: KindThrottle, a: int64(tat), deadline: deadline}
	if ok && keepTTL {
		e.deadline = s.slab[i].deadline
	}
	s.putLocked(i, ok, h, key, e)
	return true
}

// Delete removes key and reports whether it existed.
func (st Store) Delete(key []byte, now int64) bool {
	s, h := st.e.shardOf(key)
	st.lock(s)
	defer st.unlock(s)
	i, ok := s.lookupLocked(h, key, now)
	if ok {
		s.removeLocked(i)
	}
	return ok
}

// Type returns the kind of key, KindNone if it does not exist.
func (st Store) Type(key []byte, now int64) Kind {
	s, h := st.e.shardOf(key)
	st.lock(s)
	defer st.unlock(s)
	i, ok := s.lookupLocked(h, key, now)
	if !ok {
		return KindNone
	}
	return s.slab[i].kind
}

// PTTL returns the key's remaining life in ms as Redis's PTTL does: -2 for
// a missing key, -1 for one without expiry. For CL.THROTTLE keys it is
// Redis's expire_ms - now_ms; for RL.* keys it is reset_after_ms, the time
// until the state is fresh, rounded up.
func (st Store) PTTL(key []byte, now int64) int64 {
	s, h := st.e.shardOf(key)
	st.lock(s)
	defer st.unlock(s)
	i, ok := s.lookupLocked(h, key, now)
	if !ok {
		return -2
	}
	e := s.slab[i]
	if e.deadline == never {
		return -1
	}
	switch e.kind {
	case KindThrottle:
		return ceilDiv(e.deadline-now, 1_000_000) - 1 // deadline is the end of Redis's last live millisecond
	case KindBucket:
		return bucketResetMs(state{e.a, e.b, e.c}, now) // exact even past the ns deadline's range
	}
	return ceilDiv(e.deadline-now, 1_000_000)
}

// deadlineAfter is now + wait, capped below never: a key that becomes fresh
// only centuries from now still expires (in 2262, as far as ns reach).
func deadlineAfter(now, wait int64) int64 { return min(satAdd(now, wait), maxDeadline) }

func ceilDiv(a, b int64) int64 { return (a + b - 1) / b }

// MemoryUsage estimates the bytes key occupies (MEMORY USAGE): key bytes,
// its index slot and its state. 0 and false for a missing key.
func (st Store) MemoryUsage(key []byte, now int64) (int64, bool) {
	s, h := st.e.shardOf(key)
	st.lock(s)
	defer st.unlock(s)
	i, ok := s.lookupLocked(h, key, now)
	if !ok {
		return 0, false
	}
	// The key's bytes, its entry, and its table slot (8 bytes at the
	// table's average load of 1/2).
	n := int64(len(key)) + int64(unsafe.Sizeof(entry{})) + 16
	if e := s.slab[i]; e.kind == KindLog {
		n += 24 + 8*int64(cap(s.logs[e.b]))
	}
	return n, true
}

// Len returns the number of keys held, including expired keys not yet
// dropped (as Redis's DBSIZE does).
func (st Store) Len() int {
	n := 0
	for _, s := range st.e.shards {
		st.lock(s)
		n += s.count
		st.unlock(s)
	}
	return n
}

// Flush removes every key.
func (st Store) Flush() {
	for _, s := range st.e.shards {
		st.lock(s)
		s.slots, s.count, s.arena, s.garbage, s.slab, s.free, s.peak = nil, 0, nil, 0, nil, nil, 0
		s.logs, s.logFree = nil, nil
		if s.track {
			s.pending.Add(-int64(len(s.dirty) + len(s.deleted)))
			s.dirty, s.deleted, s.flushed = s.dirty[:0], nil, true
		}
		st.unlock(s)
	}
}

// KeyInfo describes one key for Keys and Scan callbacks.
type KeyInfo struct {
	Key  string
	Kind Kind
}

// ScanShard calls fn for every live key of shard i (0 <= i < Shards()).
// fn runs under the shard lock and must not call the Store.
func (st Store) ScanShard(i int, now int64, fn func(KeyInfo)) {
	s := st.e.shards[i]
	st.lock(s)
	defer st.unlock(s)
	for i := range s.slab {
		if e := s.slab[i]; e.kind != KindNone && e.alive(now) {
			fn(KeyInfo{Key: string(s.keyLocked(uint32(i))), Kind: e.kind})
		}
	}
}

// RedisDeadline converts a Redis absolute expiry in ms (the key lives while
// the ms clock is <= expMs) to a deadline in ns.
func RedisDeadline(expMs int64) int64 {
	if expMs >= maxDeadline/1_000_000 {
		return maxDeadline
	}
	if expMs < 0 {
		return 1 // long past; never 0, which SetThrottle reads as "no expiry"
	}
	return (expMs + 1) * 1_000_000
}

// ScanSlots calls fn for live keys of shard i starting at slab slot from,
// visiting at most count live keys, and returns the slot to resume at, or
// -1 when the shard is exhausted. fn runs under the shard lock and must
// not call the Store.
func (st Store) ScanSlots(i, from, count int, now int64, fn func(KeyInfo)) int {
	s := st.e.shards[i]
	st.lock(s)
	defer st.unlock(s)
	n := 0
	for j := from; j < len(s.slab); j++ {
		if n >= count {
			return j
		}
		e := s.slab[j]
		if e.kind != KindNone && e.alive(now) {
			fn(KeyInfo{Key: string(s.keyLocked(uint32(j))), Kind: e.kind})
			n++
		}
	}
	return -1
}

// Limit runs the RL.* algorithm kind (KindFixed, KindLog, KindSlide,
// KindBucket) for key at now and stores the outcome: a rejected request or
// a cost-0 peek changes nothing visible, and a key whose state becomes
// fresh is dropped. ErrWrongType if the key holds another kind.
func (st Store) Limit(kind Kind, key []byte, p Params, now int64) (Result, error) {
	s, h := st.e.shardOf(key)
	st.lock(s)
	defer st.unlock(s)
	i, ok := s.lookupLocked(h, key, now)
	var cur state
	if ok {
		e := &s.slab[i]
		if e.kind != kind {
			return Result{}, ErrWrongType
		}
		cur = state{e.a, e.b, e.c}
	}
	var r Result
	written := false
	switch kind {
	case KindLog:
		var entries []int64
		if ok {
			entries = s.logs[cur.b]
		}
		// Only an admission stores the log: a rejected call or a peek
		// leaves it exactly as it was (even the entries it found expired
		// under its own window, which a later, longer window may count).
		entries, total, res := logDecide(p, entries, cur.a, now)
		r = res
		if !r.Limited && p.Cost > 0 {
			if !ok {
				cur.b = s.newLogLocked()
			}
			s.logs[cur.b] = entries
			s.putLocked(i, ok, h, key, entry{kind: KindLog, a: total, b: cur.b, deadline: deadlineAfter(now, r.ResetAfter)})
			written = true
		}
	default:
		var next state
		switch kind {
		case KindFixed:
			next, r = fixedDecide(p, cur, now)
		case KindSlide:
			next, r = slideDecide(p, cur, now)
		case KindBucket:
			next, r = bucketDecide(p, cur, now)
		}
		if next != cur { // an admission; rejections and peeks change nothing
			s.putLocked(i, ok, h, key, entry{kind: kind, a: next.a, b: next.b, c: next.c, deadline: deadlineAfter(now, r.ResetAfter)})
			written = true
		}
	}
	if ok && !written && s.slab[i].deadline < maxDeadline { // a capped deadline is only a lower bound

		// The key expires (becomes fresh) at its deadline, set by the
		// parameters of its last write; a call with other parameters that
		// changes nothing cannot wait longer than that.
		r.clampTo(s.slab[i].deadline - now)
	}
	return r, nil
}

package engine

import (
	"errors"
	"hash/maphash"
	"math/bits"
	"sync"
	"sync/atomic"
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

// shard is one slice of the keyspace: a table (table.go) from keys to
// records in one data region (record.go). Records are appended; one that
// changes size is appended anew and the old copy becomes garbage, so the
// region is compacted when garbage outweighs what is live.
type shard struct {
	mu    sync.Mutex
	slots []uint64 // the key table, a view of mem.slots
	// old is the previous table while its entries move into slots (a
	// view of mem.oldSlots; nil otherwise); old[:migrated] has moved.
	old      []uint64
	migrated int
	count    int      // keys in the table
	data     []byte   // records; len is what is used, cap what is mapped
	garbage  int      // bytes of dead records in data
	mem      *regions // the regions behind slots and data
	seed     maphash.Seed
	// testHash replaces the hash in tests that force tag collisions.
	testHash func([]byte) uint64
	buf      []byte // scratch: a record being encoded
	logBuf   []byte // scratch: an RL.LOG's new runs
	// Change tracking: one feedShard per Feed (feed.go), and the dirty
	// bits of those feeds (0 when there are none: nothing is tracked).
	feeds    []feedShard
	feedBits byte
	quiet    bool         // applying a Restore: what it writes or removes is not a change of ours
	large    *atomic.Bool // the engine's flag for Prefetch (nil in a bare shard)
	// Incremental compaction (compact.go): while compacting, [0, cw) is
	// compacted, [cw, cr) one dead filler record, [cr, len(data)) not yet
	// visited. compactions counts the compaction passes finished.
	compacting  bool
	cw, cr      int
	cLen        int // len(data) at the end of the previous step
	compactions uint64
	// [relFrom, relTo) of the data region is emptied and its pages are
	// yet to go back to the OS, a slice per sweep step (releaseStepLocked).
	relFrom, relTo int
	// sweepAt is where the expiry sweep resumes: a record's offset,
	// carried along when compaction moves that record.
	sweepAt int
	// latest is the latest time a decision in this shard was made at.
	latest int64
	_      [64]byte
}

func newShard(seed maphash.Seed) *shard {
	s := &shard{mem: &regions{}, seed: seed}
	watchRegions(s)
	return s
}

// lookupLocked returns the record offset of a live key (hash h), its
// state and the record's end, dropping the key first if it has expired
// (lazy expiry). For an RL.LOG record, runs is its encoded log.
func (s *shard) lookupLocked(h uint64, key []byte, now int64) (off int, e entry, end int, ok bool) {
	off, e, end, _, ok = s.lookupRunsLocked(h, key, now)
	return off, e, end, ok
}

// lookupRunsLocked is lookupLocked that also returns an RL.LOG record's
// encoded runs (nil for other kinds), decoded on the way.
func (s *shard) lookupRunsLocked(h uint64, key []byte, now int64) (off int, e entry, end int, runs []byte, ok bool) {
	if s.old != nil {
		// A growing table moves on with every access, as Redis rehashes
		// a step per lookup: keys leave the old table, where lookups
		// cost a second probe and prefetching misses them, sooner.
		s.migrateLocked(4)
	}
	off, state, ok := s.findLocked(h, key)
	if !ok {
		return 0, entry{}, 0, nil, false
	}
	var runsAt int
	e, runsAt, end = decodeState(s.data, state, Kind(s.data[off]&hdrKind))
	if !e.alive(now) {
		// Dropping it decides it expired at now: no later decision may
		// be taken at an earlier time, which would have found it held.
		s.decisionTimeLocked(now)
		s.removeLocked(off, tagOf(h))
		return 0, entry{}, 0, nil, false
	}
	if e.kind == KindLog {
		n, j := uvarint(s.data, runsAt)
		runs = s.data[j : j+int(n) : j+int(n)]
	}
	return off, e, end, runs, true
}

// decisionTimeLocked returns the time a decision taken now must use: now,
// or the shard's latest decision time if that is later. Callers read the
// clock before they take the shard lock, so on two threads a reading can
// arrive after a later one has been used; deciding at the earlier time
// then would run time backwards for the key (an RL.FIXED count of the
// next window overwritten by one of the previous, over-admitting at the
// boundary). Clamped, time in a shard only moves forward. Expiry, lazy
// or swept, is a decision too: a key dropped at t is not found held by a
// decision clamped below t.
func (s *shard) decisionTimeLocked(now int64) int64 {
	if now < s.latest {
		return s.latest
	}
	s.latest = now
	return now
}

// putLocked stores state e (and RL.LOG's encoded runs) for key: over its record
// at off, which ends at oldEnd, when the key exists (oldEnd > 0) and the
// new record fits there, else as a new record. It marks the record
// changed and returns its offset.
func (s *shard) putLocked(off, oldEnd int, h uint64, key []byte, e entry, runs []byte) int {
	s.buf = appendRecord(s.buf[:0], byte(e.kind), key, e, runs)
	tag := tagOf(h)
	if oldEnd > 0 {
		wasDirty := s.data[off] & hdrDirtyAll // the feeds that list it already
		// Rewrite in place when the record fits, unless it would leave
		// more slack than record (a log that shrank): then move it, so the
		// next compaction gives the space back.
		if rec, ok := fillSlack(s.buf, oldEnd-off); ok && oldEnd-off <= 2*len(s.buf)+64 {
			s.buf = rec
			copy(s.data[off:], rec)
			s.data[off] |= wasDirty
			s.markDirtyLocked(off, tag)
			return off
		}
		s.buf = withSlack(s.buf, max(len(s.buf)/8, 24))
		if s.reserveLocked(len(s.buf)) { // compacted: the record moved
			off, _, _ = s.findLocked(h, key)
			oldEnd = parseRecord(s.data, off).end
		}
		slot := s.slotLocked(tag, off)
		s.data[off] |= hdrDead
		s.garbage += oldEnd - off
		newOff := len(s.data)
		s.data = append(s.data, s.buf...)
		*slot = makeSlot(tag, newOff)
		s.data[newOff] |= wasDirty // already listed by its tag
		s.markDirtyLocked(newOff, tag)
		return newOff
	}
	s.buf = withSlack(s.buf, 0)
	s.reserveLocked(len(s.buf))
	off = len(s.data)
	s.data = append(s.data, s.buf...)
	s.placeLocked(tag, off)
	s.markDirtyLocked(off, tag)
	return off
}

// removeLocked drops the record at off (hash tag tag).
func (s *shard) removeLocked(off int, tag uint32) {
	p := parseRecord(s.data, off)
	s.deletedLocked(p)
	s.unplaceLocked(tag, off)
	s.data[off] = (s.data[off] | hdrDead) &^ hdrDirtyAll
	s.garbage += p.end - off
}

// reserveLocked makes room for n more bytes in the data region. It grows
// the region: the sweeper compacts a shard in steps once an eighth of it
// is garbage (compact.go), so a request never waits for a whole shard to
// be compacted; only a region at least half garbage, which the sweeper
// has not kept up with (or an engine without one), is compacted here at
// once. It reports whether it compacted (record offsets changed).
func (s *shard) reserveLocked(n int) bool {
	if len(s.data)+n >= offMask-1 {
		// A slot holds a 36-bit offset + 1: past 64 GiB of records in
		// one shard offsets would wrap into the hash tags (and one
		// record could read as the tombstone moved). Stop loudly rather
		// than corrupt the table (more --shards spread the keys). Checked
		// before the room test: the region's capacity may pass the limit.
		panic("engine: one shard holds 64 GiB of records; start with more --shards")
	}
	if len(s.data)+n <= cap(s.data) {
		return false
	}
	compacted := false
	if s.garbage*2 >= len(s.data) && s.garbage > 0 {
		s.compactInPlaceLocked()
		compacted = true
	}
	if len(s.data)+n > cap(s.data) {
		s.growLocked(max(2*cap(s.data), len(s.data)+n, 4096))
	}
	return compacted
}

// growLocked moves the data region to a new one of capacity c (a mapped
// region is remapped where the OS can, without copying).
func (s *shard) growLocked(c int) {
	r := growRegion(s.mem.data, len(s.data), c)
	s.data, s.mem.data = r[:len(s.data)], r
}

// shrinkLocked gives back what a shard whose keys mostly went no longer
// needs: it starts moving the table into one sized for the keys left, as a
// doubling does in the other direction (the entries move a few per access
// and in chunks from the sweep, which yields between chunks; no record is
// read, no key hashed), and cuts the data region down to its records
// (mremap shrinks a mapped one in place; the sweep's release steps have
// already returned the emptied pages). A move under way is finished first, at once (the
// sweep shrinks only once none is). The region must hold no garbage
// (compacted).
func (s *shard) shrinkLocked() {
	if s.old != nil {
		s.migrateLocked(len(s.old))
	}
	if s.count == 0 {
		s.retireLocked(s.mem.slots)
		s.setSlots(0)
	} else {
		s.old, s.mem.oldSlots, s.migrated = s.slots, s.mem.slots, 0
		s.setSlots(slotsFor(s.count))
		if len(s.old) <= migrateAtOnce {
			s.migrateLocked(len(s.old))
		}
	}
	switch c := max(len(s.data)+len(s.data)/2, 4096); {
	case len(s.data) == 0:
		freeRegion(s.mem.data)
		s.data, s.mem.data = nil, nil
	case c < cap(s.data):
		r := growRegion(s.mem.data, len(s.data), c)
		s.data, s.mem.data = r[:len(s.data)], r
	}
	s.compactions++
}

// sparseLocked: the table is mostly empty (keys went), so a shrink gives
// memory back.
func (s *shard) sparseLocked() bool { return len(s.slots) > minSlots && s.count*8 < len(s.slots) }

// Engine is the sharded keyspace. It is safe for concurrent use; each
// operation on a key locks only that key's shard.
type Engine struct {
	shards []*shard
	mask   uint64
	seed   maphash.Seed
	// feeds are the readers of the engine's changes (feed.go).
	feeds []*Feed
	// large: some shard's table has reached prefetchMinSlots since the
	// engine started, so Prefetch is worth its work.
	large atomic.Bool
}

// MaxShards bounds the shard count: a SCAN cursor holds a shard index above
// a ScanSlots position in 64 bits.
const MaxShards = 1 << (64 - ScanPosBits)

// New returns an engine with n shards; n is rounded up to a power of two
// (at least 1, at most MaxShards).
func New(n int) *Engine {
	n = min(max(n, 1), MaxShards)
	n = 1 << bits.Len(uint(n-1))
	e := &Engine{shards: make([]*shard, n), mask: uint64(n - 1), seed: maphash.MakeSeed()}
	for i := range e.shards {
		e.shards[i] = newShard(e.seed)
		e.shards[i].large = &e.large
	}
	return e
}

// Shards returns the number of shards.
func (e *Engine) Shards() int { return len(e.shards) }

// hash is the key's hash, as Engine.shardOf computes it.
func (s *shard) hash(key []byte) uint64 {
	if s.testHash != nil {
		return s.testHash(key)
	}
	return maphash.Bytes(s.seed, key)
}

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
	now = s.decisionTimeLocked(now)
	off, cur, end, ok := s.lookupLocked(h, key, now)
	var tat uint64
	if ok {
		if cur.kind != KindThrottle {
			return ThrottleResult{}, ErrWrongType
		}
		tat = uint64(cur.a)
	}
	d, err := g.Decide(tat, ok, now, q)
	if d.Write {
		s.putLocked(off, end, h, key, entry{kind: KindThrottle, a: int64(d.NewTAT), deadline: throttleDeadline(now, d.TTLMs)}, nil)
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
	_, cur, _, ok := s.lookupLocked(h, key, now)
	if !ok {
		return 0, false, nil
	}
	if cur.kind != KindThrottle {
		return 0, true, ErrWrongType
	}
	return uint64(cur.a), true, nil
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
	now = s.decisionTimeLocked(now)
	off, cur, end, ok := s.lookupLocked(h, key, now)
	if (cond == SetIfMissing && ok) || (cond == SetIfExists && !ok) {
		return false
	}
	if deadline == 0 {
		deadline = never
	}
	e := entry{kind: KindThrottle, a: int64(tat), deadline: deadline}
	if ok && keepTTL {
		e.deadline = cur.deadline
	}
	s.putLocked(off, end, h, key, e, nil)
	return true
}

// Delete removes key and reports whether it existed.
func (st Store) Delete(key []byte, now int64) bool {
	s, h := st.e.shardOf(key)
	st.lock(s)
	defer st.unlock(s)
	off, _, _, ok := s.lookupLocked(h, key, now)
	if ok {
		s.removeLocked(off, tagOf(h))
	}
	return ok
}

// Type returns the kind of key, KindNone if it does not exist.
func (st Store) Type(key []byte, now int64) Kind {
	s, h := st.e.shardOf(key)
	st.lock(s)
	defer st.unlock(s)
	_, cur, _, ok := s.lookupLocked(h, key, now)
	if !ok {
		return KindNone
	}
	return cur.kind
}

// PTTL returns the key's remaining life in ms as Redis's PTTL does: -2 for
// a missing key, -1 for one without expiry. For CL.THROTTLE keys it is
// Redis's expire_ms - now_ms; for RL.* keys it is reset_after_ms, the time
// until the state is fresh, rounded up.
func (st Store) PTTL(key []byte, now int64) int64 {
	s, h := st.e.shardOf(key)
	st.lock(s)
	defer st.unlock(s)
	_, e, _, ok := s.lookupLocked(h, key, now)
	if !ok {
		return -2
	}
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
	off, _, end, ok := s.lookupLocked(h, key, now)
	if !ok {
		return 0, false
	}
	// The record (key, state, log) and its table slot (8 bytes at the
	// table's average load of 1/2).
	return int64(end-off) + 16, true
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

// MemoryStats describes the keyspace's memory outside the Go heap (or in
// it, for small shards): what INFO memory reports.
type MemoryStats struct {
	Held    int64 // bytes of data regions and key tables held (retired ones too)
	Records int64 // bytes of live records
	Garbage int64 // bytes of dead records awaiting compaction
}

// Memory sums the shards' MemoryStats.
func (st Store) Memory() MemoryStats {
	var m MemoryStats
	for _, s := range st.e.shards {
		st.lock(s)
		m.Held += int64(cap(s.data) + 8*len(s.slots) + 8*len(s.old))
		for _, r := range s.mem.retired {
			m.Held += int64(cap(r))
		}
		m.Records += int64(len(s.data) - s.garbage)
		m.Garbage += int64(s.garbage)
		st.unlock(s)
	}
	return m
}

// Flush removes every key.
func (st Store) Flush() {
	for _, s := range st.e.shards {
		st.lock(s)
		s.mem.release()
		s.slots, s.count, s.data, s.garbage = nil, 0, nil, 0
		s.old, s.migrated = nil, 0
		s.compacting, s.sweepAt = false, 0
		s.relFrom, s.relTo = 0, 0
		s.flushedLocked()
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
	for off := 0; off < len(s.data); {
		p := parseRecord(s.data, off)
		if p.hdr&hdrDead == 0 && p.e.alive(now) {
			fn(KeyInfo{Key: string(p.key), Kind: p.e.kind})
		}
		off = p.end
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

// ScanPosBits is how many low bits of a ScanSlots position are used.
const ScanPosBits = tagBits

// ScanSlots calls fn for live keys of shard i starting at position pos (0
// for the shard's start), visiting whole table buckets until count live
// keys were seen, and returns the position to resume at, or -1 when the
// shard is exhausted. Positions walk the buckets (a key's ideal slot, its
// hash tag under the table's mask) in Redis's reverse-binary order, so a
// key present for the whole walk is seen at least once however the table
// grows or shrinks meanwhile, and the walk ends. Any position is valid.
// fn runs under the shard lock and must not call the Store.
func (st Store) ScanSlots(i int, pos int64, count int, now int64, fn func(KeyInfo)) int64 {
	s := st.e.shards[i]
	st.lock(s)
	defer st.unlock(s)
	if len(s.slots) == 0 {
		return -1
	}
	// While entries move between two tables (s.old: half the size while
	// the table doubles, larger while it shrinks), a key of bucket b under
	// the smaller table's mask is in that bucket of the smaller table or
	// in one of the larger table's buckets b, b+len(smaller), ...: visit
	// them all and step the position under the smaller mask, as Redis
	// scans both tables of a rehash. A position stepped under the smaller
	// mask stays valid under the larger one (the reverse-binary order).
	small, large := s.slots, s.old
	if s.old != nil && len(s.old) < len(s.slots) {
		small, large = s.old, s.slots
	}
	mask := uint64(len(small) - 1)
	v := uint64(pos) & (1<<ScanPosBits - 1)
	for n := 0; ; {
		b := v & mask
		n += s.scanBucket(small, b, now, fn)
		for x := b; x < uint64(len(large)); x += mask + 1 {
			n += s.scanBucket(large, x, now, fn)
		}
		v = bits.Reverse64(bits.Reverse64(v|^mask) + 1)
		if v == 0 {
			return -1
		}
		if n >= count {
			return int64(v)
		}
	}
}

// scanBucket calls fn for the live keys of bucket b of table t (those
// whose ideal slot is b: with linear probing they sit in the run of
// occupied slots starting at b) and returns how many.
func (s *shard) scanBucket(t []uint64, b uint64, now int64, fn func(KeyInfo)) int {
	mask := uint64(len(t) - 1)
	n := 0
	for p := b; t[p] != 0; p = (p + 1) & mask {
		slot := t[p]
		if slot == moved || uint64(slotTag(slot))&mask != b {
			continue
		}
		if r := parseRecord(s.data, slotOff(slot)); r.e.alive(now) {
			fn(KeyInfo{Key: string(r.key), Kind: r.e.kind})
			n++
		}
	}
	return n
}

// Limit runs the RL.* algorithm kind (KindFixed, KindLog, KindSlide,
// KindBucket) for key at now and stores the outcome: a rejected request or
// a cost-0 peek changes nothing visible, and a key whose state becomes
// fresh is dropped. ErrWrongType if the key holds another kind.
func (st Store) Limit(kind Kind, key []byte, p Params, now int64) (Result, error) {
	s, h := st.e.shardOf(key)
	st.lock(s)
	defer st.unlock(s)
	now = s.decisionTimeLocked(now)
	off, e, end, runs, ok := s.lookupRunsLocked(h, key, now)
	var cur state
	if ok {
		if e.kind != kind {
			return Result{}, ErrWrongType
		}
		cur = state{e.a, e.b, e.c}
	}
	var r Result
	written := false
	switch kind {
	case KindLog:
		var ls logState
		if ok {
			ls = logState{runs: runs, dl: uint64(e.deadline), total: e.a, oldest: uint64(e.b)}
		}
		// Only an admission stores the log: a rejected call or a peek
		// leaves it exactly as it was (even the entries it found expired
		// under its own window, which a later, longer window may count).
		next, deadline, res, admitted := logDecide(p, ls, now, s.logBuf[:0])
		r = res
		if admitted {
			s.putLocked(off, end, h, key, entry{kind: KindLog, a: next.total, b: int64(next.oldest), deadline: deadline}, next.runs)
			written = true
			if cap(next.runs) <= 64<<10 { // keep the scratch unless a huge log grew it
				s.logBuf = next.runs[:0]
			}
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
			s.putLocked(off, end, h, key, entry{kind: kind, a: next.a, b: next.b, c: next.c, deadline: deadlineAfter(now, r.ResetAfter)}, nil)
			written = true
		}
	}
	if ok && !written && e.deadline < maxDeadline { // a capped deadline is only a lower bound

		// The key expires (becomes fresh) at its deadline, set by the
		// parameters of its last write; a call with other parameters that
		// changes nothing cannot wait longer than that.
		r.clampTo(e.deadline - now)
	}
	return r, nil
}

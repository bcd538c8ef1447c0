package engine

import (
	"hash/maphash"
	"math/bits"
	"sync"
	"sync/atomic"
)

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
	// filling counts the Fill calls under way: while any is, the sweep
	// shrinks no table (the tables Fill sized are empty at first).
	filling atomic.Int32
	// mem is the memory pressure the node reports (maxmemory.go).
	mem pressure
	// cut orders the writes that span shards against the readers that
	// walk them: a write over several shards (Atomic, a Batch over
	// several, Flush) holds it shared; a reader of the changes or of the
	// whole keyspace (Feed.Next, Feed.NextEach, Dump) holds it alone, so
	// what it reads is a consistent cut, every such write wholly before
	// it or wholly after: a snapshot or a replica never holds half of
	// one, whatever happens next. A write to one shard is atomic under
	// that shard's lock and does not take it. Lock order: cut, then the
	// shards.
	cut sync.RWMutex
	// tokenHigh is the highest lease token issued (lease.go).
	tokenHigh atomic.Int64
	// changed, when set (OnChange), is told of the keys that change
	// other than by a decision or a Store write.
	changed atomic.Pointer[func(key []byte)]
}

// OnChange has f told of each key that changes other than by a decision
// or a Store write: expired (by the sweep), evicted (by maxmemory), or
// applied from a record (a replica's stream, a cluster's move); and of a
// Flush, with a nil key, whoever flushed (FLUSHALL too). f may run
// under the key's shard lock, with key valid only during the call: it
// must copy what it keeps and must not call the engine. nil stops it.
// (The node's client-side caching tells the connections that read such
// a key.)
func (e *Engine) OnChange(f func(key []byte)) {
	if f == nil {
		e.changed.Store(nil)
		return
	}
	e.changed.Store(&f)
}

// MaxShards bounds the shard count: a SCAN cursor holds a shard index above
// a ScanSlots position in 64 bits.
const MaxShards = 1 << (64 - ScanPosBits)

// options tune an engine's shards. Production engines take
// defaultOptions; tests choose others, per engine, to reach states the
// defaults make rare.
type options struct {
	// migrateAtOnce: a table of at most this many slots is moved over at
	// once when it grows or shrinks (a few microseconds); a larger one
	// moves in steps.
	migrateAtOnce int
	// hash replaces the key hash (tests that force tag collisions); nil
	// is maphash with the engine's seed.
	hash func([]byte) uint64
	// feedScanShare: when at least one in feedScanShare of a shard's keys
	// is listed by a feed, the feed's read passes over the shard's
	// records in order instead of looking up each listed tag
	// (Feed.takeLocked). 0 never does while the shard holds keys.
	feedScanShare int
}

var defaultOptions = options{migrateAtOnce: 1024, feedScanShare: 4}

// New returns an engine with n shards; n is rounded up to a power of two
// (at least 1, at most MaxShards).
func New(n int) *Engine { return newEngine(n, defaultOptions) }

func newEngine(n int, o options) *Engine {
	n = min(max(n, 1), MaxShards)
	n = 1 << bits.Len(uint(n-1))
	e := &Engine{shards: make([]*shard, n), mask: uint64(n - 1), seed: maphash.MakeSeed()}
	for i := range e.shards {
		e.shards[i] = newShard(e.seed, o)
		e.shards[i].large = &e.large
		e.shards[i].tokenHigh = &e.tokenHigh
	}
	return e
}

// Shards returns the number of shards.
func (e *Engine) Shards() int { return len(e.shards) }

// hash is the key's hash, as Engine.shardOf computes it.
func (s *shard) hash(key []byte) uint64 {
	if s.opt.hash != nil {
		return s.opt.hash(key)
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
	e.cut.RLock()
	defer e.cut.RUnlock()
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
	// dry: decisions are answered but never stored (ReadOnly).
	dry bool
}

// ReadOnly returns st as a Store whose decisions change nothing: a
// replica's peeks (CL.THROTTLE of quantity 0, which redis-cell stores)
// read the replicated state and leave it as the primary sent it.
func (st Store) ReadOnly() Store {
	st.dry = true
	return st
}

// ResetTime sets every shard's latest decision time to now, earlier or
// later: for a node that starts following another's timeline
// (clock.Timeline), whose keyspace is then the primary's.
func (e *Engine) ResetTime(now int64) {
	for _, s := range e.shards {
		s.mu.Lock()
		s.latest = now
		s.wholeNextLocked() // a decision may now come before what a feed last read
		s.mu.Unlock()
	}
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

package engine

import (
	"hash/maphash"
	"sync"
	"sync/atomic"
)

// never is the deadline of a key without expiry.
const never = int64(1<<63 - 1)

// shard is one slice of the keyspace: a table (table.go) from keys to
// records in one data region (record.go). Records are appended; one that
// changes size is appended anew and the old copy becomes garbage, so the
// region is compacted when garbage outweighs what is live.
type shard struct {
	mu sync.Mutex
	// pending counts, per feed (by its index), the changes its next read
	// reports from this shard. It changes only under the lock; Pending
	// loads it without. It lies beside the lock, so a write that changes
	// it finds its line already held, where one counter for all shards
	// would move between cores at every first write of a key.
	pending [maxFeeds]atomic.Int64
	slots   []uint64 // the key table, a view of mem.slots
	// old is the previous table while its entries move into slots (a
	// view of mem.oldSlots; nil otherwise); old[:migrated] has moved.
	old      []uint64
	migrated int
	count    int      // keys in the table
	kinds    [8]int   // keys in the table by kind (Kind), for Store.Kinds
	data     []byte   // records; len is what is used, cap what is mapped
	garbage  int      // bytes of dead records in data
	mem      *regions // the regions behind slots and data
	seed     maphash.Seed
	opt      options
	buf      []byte // scratch: a record being encoded
	logBuf   []byte // scratch: an RL.LOG's new runs
	secBuf   []byte // scratch: a section being encoded (reserve.go)
	pend     []pend // scratch: a section's reservations, decoded
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
	// lastToken is the highest lease token issued here, leases counts
	// lease events, and tokenHigh is the engine's highest token (nil in
	// a bare shard); lease.go.
	lastToken int64
	leases    leaseEvents
	tokenHigh *atomic.Int64
	_         [64]byte
}

func newShard(seed maphash.Seed, o options) *shard {
	s := &shard{mem: &regions{}, seed: seed, opt: o}
	watchRegions(s)
	return s
}

// lookupLocked returns the record offset of a live key (hash h), its
// state and the record's tail (decodeState: where a store over it finds
// its size), dropping the key first if it has expired (lazy expiry). For
// an RL.LOG record, runs is its encoded log.
func (s *shard) lookupLocked(h uint64, key []byte, now int64) (off int, e entry, tail int, ok bool) {
	off, e, tail, _, ok = s.lookupRunsLocked(h, key, now)
	return off, e, tail, ok
}

// lookupRunsLocked is lookupLocked that also returns an RL.LOG record's
// encoded runs (nil for other kinds), decoded on the way.
func (s *shard) lookupRunsLocked(h uint64, key []byte, now int64) (off int, e entry, tail int, runs []byte, ok bool) {
	off, e, tail, runs, ok, stale := s.lookupKeepLocked(h, key, now)
	if stale {
		s.removeLocked(off, tagOf(h))
		return 0, entry{}, 0, nil, false
	}
	return off, e, tail, runs, ok
}

// lookupKeepLocked is lookupRunsLocked for a call that may store the key
// at once (CL.THROTTLE, the RL.* limiters, RL.ALL): a record that has
// expired is reported stale (ok false, e zero, off and tail its place)
// instead of removed, so that the write that follows can take its place
// (putLocked rewrites it in place) rather than drop it and append a new
// one. A bucket or GCRA key expires once it is full again, so a key used
// a few times a second comes back expired at most calls. The caller must
// store over a stale record or drop it (dropStaleLocked) before it
// unlocks the shard; it is expired, decided at now, in either case.
func (s *shard) lookupKeepLocked(h uint64, key []byte, now int64) (off int, e entry, tail int, runs []byte, ok, stale bool) {
	if s.old != nil {
		// A growing table moves on with every access, as Redis rehashes
		// a step per lookup: keys leave the old table, where lookups
		// cost a second probe and prefetching misses them, sooner.
		s.migrateLocked(4)
	}
	off, state, ok := s.findLocked(h, key)
	if !ok {
		return 0, entry{}, 0, nil, false, false
	}
	var runsAt int
	e, runsAt, tail = decodeState(s.data, state, Kind(s.data[off]&hdrKind))
	if !e.alive(now) {
		// Dropping it decides it expired at now: no later decision may
		// be taken at an earlier time, which would have found it held.
		s.decisionTimeLocked(now)
		s.droppedLocked(e)
		return off, entry{}, tail, nil, false, true
	}
	if runsAt != 0 {
		n, j := uvarint(s.data, runsAt)
		runs = s.data[j : j+int(n) : j+int(n)]
	}
	return off, e, tail, runs, true, false
}

// staleAtLocked is where the stale record of key (hash h) that
// lookupKeepLocked found is now (records may have moved since: a store
// into the same shard), or ok false if it is gone.
func (s *shard) staleAtLocked(h uint64, key []byte) (off, tail int, ok bool) {
	off, _, ok = s.findLocked(h, key)
	if !ok {
		return 0, 0, false
	}
	return off, parseHead(s.data, off).tail, true
}

// dropStaleLocked removes the stale record of key (hash h) that
// lookupKeepLocked found, if it is still there. Its expiry was accounted
// when it was found.
func (s *shard) dropStaleLocked(h uint64, key []byte) {
	if off, _, ok := s.staleAtLocked(h, key); ok {
		s.removeLocked(off, tagOf(h))
	}
}

// dropStaleIf is dropStaleLocked when a writer found a stale record and
// did not store over it.
func (s *shard) dropStaleIf(stale bool, h uint64, key []byte) {
	if stale {
		s.dropStaleLocked(h, key)
	}
}

// newKeyAt is newKeyLocked for a writer that found no live record, and
// where it is to store one: over the stale record it found (at off, its
// tail at tail), or at the end of the region (0, 0, stale false). Making
// room for a key may evict records of the shard (maxmemory.go), the
// stale one among them: after an eviction the stale record is dropped
// (if still there) and the key stored as new; on an error (the writer
// returns it at once) it is dropped too. A writer that stores nothing
// drops it itself (dropStaleIf), whatever the reason.
func (st Store) newKeyAt(s *shard, h uint64, key []byte, peek bool, off, tail int, stale bool, now int64) (write bool, atOff, atTail int, atStale bool, err error) {
	evicted := st.e.mem.evicted.Load()
	write, err = st.newKeyLocked(s, peek, now)
	if stale && (err != nil || st.e.mem.evicted.Load() != evicted) {
		s.dropStaleLocked(h, key)
		stale = false
	}
	if !stale {
		return write, 0, 0, false, err
	}
	return write, off, tail, true, err
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
// at off, whose tail (decodeState) is at oldTail, when the key exists
// (oldTail > 0) and the new record fits there, else as a new record. It
// marks the record changed.
func (s *shard) putLocked(off, oldTail int, h uint64, key []byte, e entry, runs []byte) {
	oldEnd := 0
	if oldTail > 0 {
		// Read first: the slack count may be a cache miss (a long log's
		// tail), which the record's encoding below can overlap.
		oldEnd = recordEnd(s.data, oldTail)
	}
	s.buf = appendRecord(s.buf[:0], byte(e.kind), key, e, runs)
	live := s.buf // the record up to its slack, for the feeds: the slack is appended after
	tag := tagOf(h)
	if oldEnd > 0 {
		if old := Kind(s.data[off] & hdrKind); old != e.kind {
			s.kinds[old]--
			s.kinds[e.kind]++
		}
		wasDirty := s.data[off] & hdrDirtyAll // the feeds that list it already
		// Rewrite in place when the record fits, unless it would leave
		// more slack than record (a log that shrank): then move it, so the
		// next compaction gives the space back.
		if rec, ok := fillSlack(s.buf, oldEnd-off); ok && oldEnd-off <= 2*len(s.buf)+64 {
			s.buf = rec
			copy(s.data[off:], rec)
			s.data[off] |= wasDirty
			s.markDirtyLocked(off, tag, live)
			return
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
		s.markDirtyLocked(newOff, tag, live)
		return
	}
	s.buf = withSlack(s.buf, 0)
	s.reserveLocked(len(s.buf))
	off = len(s.data)
	s.data = append(s.data, s.buf...)
	s.placeLocked(tag, off)
	s.kinds[e.kind]++
	s.markDirtyLocked(off, tag, live)
}

// removeLocked drops the record at off (hash tag tag).
func (s *shard) removeLocked(off int, tag uint32) {
	p := parseRecord(s.data, off)
	s.deletedLocked(p)
	s.unplaceLocked(tag, off)
	s.kinds[p.e.kind]--
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
// growth does in the other direction (the entries move a few per access
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
		if len(s.old) <= s.opt.migrateAtOnce {
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

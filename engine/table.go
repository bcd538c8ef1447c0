package engine

import "unsafe"

// The key table of a shard: open addressing with linear probing over
// 8-byte slots, each holding a 28-bit hash tag and the offset + 1 of the
// key's record in the shard's data region (0 is an empty slot). No per-key
// allocation and no pointers: a lookup touches one slot and one record
// (the key bytes and the state sit together), nothing else.
//
// A table may have any number of slots: a key's probe run starts at its
// home, the tag scaled to the table's size (home), not the tag under a
// power-of-two mask. So a mapped table grows by a quarter, not by
// doubling, and holds between 64% and 80% of its slots: 10-12.5 bytes of
// table per key instead of 10.7-21.3 (growTableLocked). A home keeps the
// tags' order under every size, which lets a SCAN cursor be a tag
// (scan.go).
//
// Deletion shifts later slots of the same probe run back (no tombstones),
// so probe runs stay short at any churn; only a table being emptied into
// its successor takes tombstones (below).
const (
	minSlots = 16
	tagBits  = 28
	offBits  = 64 - tagBits // record offsets below 64 GiB per shard
	offMask  = 1<<offBits - 1
	// A table holds at most maxLoadNum/maxLoadDen of its slots.
	maxLoadNum, maxLoadDen = 4, 5
)

func slotTag(slot uint64) uint32 { return uint32(slot >> offBits) }
func slotOff(slot uint64) int    { return int(slot&offMask) - 1 }
func tagOf(h uint64) uint32      { return uint32(h) & (1<<tagBits - 1) }
func makeSlot(tag uint32, off int) uint64 {
	return uint64(tag)<<offBits | uint64(off+1)
}

// home is the slot where the probe run of tag starts in a table of n
// slots: tag * n / 2^28, monotonic in the tag.
func home(tag uint32, n int) int { return int(uint64(tag) * uint64(n) >> tagBits) }

// maxKeys is the most keys a table of n slots holds before it grows.
func maxKeys(n int) int { return n * maxLoadNum / maxLoadDen }

// Growing the table is incremental, as Redis rehashes: the table grows by
// a quarter into a new one, and the entries of the old one move over a
// few at a time (enough per insert to be done before the new table is
// full, and in chunks by the sweeper) instead of all at once under the
// shard lock (at 125,000 keys a shard took 2.5-4 ms in one piece). A
// table left mostly empty shrinks the same way, into a smaller new one
// (shrinkLocked). While entries move (s.old != nil), a key is in exactly
// one of the two tables: lookups try the new one, then the old one;
// inserts go to the new one; a removal from the old one leaves a
// tombstone, as does a move, so the old table's probe runs stay whole
// until it is freed.

// moved is the tombstone of an old table's slot: its offset is one no
// record reaches (reserveLocked stops a shard below offMask).
const moved = uint64(offMask)

// findIn returns the record offset of key (tag tag) in table t, and the
// offset of the record's state (just past the key).
func (s *shard) findIn(t []uint64, tag uint32, key []byte) (off, state int, ok bool) {
	if len(t) == 0 {
		return 0, 0, false
	}
	for p := home(tag, len(t)); ; p = next(p, len(t)) {
		slot := t[p]
		if slot == 0 {
			return 0, 0, false
		}
		if slotTag(slot) == tag && slot != moved {
			off := slotOff(slot)
			kl, i := uvarint(s.data, off+1)
			if int(kl) == len(key) && string(s.data[i:i+int(kl)]) == string(key) {
				return off, i + int(kl), true
			}
		}
	}
}

// findLocked returns the record offset of key (hash h), if present, and
// the offset of the record's state (just past the key).
func (s *shard) findLocked(h uint64, key []byte) (off, state int, ok bool) {
	tag := tagOf(h)
	if off, state, ok = s.findIn(s.slots, tag, key); ok || s.old == nil {
		return off, state, ok
	}
	return s.findIn(s.old, tag, key)
}

// slotIndexIn returns the index in t of the slot holding the record at
// off (tag tag), or false if t does not hold it.
func slotIndexIn(t []uint64, tag uint32, off int) (int, bool) {
	if len(t) == 0 {
		return 0, false
	}
	want := makeSlot(tag, off)
	for p := home(tag, len(t)); t[p] != 0; p = next(p, len(t)) {
		if t[p] == want {
			return p, true
		}
	}
	return 0, false
}

// slotLocked returns the slot holding the record at off (hash tag tag),
// which must be in the table, in whichever table holds it.
func (s *shard) slotLocked(tag uint32, off int) *uint64 {
	if p, ok := slotIndexIn(s.slots, tag, off); ok {
		return &s.slots[p]
	}
	return &s.old[mustIndexIn(s.old, tag, off)]
}

// mustIndexIn is slotIndexIn for a record that must be in t.
func mustIndexIn(t []uint64, tag uint32, off int) int {
	p, ok := slotIndexIn(t, tag, off)
	if !ok {
		panic("engine: a record is missing from its table")
	}
	return p
}

// insertIn puts slot into table t, which has room.
func insertIn(t []uint64, slot uint64) {
	p := home(slotTag(slot), len(t))
	for t[p] != 0 {
		p = next(p, len(t))
	}
	t[p] = slot
}

// next is the slot after p in a table of n slots (probe runs wrap).
func next(p, n int) int {
	if p++; p == n {
		return 0
	}
	return p
}

// placeLocked puts the record at off (hash tag tag) into the table.
func (s *shard) placeLocked(tag uint32, off int) {
	if s.old != nil {
		// Enough old slots per insert to empty the old table before the
		// new one is full (five for a growth by a quarter), so the move
		// below that takes what is left at once only runs if keys were
		// also removed and re-inserted meanwhile.
		left, room := len(s.old)-s.migrated, maxKeys(len(s.slots))-s.count
		s.migrateLocked(max(2, left/max(room, 1)+1))
	}
	if s.count+1 > maxKeys(len(s.slots)) {
		s.migrateLocked(len(s.old)) // (only if the sweeper and inserts fell behind)
		s.growTableLocked()
	}
	insertIn(s.slots, makeSlot(tag, off))
	s.count++
}

// growTableLocked grows the table; the old one's entries move over
// incrementally (migrateLocked), or at once if it is small. A table on
// the Go heap (below mapMin bytes) doubles: each table it leaves behind
// stays in the process until the collector and the scavenger return it,
// so small steps there would cost more resident memory than they save. A
// mapped table grows by a quarter: the one it leaves is unmapped.
func (s *shard) growTableLocked() {
	n := tableSize(2 * len(s.slots))
	if 8*len(s.slots) >= mapMin {
		n = tableSize(len(s.slots) + len(s.slots)/4)
	}
	s.old, s.mem.oldSlots, s.migrated = s.slots, s.mem.slots, 0
	s.setSlots(n)
	if len(s.old) <= s.opt.migrateAtOnce {
		s.migrateLocked(len(s.old))
	}
}

// migrateLocked moves up to n slots of the old table into the new one,
// freeing the old table once all have moved.
func (s *shard) migrateLocked(n int) {
	for end := min(s.migrated+n, len(s.old)); s.migrated < end; s.migrated++ {
		if slot := s.old[s.migrated]; slot != 0 && slot != moved {
			insertIn(s.slots, slot)
			s.old[s.migrated] = moved
		}
	}
	if s.old != nil && s.migrated == len(s.old) {
		s.dropOldLocked()
	}
}

// dropOldLocked lets go of the old table once every entry has moved: a
// small one is freed now, a mapped one retired, for the sweep to unmap
// outside the lock (freeRetired).
func (s *shard) dropOldLocked() {
	s.retireLocked(s.mem.oldSlots)
	s.old, s.mem.oldSlots, s.migrated = nil, nil, 0
}

// retireLocked lets go of a table no longer referred to: a small one is
// freed now, a mapped one left for freeRetired.
func (s *shard) retireLocked(r []byte) {
	if cap(r) >= mapMin {
		s.mem.retired = append(s.mem.retired, r)
	} else {
		freeRegion(r)
	}
}

// FreeRetired unmaps the tables that moves have emptied, in every shard,
// outside the shard locks. The sweep does it every pass; a load, which
// runs before the sweep starts, calls it as it goes.
func (e *Engine) FreeRetired() {
	for _, s := range e.shards {
		s.freeRetired()
	}
}

// freeRetired unmaps the tables the shard's moves have retired. It takes
// the shard lock only to take them: unmapping, the long part, runs with
// the lock released, since nothing refers to a retired table.
func (s *shard) freeRetired() {
	s.mu.Lock()
	retired := s.mem.retired
	s.mem.retired = nil
	s.mu.Unlock()
	for _, r := range retired {
		freeRegion(r)
	}
}

// unplaceLocked removes the record at off (hash tag tag) from the table:
// in the new table by shifting back the slots after it that belong
// earlier in the run, in the old one by a tombstone.
func (s *shard) unplaceLocked(tag uint32, off int) {
	s.count--
	p, ok := slotIndexIn(s.slots, tag, off)
	if !ok {
		s.old[mustIndexIn(s.old, tag, off)] = moved
		return
	}
	n := len(s.slots)
	for q := next(p, n); s.slots[q] != 0; q = next(q, n) {
		ideal := home(slotTag(s.slots[q]), n)
		// Move q back to the hole at p unless its ideal position lies
		// cyclically in (p, q].
		if (q > p && (ideal <= p || ideal > q)) || (q < p && ideal <= p && ideal > q) {
			s.slots[p] = s.slots[q]
			p = q
		}
	}
	s.slots[p] = 0
}

// setSlots gives the shard an empty table of n slots (0 for none); the
// caller frees the previous table's region.
func (s *shard) setSlots(n int) {
	if n == 0 {
		s.slots, s.mem.slots = nil, nil
		return
	}
	if n >= prefetchMinSlots && s.large != nil && !s.large.Load() {
		s.large.Store(true)
	}
	r := allocRegion(8 * n)
	s.mem.slots = r
	s.slots = unsafe.Slice((*uint64)(unsafe.Pointer(unsafe.SliceData(r))), n)
}

// tableSize is a table's size for at least n slots: minSlots or more, and
// a whole number of pages once the table is mapped (allocRegion), so no
// mapped byte goes unused.
func tableSize(n int) int {
	n = max(n, minSlots)
	if 8*n >= mapMin {
		perPage := pageSize / 8
		n = (n + perPage - 1) / perPage * perPage
	}
	return n
}

// slotsFor is the table size for n keys: load <= 1/2.
func slotsFor(n int) int { return tableSize(2 * n) }

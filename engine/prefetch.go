package engine

import "hash/maphash"

// PrefetchMax is the most keys Prefetch looks at in one call.
const PrefetchMax = 32

// prefetchMinSlots: shards with smaller tables (a few thousand keys) stay
// in the CPU cache, and prefetching them would only add work.
const prefetchMinSlots = 8192

// Prefetch brings the table slots and records of keys into the CPU cache
// ahead of their decisions. With 100,000 keys and more a lookup misses the
// cache twice, on the slot and then on the record the slot points to, and
// each miss stalls the decision (about 250 ns each on this project's
// benchmark machines). Prefetch loads the slots of all keys in one pass and
// their records in a second, so that the misses of a pipelined batch
// overlap instead of following one another. It holds the locks of the
// shards involved, taken in ascending order as Atomic takes them, for the
// two passes: a lock taken between two loads would wait for the first
// load to complete (a locked instruction orders memory) and the misses
// would not overlap. It changes nothing, looks at no more than PrefetchMax
// keys, and returns at once while no shard's table has reached
// prefetchMinSlots (the keyspace stays cached).
//
// It returns a value derived from what it loaded, so that the loads are
// not optimized away; callers ignore it.
//
//go:noinline
func (e *Engine) Prefetch(keys [][]byte) uint64 {
	if !e.large.Load() {
		return 0
	}
	var hs, held [PrefetchMax]uint64
	n := min(len(keys), PrefetchMax)
	m := 0 // held[:m]: the shard indices involved, ascending, distinct
	for i, k := range keys[:n] {
		h := maphash.Bytes(e.seed, k)
		hs[i] = h
		si := (h >> 32) & e.mask
		j := m
		for j > 0 && held[j-1] > si {
			j--
		}
		if j > 0 && held[j-1] == si {
			continue
		}
		copy(held[j+1:m+1], held[j:m])
		held[j] = si
		m++
	}
	if m == 0 {
		return 0
	}
	for _, si := range held[:m] {
		e.shards[si].mu.Lock()
	}
	sink := uint64(0)
	if s := e.shards[held[0]]; max(len(s.slots), len(s.old)) >= prefetchMinSlots { // (old: a shrink's larger table)
		sink = e.prefetchLocked(hs[:n])
	}
	for _, si := range held[:m] {
		e.shards[si].mu.Unlock()
	}
	return sink
}

// Prefetches reports whether Prefetch loads anything: some shard's table
// has reached prefetchMinSlots. Until then a caller need not gather keys.
func (e *Engine) Prefetches() bool { return e.large.Load() }

// prefetchLocked loads the table slots of the keys hashed hs in one pass
// and their records in a second (see Prefetch), their shards' locks held.
//
//go:noinline
func (e *Engine) prefetchLocked(hs []uint64) uint64 {
	sink := uint64(0)
	for _, h := range hs {
		sink += e.shards[(h>>32)&e.mask].loadHome(tagOf(h))
	}
	for _, h := range hs {
		sink += e.shards[(h>>32)&e.mask].loadRecord(tagOf(h))
	}
	return sink
}

// loadHome loads tag's home slot, in both tables while entries move (the
// key may not have moved yet): a prefetch pass's first load. It returns a
// value derived from what it loaded.
func (s *shard) loadHome(tag uint32) uint64 {
	sink := uint64(0)
	if len(s.slots) > 0 {
		sink += s.slots[home(tag, len(s.slots))]
	}
	if len(s.old) > 0 {
		sink += s.old[home(tag, len(s.old))]
	}
	return sink
}

// loadRecord loads the first byte of the record tag's probe run points
// to, if loadHome's slots lead to one: a prefetch pass's second load.
func (s *shard) loadRecord(tag uint32) uint64 {
	for _, t := range [2][]uint64{s.slots, s.old} {
		if len(t) == 0 {
			continue
		}
		if off, ok := probeRecord(t, tag); ok {
			return uint64(s.data[off])
		}
	}
	return 0
}

// probeRecord returns the record offset of the first slot of tag's probe
// run in t that holds tag, looking no further than the slots the first
// pass brought into the cache with its home (a table holds up to 80% of
// its slots, so a key is often a slot or two past its home).
func probeRecord(t []uint64, tag uint32) (int, bool) {
	p := home(tag, len(t))
	for range 8 {
		slot := t[p]
		if slot == 0 {
			return 0, false
		}
		if slot != moved && slotTag(slot) == tag {
			return slotOff(slot), true
		}
		p = next(p, len(t))
	}
	return 0, false
}

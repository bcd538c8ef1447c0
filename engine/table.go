package engine

import "bytes"

// The key table of a shard: open addressing with linear probing over
// 8-byte slots, each holding a 32-bit hash tag and a slab index + 1
// (0 is an empty slot). Key bytes live in one per-shard arena, referenced
// by the slab entry. No per-key allocation and no pointers: the garbage
// collector never scans the keyspace, and a lookup touches the slot array,
// the entry and the key bytes, nothing else.
//
// Deletion shifts later slots of the same probe run back (no tombstones),
// so probe runs stay short at any churn.

const minSlots = 16

func slotTag(slot uint64) uint32 { return uint32(slot >> 32) }

// findLocked returns the slab index of key (hash h), if present.
func (s *shard) findLocked(h uint64, key []byte) (uint32, bool) {
	if len(s.slots) == 0 {
		return 0, false
	}
	mask := uint64(len(s.slots) - 1)
	tag := uint32(h)
	for p := uint64(tag) & mask; ; p = (p + 1) & mask {
		slot := s.slots[p]
		if slot == 0 {
			return 0, false
		}
		if slotTag(slot) == tag {
			i := uint32(slot) - 1
			if bytes.Equal(s.keyLocked(i), key) {
				return i, true
			}
		}
	}
}

// keyLocked is slab entry i's key bytes (valid until the arena changes).
func (s *shard) keyLocked(i uint32) []byte {
	e := &s.slab[i]
	return s.arena[e.keyOff : e.keyOff+e.keyLen : e.keyOff+e.keyLen]
}

// placeLocked puts slab index i (hash tag tag) into the slot table.
func (s *shard) placeLocked(tag uint32, i uint32) {
	if (s.count+1)*4 > len(s.slots)*3 { // load factor at most 3/4
		s.resizeLocked(max(minSlots, 2*len(s.slots)))
	}
	mask := uint64(len(s.slots) - 1)
	p := uint64(tag) & mask
	for s.slots[p] != 0 {
		p = (p + 1) & mask
	}
	s.slots[p] = uint64(tag)<<32 | uint64(i+1)
	s.count++
}

// unplaceLocked removes slab index i (hash tag tag) from the slot table,
// shifting back the slots after it that belong earlier in the run.
func (s *shard) unplaceLocked(tag uint32, i uint32) {
	mask := uint64(len(s.slots) - 1)
	want := uint64(tag)<<32 | uint64(i+1)
	p := uint64(tag) & mask
	for s.slots[p] != want {
		p = (p + 1) & mask
	}
	for q := (p + 1) & mask; s.slots[q] != 0; q = (q + 1) & mask {
		ideal := uint64(slotTag(s.slots[q])) & mask
		// Move q back to the hole at p unless its ideal position lies
		// cyclically in (p, q].
		if (q > p && (ideal <= p || ideal > q)) || (q < p && ideal <= p && ideal > q) {
			s.slots[p] = s.slots[q]
			p = q
		}
	}
	s.slots[p] = 0
	s.count--
}

// resizeLocked rebuilds the slot table with n slots (a power of two).
func (s *shard) resizeLocked(n int) {
	old := s.slots
	s.slots = make([]uint64, n)
	mask := uint64(n - 1)
	for _, slot := range old {
		if slot == 0 {
			continue
		}
		p := uint64(slotTag(slot)) & mask
		for s.slots[p] != 0 {
			p = (p + 1) & mask
		}
		s.slots[p] = slot
	}
}

// slotsFor is the table size for n keys: a power of two, load <= 1/2.
func slotsFor(n int) int {
	size := minSlots
	for size < 2*n {
		size *= 2
	}
	return size
}

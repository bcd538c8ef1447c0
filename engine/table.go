package engine

import "unsafe"

// The key table of a shard: open addressing with linear probing over
// 8-byte slots, each holding a 28-bit hash tag and the offset + 1 of the
// key's record in the shard's data region (0 is an empty slot). No per-key
// allocation and no pointers: a lookup touches one slot and one record
// (the key bytes and the state sit together), nothing else.
//
// Deletion shifts later slots of the same probe run back (no tombstones),
// so probe runs stay short at any churn.
const (
	minSlots = 16
	tagBits  = 28
	offBits  = 64 - tagBits // record offsets below 64 GiB per shard
	offMask  = 1<<offBits - 1
)

func slotTag(slot uint64) uint32 { return uint32(slot >> offBits) }
func slotOff(slot uint64) int    { return int(slot&offMask) - 1 }
func tagOf(h uint64) uint32      { return uint32(h) & (1<<tagBits - 1) }
func makeSlot(tag uint32, off int) uint64 {
	return uint64(tag)<<offBits | uint64(off+1)
}

// findLocked returns the record offset of key (hash h), if present, and
// the offset of the record's state (just past the key).
func (s *shard) findLocked(h uint64, key []byte) (off, state int, ok bool) {
	if len(s.slots) == 0 {
		return 0, 0, false
	}
	mask := uint64(len(s.slots) - 1)
	tag := tagOf(h)
	for p := uint64(tag) & mask; ; p = (p + 1) & mask {
		slot := s.slots[p]
		if slot == 0 {
			return 0, 0, false
		}
		if slotTag(slot) == tag {
			off := slotOff(slot)
			kl, i := uvarint(s.data, off+1)
			if int(kl) == len(key) && string(s.data[i:i+int(kl)]) == string(key) {
				return off, i + int(kl), true
			}
		}
	}
}

// slotIndexLocked returns the table index holding the record at off (hash
// tag tag), which must be in the table.
func (s *shard) slotIndexLocked(tag uint32, off int) uint64 {
	mask := uint64(len(s.slots) - 1)
	want := makeSlot(tag, off)
	p := uint64(tag) & mask
	for s.slots[p] != want {
		p = (p + 1) & mask
	}
	return p
}

// placeLocked puts the record at off (hash tag tag) into the table.
func (s *shard) placeLocked(tag uint32, off int) {
	if (s.count+1)*4 > len(s.slots)*3 { // load factor at most 3/4
		s.resizeLocked(max(minSlots, 2*len(s.slots)))
	}
	mask := uint64(len(s.slots) - 1)
	p := uint64(tag) & mask
	for s.slots[p] != 0 {
		p = (p + 1) & mask
	}
	s.slots[p] = makeSlot(tag, off)
	s.count++
}

// unplaceLocked removes the record at off (hash tag tag) from the table,
// shifting back the slots after it that belong earlier in the run.
func (s *shard) unplaceLocked(tag uint32, off int) {
	mask := uint64(len(s.slots) - 1)
	p := s.slotIndexLocked(tag, off)
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

// resizeLocked rebuilds the table with n slots (a power of two).
func (s *shard) resizeLocked(n int) {
	old, oldRegion := s.slots, s.mem.slots
	s.setSlots(n)
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
	freeRegion(oldRegion)
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

// slotsFor is the table size for n keys: a power of two, load <= 1/2.
func slotsFor(n int) int {
	size := minSlots
	for size < 2*n {
		size *= 2
	}
	return size
}

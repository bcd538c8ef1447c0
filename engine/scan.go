package engine

import "math/bits"

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

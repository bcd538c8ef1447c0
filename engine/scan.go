package engine

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
	s.liveLocked(now, func(p parsed) { fn(KeyInfo{Key: string(p.key), Kind: p.e.kind}) })
}

// ScanPosBits is how many low bits of a ScanSlots position are used.
const ScanPosBits = tagBits

// ScanSlots calls fn for live keys of shard i starting at position pos (0
// for the shard's start), visiting whole table buckets until count live
// keys were seen, and returns the position to resume at, or -1 when the
// shard is exhausted. A position is a hash tag: the walk visits the keys
// in the order of their tags, a bucket (the tags whose home is one slot)
// at a time. Homes keep the tags' order under every table size (home), so
// a key present for the whole walk is seen at least once however the
// table grows or shrinks meanwhile, and the walk ends. Any position is
// valid. fn runs under the shard lock and must not call the Store.
func (st Store) ScanSlots(i int, pos int64, count int, now int64, fn func(KeyInfo)) int64 {
	s := st.e.shards[i]
	st.lock(s)
	defer st.unlock(s)
	if len(s.slots) == 0 {
		return -1
	}
	// While entries move between two tables (s.old, the smaller while
	// the table grows, the larger while it shrinks), a key is in either:
	// visit both, a bucket of the smaller one at a time, as Redis scans
	// both tables of a rehash.
	small := len(s.slots)
	if s.old != nil {
		small = min(small, len(s.old))
	}
	lo := uint64(pos) & (1<<tagBits - 1)
	for n := 0; ; {
		// hi: the first tag past lo's bucket in the smaller table.
		b := uint64(home(uint32(lo), small))
		hi := ((b+1)<<tagBits + uint64(small) - 1) / uint64(small)
		n += s.scanTags(s.slots, lo, hi, now, fn)
		if s.old != nil {
			n += s.scanTags(s.old, lo, hi, now, fn)
		}
		if hi >= 1<<tagBits {
			return -1
		}
		lo = hi
		if n >= count {
			return int64(lo)
		}
	}
}

// scanTags calls fn for the live keys of table t whose tags are in
// [lo, hi) and returns how many. Their homes span [home(lo), home(hi-1)];
// with linear probing each sits in the run of occupied slots from its
// home on, so the walk goes from the first home past the last one to the
// end of its run.
func (s *shard) scanTags(t []uint64, lo, hi uint64, now int64, fn func(KeyInfo)) int {
	n := len(t)
	from := home(uint32(lo), n)
	span := home(uint32(hi-1), n) - from
	seen := 0
	for k, p := 0, from; k < n && (k <= span || t[p] != 0); k, p = k+1, next(p, n) {
		slot := t[p]
		if slot == 0 || slot == moved {
			continue
		}
		if tag := uint64(slotTag(slot)); tag < lo || tag >= hi {
			continue
		}
		if r := parseRecord(s.data, slotOff(slot)); r.e.alive(now) {
			fn(KeyInfo{Key: string(r.key), Kind: r.e.kind})
			seen++
		}
	}
	return seen
}

package engine

import "github.com/rlserver/rlserver/internal/sat"

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

// Life is how long a key has to live.
type Life struct {
	Found   bool  // the key exists
	Forever bool  // it has no expiry
	Ms      int64 // else: ms left (Redis's expire_ms - now_ms for CL.THROTTLE; until the state is fresh, rounded up, for RL.*)
}

// Life returns how long key has to live at now.
func (st Store) Life(key []byte, now int64) Life {
	s, h := st.e.shardOf(key)
	st.lock(s)
	defer st.unlock(s)
	_, e, _, ok := s.lookupLocked(h, key, now)
	switch {
	case !ok:
		return Life{}
	case e.deadline == never:
		return Life{Found: true, Forever: true}
	}
	if life := algorithmOf(e.kind).lifeMs; life != nil {
		return Life{Found: true, Ms: life(e, now)}
	}
	return Life{Found: true, Ms: ceilDiv(e.deadline-now, 1_000_000)}
}

// deadlineAfter is now + wait, capped below never: a key that becomes fresh
// only centuries from now still expires (in 2262, as far as ns reach).
func deadlineAfter(now, wait int64) int64 { return min(sat.Add(now, wait), maxDeadline) }

func ceilDiv(a, b int64) int64 { return (a + b - 1) / b }

// MemoryUsage estimates the bytes key occupies (MEMORY USAGE): key bytes,
// its index slot and its state. 0 and false for a missing key.
func (st Store) MemoryUsage(key []byte, now int64) (int64, bool) {
	s, h := st.e.shardOf(key)
	st.lock(s)
	defer st.unlock(s)
	off, _, tail, ok := s.lookupLocked(h, key, now)
	if !ok {
		return 0, false
	}
	end := recordEnd(s.data, tail)
	// The record (key, state, log) and its share of the table: the
	// shard's slot bytes over its keys, 10-12.5 for a mapped table (it
	// holds 64-80% of its slots), at most 16 (a load of 1/2) so a few
	// keys are not each charged a whole small table.
	return int64(end-off) + int64(min((8*len(s.slots)+s.count-1)/max(s.count, 1), 16)), true
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

// Kinds counts the keys held by kind (indexed by Kind), expired ones
// not yet swept included, as Len counts them.
func (st Store) Kinds() (n [8]int) {
	for _, s := range st.e.shards {
		st.lock(s)
		for k, c := range s.kinds {
			n[k] += c
		}
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

// Flush removes every key, and tells OnChange's function so (a nil key).
func (st Store) Flush() {
	if f := st.e.changed.Load(); f != nil {
		defer (*f)(nil) // once the shards are unlocked
	}
	if !st.held {
		st.e.cut.RLock()
		defer st.e.cut.RUnlock()
	}
	for _, s := range st.e.shards {
		st.lock(s)
		s.mem.release()
		s.slots, s.count, s.data, s.garbage = nil, 0, nil, 0
		s.kinds = [8]int{}
		s.old, s.migrated = nil, 0
		s.compacting, s.sweepAt = false, 0
		s.relFrom, s.relTo = 0, 0
		s.flushedLocked()
		st.unlock(s)
	}
}

// Fill readies an empty engine for about keys keys and runs fn, which
// fills it (a load at start, a replica installing a full sync): each
// empty shard first gets a table for its share, at the load a grown table
// has, so the fill moves no table and none of its lookups probes an old
// table and a new one as while a table moves. A shard that holds anything
// is left as it is. keys is a hint: more keys grow a shard as usual. No
// sweep shrinks a table while fn runs (the tables are empty at first);
// after it, the sweep gives back a table that fewer keys left mostly
// empty (shrinkLocked). Safe for concurrent use.
func (e *Engine) Fill(keys int, fn func()) {
	e.filling.Add(1)
	defer e.filling.Add(-1)
	e.expect(keys)
	fn()
}

// expect gives each empty shard a table for its share of keys (Fill).
func (e *Engine) expect(keys int) {
	n := len(e.shards)
	per := keys/n + keys/n/8 + 16 // the hash spreads keys unevenly
	want := tableSize(per * maxLoadDen / maxLoadNum)
	for _, s := range e.shards {
		s.mu.Lock()
		if s.count == 0 && len(s.data) == 0 && s.old == nil && want > len(s.slots) {
			s.retireLocked(s.mem.slots)
			s.setSlots(want)
		}
		s.mu.Unlock()
	}
}

// State appends key's kind and its record's state (deadline, body and
// runs, as stored) to dst, and reports whether the key lives at now. Two
// calls that append the same bytes saw the key as it was: WATCH compares
// them at EXEC. A write that leaves the key byte for byte as it was is
// not told apart from none.
func (st Store) State(key []byte, now int64, dst []byte) ([]byte, bool) {
	s, h := st.e.shardOf(key)
	st.lock(s)
	defer st.unlock(s)
	off, e, tail, ok := s.lookupLocked(h, key, now)
	if !ok {
		return dst, false
	}
	kl, i := uvarint(s.data, off+1)
	return append(append(dst, byte(e.kind)), s.data[i+int(kl):tail]...), true
}

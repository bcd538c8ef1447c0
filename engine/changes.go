package engine

// Record is one key's absolute state, the unit that persistence and
// replication carry: "key K holds state S" (Kind != KindNone) or "key K is
// gone" (Kind == KindNone). Applying a record twice is harmless. Deadline
// is in Unix ns; A, B, C are the algorithm's state words; Log holds
// RL.LOG's entries (B, a slot number, is meaningless outside a process).
type Record struct {
	Key      string
	Kind     Kind
	Deadline int64
	A, B, C  int64
	Log      []int64
}

// recordOf turns a parsed record into the Record persistence carries.
func recordOf(p parsed) Record {
	e := p.e
	r := Record{Key: string(p.key), Kind: e.kind, Deadline: e.deadline, A: e.a, B: e.b, C: e.c}
	if e.kind == KindLog {
		r.Log = decodeRuns(nil, uint64(e.deadline), p.runs)
		r.B = 0 // the oldest run's time, derived from the log
	}
	return r
}

// TrackChanges turns on change tracking, which Changes reads. Call it
// before serving; memory-only servers never do, and pay nothing.
func (e *Engine) TrackChanges() {
	for _, s := range e.shards {
		s.mu.Lock()
		s.track = true
		s.mu.Unlock()
	}
}

// Changes passes fn every change since the previous call, shard by shard
// (each shard locked only while its changes are collected): a deletion
// record for each key removed, then the current record of each key
// written. flushed reports that some shard was flushed (FLUSHALL) since
// the previous call: the receiver must drop everything it holds before
// applying the records. The records own their memory.
func (e *Engine) Changes(fn func(Record)) (flushed bool) {
	var recs []Record
	for _, s := range e.shards {
		recs = recs[:0]
		s.mu.Lock()
		flushed = flushed || s.flushed
		for _, k := range s.deleted {
			recs = append(recs, Record{Key: k})
		}
		for _, tag := range s.dirty {
			// Every record of the tag's probe runs (in both tables while
			// entries move) with the dirty bit: the listed record
			// (unless it went, or was reported already) and any other of
			// the same tag, whose report is early but harmless.
			for _, t := range [2][]uint64{s.slots, s.old} {
				if len(t) == 0 {
					continue
				}
				mask := uint64(len(t) - 1)
				for p := uint64(tag) & mask; t[p] != 0; p = (p + 1) & mask {
					if slotTag(t[p]) != tag || t[p] == moved {
						continue
					}
					if off := slotOff(t[p]); s.data[off]&hdrDirty != 0 {
						s.data[off] &^= hdrDirty
						recs = append(recs, recordOf(parseRecord(s.data, off)))
					}
				}
			}
		}
		s.pending.Add(-s.nPending)
		s.deleted, s.dirty, s.nPending, s.flushed = nil, s.dirty[:0], 0, false
		s.mu.Unlock()
		for _, r := range recs {
			fn(r)
		}
	}
	return flushed
}

// PendingChanges counts the changes Changes would report now (a key
// changed several times counts once; deletions count each).
// It takes no lock (a counter kept as changes are tracked), so it may be
// called while shards are locked (INFO inside EXEC).
func (e *Engine) PendingChanges() int { return int(e.pending.Load()) }

// Dump passes fn the record of every live key (a full snapshot or a full
// resynchronisation), shard by shard.
func (e *Engine) Dump(now int64, fn func(Record)) {
	var recs []Record
	for _, s := range e.shards {
		recs = recs[:0]
		s.mu.Lock()
		for off := 0; off < len(s.data); {
			p := parseRecord(s.data, off)
			if p.hdr&hdrDead == 0 && p.e.alive(now) {
				recs = append(recs, recordOf(p))
			}
			off = p.end
		}
		s.mu.Unlock()
		for _, r := range recs {
			fn(r)
		}
	}
}

// Restore applies a record as it is (a loaded snapshot, a replicated
// change): it does not mark the key changed. A record already expired at
// now, or a deletion, removes the key. It reports whether the key is held
// afterwards.
func (e *Engine) Restore(r Record, now int64) bool {
	key := []byte(r.Key)
	s, h := e.shardOf(key)
	s.mu.Lock()
	defer s.mu.Unlock()
	off, _, ok := s.findLocked(h, key)
	oldEnd := 0
	if ok {
		oldEnd = parseRecord(s.data, off).end
	}
	// Applying a record is not a change of ours: nothing is marked, and
	// the changes that are ours stay listed.
	s.quiet = true
	defer func() { s.quiet = false }()
	if r.Kind == KindNone || now >= r.Deadline {
		if ok {
			s.removeLocked(off, tagOf(h))
		}
		return false
	}
	en := entry{kind: r.Kind, deadline: r.Deadline, a: r.A, b: r.B, c: r.C}
	if r.Kind == KindLog {
		en.b, en.c = int64(logOldest(r.Log)), 0
	}
	var runs []byte
	if r.Kind == KindLog {
		runs = appendRuns(nil, uint64(r.Deadline), r.Log)
	}
	s.putLocked(off, oldEnd, h, key, en, runs)
	return true
}

package engine

import (
	"errors"
	"sync"
)

// Record is one key's absolute state, the unit that persistence and
// replication carry: "key K holds state S" (Kind != KindNone) or "key K is
// gone" (Kind == KindNone). Applying a record twice is harmless. Deadline
// is in Unix ns. A, B, C are the state in its storage form: the three
// words each algorithm's file names in its state type (fixedState in
// fixed.go, and so on). Log holds the run log of a kind with one
// (RL.LOG, a lease key), oldest first; B, derived from it, is 0 in such
// a record. For RL.BUCKET and RL.FIXED, Log is the reservations' section
// when the key has one (sectionLog in reserve.go), else empty.
type Record struct {
	Key      string
	Kind     Kind
	Deadline int64
	A, B, C  int64
	Log      []int64
}

// ErrState is DecodeState's error: bytes that are not one state in the
// engine's layout.
var ErrState = errors.New("engine: malformed record state")

// DecodeState returns the Record of key holding state, a live record of
// kind in the engine's own layout (what an Encoder is given), or key's
// deletion when kind is KindNone and state is empty. The Record owns its
// memory. state comes from another process (a primary's stream), so it is
// checked: bytes that are not exactly one state give ErrState, never a
// panic.
func DecodeState(key string, kind Kind, state []byte) (r Record, err error) {
	if kind != KindNone || len(state) != 0 {
		err = decodeStateInto(&r, kind, state)
	}
	r.Key = key
	return r, err
}

// decodeStateInto makes *r the Record of a live state of kind, but for
// its key, reusing r.Log; on ErrState *r is zero.
func decodeStateInto(r *Record, kind Kind, state []byte) (err error) {
	if !kind.Known() || len(state) < 8 {
		*r = Record{}
		return ErrState
	}
	// The layout's decoders trust their input, as they trust the
	// engine's memory: a malformed state runs them out of bounds, which
	// is recovered here.
	defer func() {
		if recover() != nil {
			*r, err = Record{}, ErrState
		}
	}()
	e, runs, end := decodeState(state, 0, kind)
	if end != len(state) {
		*r = Record{}
		return ErrState
	}
	p := parsed{hdr: byte(kind), e: e}
	if runs != 0 {
		n, j := uvarint(state, runs)
		p.runs = state[j : j+int(n) : j+int(n)]
	}
	fillRecord(r, p)
	return nil
}

// recordOf turns a parsed record into the Record persistence carries.
func recordOf(p parsed) Record {
	var r Record
	fillRecord(&r, p)
	r.Key = string(p.key)
	return r
}

// fillRecord makes r the Record of a parsed record, but for its key,
// reusing r.Log.
func fillRecord(r *Record, p parsed) {
	e := p.e
	*r = Record{Kind: e.kind, Deadline: e.deadline, A: e.w.a, B: e.w.b, C: e.w.c, Log: r.Log[:0]}
	if a := algorithmOf(e.kind); a.hasRuns {
		r.Log = a.toLog(r.Log, uint64(e.deadline), e.w, p.runs)
		r.B = 0 // derived from the log (RL.LOG's oldest time; a lease key has none)
	} else if p.runs != nil { // a section (reserve.go)
		r.Log = sectionLog(r.Log, decodeSection(p.runs, uint64(e.deadline), nil))
	}
}

// liveLocked passes fn every live key's record in s at now, parsed in
// place, in the order the records lie. s.mu must be held.
func (s *shard) liveLocked(now int64, fn func(parsed)) {
	for off := 0; off < len(s.data); {
		p := parseRecord(s.data, off)
		if p.hdr&hdrDead == 0 && p.e.alive(now) {
			fn(p)
		}
		off = p.end
	}
}

// Dump passes fn the record of every live key (a full snapshot or a full
// resynchronisation), shard by shard.
func (e *Engine) Dump(now int64, fn func(Record)) {
	e.cut.Lock()
	defer e.cut.Unlock()
	var recs []Record
	for _, s := range e.shards {
		recs = recs[:0]
		s.mu.Lock()
		s.liveLocked(now, func(p parsed) { recs = append(recs, recordOf(p)) })
		s.mu.Unlock()
		for _, r := range recs {
			fn(r)
		}
	}
}

// Restore applies a record as it is (a loaded snapshot): it does not mark
// the key changed for any feed. A record already expired at now, or a
// deletion, removes the key. It reports whether the key is held
// afterwards.
func (e *Engine) Restore(r Record, now int64) bool { return e.apply(r, now, true) }

// Apply is Restore for a record that must reach the feeds (a replica
// applying its primary's stream, which its own snapshots must keep): the
// key is marked changed, or its deletion listed, as a decision would.
func (e *Engine) Apply(r Record, now int64) bool { return e.apply(r, now, false) }

func (e *Engine) apply(r Record, now int64, quiet bool) bool {
	en := entry{kind: r.Kind, deadline: r.Deadline, w: words{r.A, r.B, r.C}}
	var runs []byte
	if r.Kind == KindNone || now >= r.Deadline {
		en = entry{} // a deletion
	} else if a := algorithmOf(r.Kind); a.hasRuns {
		en.w, runs = a.fromLog(nil, uint64(r.Deadline), en.w, r.Log)
	} else if rv := sectionOfLog(r.Log); rv.last != 0 && reserves(r.Kind) {
		runs = appendSection(nil, uint64(r.Deadline), rv)
	}
	return e.put([]byte(r.Key), en, runs, now, quiet)
}

// put stores en (with its runs or section) as key's record, or removes
// key when en is expired at now or zero (KindNone). quiet marks nothing
// for the feeds (Restore). It reports whether the key is held afterwards.
func (e *Engine) put(key []byte, en entry, runs []byte, now int64, quiet bool) bool {
	s, h := e.shardOf(key)
	s.mu.Lock()
	defer s.mu.Unlock()
	off, _, ok := s.findLocked(h, key)
	oldEnd := 0
	if ok {
		oldEnd = parseRecord(s.data, off).end
	}
	// A restored record is not a change of ours: nothing is marked, and
	// the changes that are ours stay listed.
	s.quiet = quiet
	defer func() { s.quiet = false }()
	if en.kind == KindNone || now >= en.deadline {
		if ok {
			s.removeLocked(off, tagOf(h))
		}
		return false
	}
	s.putLocked(off, oldEnd, h, key, en, runs)
	return true
}

// ApplyState is Apply(DecodeState(key, kind, state), now): a replica
// applying a change its primary sent in the engine's own layout. The
// state is checked as DecodeState checks it (ErrState, and nothing
// changes). A state of words alone (CL.THROTTLE, RL.FIXED, RL.SLIDE,
// RL.BUCKET without reservations: most of a stream) is stored as it was
// decoded, with no Record between. One with runs (RL.LOG, a lease key)
// takes Apply's path, decoding the runs into a log and encoding them
// anew, in buffers kept for the next (statePool). Neither allocates once
// the buffers have grown. A section (reservations) takes Apply's path as
// it is. key is only read.
func (e *Engine) ApplyState(key []byte, kind Kind, state []byte, now int64) (held bool, err error) {
	if kind == KindNone && len(state) == 0 {
		return e.put(key, entry{}, nil, now, false), nil
	}
	en, runs, err := stateWords(kind, state)
	switch {
	case err != nil:
		return false, err
	case runs && algorithmOf(kind).hasRuns:
		return e.applyRuns(key, kind, state, now)
	case runs:
		r, err := DecodeState(string(key), kind, state)
		if err != nil {
			return false, err
		}
		return e.apply(r, now, false), nil
	}
	return e.put(key, en, nil, now, false), nil
}

// stateScratch is applyRuns's buffers: a state's log as Record.Log
// carries it, and its runs encoded anew.
type stateScratch struct {
	log  []int64
	runs []byte
}

// statePool keeps applyRuns's buffers from one call to the next.
var statePool = sync.Pool{New: func() any { return new(stateScratch) }}

// applyRuns is ApplyState for a state with runs: apply(DecodeState(...))
// with the Record's log and the runs in pooled buffers.
func (e *Engine) applyRuns(key []byte, kind Kind, state []byte, now int64) (bool, error) {
	sc := statePool.Get().(*stateScratch)
	defer statePool.Put(sc)
	r := Record{Log: sc.log[:0]}
	if err := decodeStateInto(&r, kind, state); err != nil {
		return false, err
	}
	sc.log = r.Log[:0]
	if now >= r.Deadline {
		return e.put(key, entry{}, nil, now, false), nil
	}
	en := entry{kind: r.Kind, deadline: r.Deadline, w: words{r.A, r.B, r.C}}
	en.w, sc.runs = algorithmOf(kind).fromLog(sc.runs[:0], uint64(r.Deadline), en.w, r.Log)
	return e.put(key, en, sc.runs, now, false), nil
}

// CheckState reports whether DecodeState would take state (ErrState if
// not), building a Record only for a state with runs or a section.
func CheckState(kind Kind, state []byte) error {
	if kind == KindNone && len(state) == 0 {
		return nil
	}
	_, runs, err := stateWords(kind, state)
	if err == nil && runs {
		_, err = DecodeState("", kind, state)
	}
	return err
}

// stateWords decodes a live state's words as DecodeState does, and
// reports whether runs or a section follow them (not decoded here).
func stateWords(kind Kind, state []byte) (en entry, runs bool, err error) {
	if !kind.Known() || len(state) < 8 {
		return entry{}, false, ErrState
	}
	defer func() { // see DecodeState
		if recover() != nil {
			en, runs, err = entry{}, false, ErrState
		}
	}()
	en, at, end := decodeState(state, 0, kind)
	if end != len(state) {
		return entry{}, false, ErrState
	}
	return en, at != 0, nil
}

// Take removes every live key that match selects and returns their
// records: a slot range leaving this node for another shard. Deletions
// reach the feeds (replicas and snapshots drop the keys too). The caller
// keeps commands off those keys meanwhile.
func (e *Engine) Take(now int64, match func(key []byte) bool) []Record {
	var out []Record
	for _, s := range e.shards {
		s.mu.Lock()
		s.liveLocked(now, func(p parsed) {
			if match(p.key) {
				out = append(out, recordOf(p))
			}
		})
		s.mu.Unlock()
	}
	for _, r := range out {
		e.apply(Record{Key: r.Key}, now, false)
	}
	return out
}

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
func DecodeState(key string, kind Kind, state []byte) (Record, error) {
	if kind == KindNone && len(state) == 0 {
		return Record{Key: key}, nil
	}
	en, runs, err := parseState(kind, state)
	var r Record
	if err == nil {
		err = fillChecked(&r, en, runs)
	}
	if err != nil {
		return Record{Key: key}, err
	}
	r.Key = key
	return r, nil
}

// The layout's decoders trust their input, as they trust the engine's
// memory: a malformed state runs them out of bounds. parseState and
// fillChecked recover that as ErrState.

// parseState parses a live state of kind: its words, and its runs or
// section (nil if none), not yet decoded.
func parseState(kind Kind, state []byte) (en entry, runs []byte, err error) {
	if !kind.Known() || len(state) < 8 {
		return entry{}, nil, ErrState
	}
	defer func() {
		if recover() != nil {
			en, runs, err = entry{}, nil, ErrState
		}
	}()
	en, at, tail := decodeState(state, 0, kind)
	if tail != len(state) {
		return entry{}, nil, ErrState
	}
	if at != 0 {
		n, j := uvarint(state, at)
		runs = state[j : j+int(n) : j+int(n)]
	}
	return en, runs, nil
}

// fillChecked is fillRecord for a state parseState parsed, whose runs or
// section may still be malformed, or hold what Record.Log has no form
// for (an RL.LOG run before time 0: decodeRuns).
func fillChecked(r *Record, en entry, runs []byte) (err error) {
	defer func() {
		if recover() != nil {
			err = ErrState
		}
	}()
	if !fillRecord(r, parsed{hdr: byte(en.kind), e: en, runs: runs}) {
		return ErrState
	}
	return nil
}

// recordOf turns a parsed record into the Record persistence carries.
// The engine's own records always have a form (fillRecord).
func recordOf(p parsed) Record {
	var r Record
	fillRecord(&r, p)
	r.Key = string(p.key)
	return r
}

// fillRecord makes r the Record of a parsed record, but for its key,
// reusing r.Log. It reports false if the record's runs have no form in
// Record.Log (toLog), which only a state from outside can hold.
func fillRecord(r *Record, p parsed) bool {
	e := p.e
	*r = Record{Kind: e.kind, Deadline: e.deadline, A: e.w.a, B: e.w.b, C: e.w.c, Log: r.Log[:0]}
	if a := algorithmOf(e.kind); a.hasRuns {
		var ok bool
		r.Log, ok = a.toLog(r.Log, uint64(e.deadline), e.w, p.runs)
		r.B = 0 // derived from the log (RL.LOG's oldest time; a lease key has none)
		return ok
	}
	if p.runs != nil { // a section (reserve.go)
		var pends [16]pend // most lines are short: no allocation
		r.Log = sectionLog(r.Log, decodeSection(p.runs, uint64(e.deadline), pends[:0]))
	}
	return true
}

// liveLocked passes fn every live key's record in s at now, parsed in
// place, in the order the records lie. s.mu must be held.
func (s *shard) liveLocked(now int64, fn func(parsed)) {
	s.recordsLocked(func(p parsed, _ int) {
		if p.e.alive(now) {
			fn(p)
		}
	})
}

// recordsLocked passes fn every record in s that is not dead, expired
// ones included, parsed in place with its offset, in the order the
// records lie. fn may remove the record it is given (removeLocked marks
// it dead, in place). s.mu must be held.
func (s *shard) recordsLocked(fn func(p parsed, off int)) {
	for off := 0; off < len(s.data); {
		p := parseRecord(s.data, off)
		if p.hdr&hdrDead == 0 {
			fn(p, off)
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
	en, runs := storedForm(&r, now, nil)
	return e.put([]byte(r.Key), en, runs, quiet)
}

// storedForm returns the entry that stores r at now and its runs (an
// RL.LOG's log, a lease key's leases or a section, encoded onto dst),
// or a zero entry (KindNone) when r is a deletion or expired at now.
func storedForm(r *Record, now int64, dst []byte) (entry, []byte) {
	if r.Kind == KindNone || now >= r.Deadline {
		return entry{}, nil
	}
	en := entry{kind: r.Kind, deadline: r.Deadline, w: words{r.A, r.B, r.C}}
	if a := algorithmOf(r.Kind); a.hasRuns {
		en.w, dst = a.fromLog(dst, uint64(r.Deadline), en.w, r.Log)
		return en, dst
	}
	if reserves(r.Kind) && len(r.Log) >= 3 { // a section (sectionLog)
		var pends [16]pend // most lines are short: no allocation
		if rv := sectionOfLog(r.Log, pends[:0]); rv.last != 0 {
			return en, appendSection(dst, uint64(r.Deadline), rv)
		}
	}
	return en, nil
}

// put stores en (with its runs or section) as key's record, or removes
// key when en is zero (KindNone). quiet marks nothing for the feeds
// (Restore). It reports whether the key is held afterwards.
func (e *Engine) put(key []byte, en entry, runs []byte, quiet bool) bool {
	if f := e.changed.Load(); f != nil && !quiet {
		defer (*f)(key) // once the shard is unlocked
	}
	s, h := e.shardOf(key)
	s.mu.Lock()
	defer s.mu.Unlock()
	off, _, ok := s.findLocked(h, key)
	oldTail := 0
	if ok {
		oldTail = parseHead(s.data, off).tail
	}
	// A restored record is not a change of ours: nothing is marked, and
	// the changes that are ours stay listed.
	s.wholeNextLocked() // not a decision: no delta from what a feed last read
	s.quiet = quiet
	defer func() { s.quiet = false }()
	if en.kind == KindNone {
		if ok {
			s.removeLocked(off, tagOf(h))
		}
		return false
	}
	s.putLocked(off, oldTail, h, key, en, runs)
	return true
}

// ApplyState is Apply(DecodeState(key, kind, state), now): a replica
// applying a change its primary sent in the engine's own layout, with
// DecodeState's check (ErrState, and nothing changes), and the key only
// read. A state of words alone (CL.THROTTLE, RL.FIXED, RL.SLIDE,
// RL.BUCKET without reservations: most of a stream) is stored as parsed,
// with no Record between (a Record there cost a quarter of the apply).
// One with runs or a section takes Apply's path without the key, its
// log decoded and encoded anew in buffers kept from one call to the next
// (statePool). Neither allocates once the buffers have grown (a line of
// more than 16 reservations aside).
func (e *Engine) ApplyState(key []byte, kind Kind, state []byte, now int64) (held bool, err error) {
	if kind == KindNone && len(state) == 0 {
		return e.put(key, entry{}, nil, false), nil
	}
	en, runs, err := parseState(kind, state)
	switch {
	case err != nil:
		return false, err
	case runs == nil:
		if now >= en.deadline {
			en = entry{} // expired: a deletion, as storedForm has it
		}
		return e.put(key, en, nil, false), nil
	}
	sc := statePool.Get().(*stateScratch)
	defer statePool.Put(sc)
	r := Record{Log: sc.log[:0]}
	if err := fillChecked(&r, en, runs); err != nil {
		return false, err
	}
	en, runs = storedForm(&r, now, sc.runs[:0])
	sc.log, sc.runs = r.Log[:0], runs[:0]
	return e.put(key, en, runs, false), nil
}

// CheckState reports whether ApplyState would take state: nil if it
// would, ErrState (as ApplyState returns it) if not. It stores nothing.
// A replica checks a whole unit of its primary's stream before applying
// any of it, so a unit with one bad state leaves none of its changes
// applied (an RL.ALL call's records travel in one unit). A state of words
// alone is parsed once, an RL.LOG's runs walked once (countRuns); a lease
// key's runs or a section are decoded too, in ApplyState's pooled
// buffers, so it allocates nothing once they have grown.
//
// If c is not nil, CheckState sets it to what ApplyChecked needs to
// store a state of words alone (or a deletion) without parsing it again:
// a replica parsed each such state twice, once to check its unit and
// once to apply it. Other states leave it zero. It fills c in place:
// returning a Checked by value, or setting it in a deferred call, made
// the check 8-20 ns dearer (31 ns a state of words).
func CheckState(kind Kind, state []byte, c *Checked) error {
	if c != nil {
		*c = Checked{}
	}
	if kind == KindNone && len(state) == 0 {
		if c != nil {
			c.parsed = true
		}
		return nil
	}
	en, runs, err := parseState(kind, state)
	if err != nil {
		return err
	}
	if runs == nil {
		if c != nil {
			c.en, c.parsed = en, true
		}
		return nil
	}
	if kind == KindLog {
		return checkLogRuns(uint64(en.deadline), runs)
	}
	sc := statePool.Get().(*stateScratch)
	defer statePool.Put(sc)
	r := Record{Log: sc.log[:0]}
	err = fillChecked(&r, en, runs)
	sc.log = r.Log[:0]
	return err
}

// Checked is what CheckState found in a state it took. For a state of
// words alone or a deletion it holds the entry to store; otherwise it
// is zero, and ApplyChecked parses the state again (its runs or section
// are decoded and encoded anew as they are stored). 48 bytes: a replica
// keeps one per record of a unit between its check and its apply.
type Checked struct {
	en     entry
	parsed bool // en is the state (entry{} for a deletion)
}

// ApplyChecked is ApplyState(key, kind, state, now) for a state whose
// CheckState filled c (or the zero Checked, for one it did not run on). A state of words alone or a deletion is stored as c holds it,
// without its parse; kind and state must be those CheckState took.
func (e *Engine) ApplyChecked(key []byte, kind Kind, state []byte, c Checked, now int64) (held bool, err error) {
	if !c.parsed {
		return e.ApplyState(key, kind, state, now)
	}
	en := c.en
	if now >= en.deadline {
		en = entry{} // expired or a deletion, as ApplyState has it
	}
	return e.put(key, en, nil, false), nil
}

// checkLogRuns is fillChecked for an RL.LOG's runs without the log:
// decodeRuns' count pass, which reads every byte its second pass reads.
func checkLogRuns(dl uint64, runs []byte) (err error) {
	defer func() {
		if recover() != nil {
			err = ErrState
		}
	}()
	if _, ok := countRuns(dl, runs); !ok {
		return ErrState
	}
	return nil
}

// stateScratch is ApplyState's buffers: a state's log as Record.Log
// carries it, and its runs encoded anew.
type stateScratch struct {
	log  []int64
	runs []byte
}

// statePool keeps ApplyState's buffers from one call to the next.
var statePool = sync.Pool{New: func() any { return new(stateScratch) }}

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

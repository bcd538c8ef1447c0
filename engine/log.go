package engine

import (
	"encoding/binary"
	"slices"

	"github.com/rlserver/rlserver/internal/sat"
	"github.com/rlserver/rlserver/internal/zigzag"
)

// RL.LOG, the sliding window log: at most limit units in any interval of
// length window, the only exact one. It keeps the admission times of its units as runs, (time, units)
// pairs, one per distinct admission time, in its record, newest first:
//
//	uvarint n0 | dur(deadline - t0) | uvarint n1 | dur(t0 - t1) | ...
//
// (dur: appendDur, record.go; the first is the window, a round number).
//
// so the newest run's time is one varint away, an admission only
// rewrites the front (a new first run, the old first re-based on it) and
// moves the rest unchanged, and the runs that left the window are cut off
// the end. A cost-n admission is one run of a few bytes, never n entries.
//
// Outside the record (persistence's Record.Log) a log is a []int64 oldest
// first: a unit admitted alone is its time t (>= 0); n >= 2 units admitted
// at the same t are the pair -(t+1), n.

// logRunAt decodes the run at runs[i]; prev is the time of the run before
// it (the next newer one), or the deadline for the first.
func logRunAt(runs []byte, i int, prev uint64) (t uint64, n uint64, next int) {
	n, i = uvarint(runs, i)
	d, i := durAt(runs, i)
	return prev - uint64(d), n, i
}

// varintStart returns where the varint that ends just before end starts:
// a varint's last byte has its high bit clear and the others set, so a run
// of varints can be walked backwards too.
func varintStart(b []byte, end int) int {
	i := end - 1
	for i > 0 && b[i-1] >= 0x80 {
		i--
	}
	return i
}

// logState is an RL.LOG key's state: its runs (newest first, the first
// run's time relative to the deadline dl), the units they hold and the
// oldest run's time, which lets expired runs be cut off the end without
// walking the log. The zero value is fresh. In words, a is total, b
// oldest and c the last reservation's ticket (reserve.go; 0 if none);
// the runs are the record's own.
type logState struct {
	runs   []byte
	dl     uint64
	total  int64
	oldest uint64
}

func logOf(h held) logState {
	return logState{runs: h.runs, dl: uint64(h.deadline), total: h.w.a, oldest: uint64(h.w.b)}
}

var logAlgorithm = Algorithm{
	Kind: KindLog, Name: "log", hasRuns: true,
	// Body: units held | dur(deadline - oldest run's time) | ticket code |
	// byte length of the runs | runs. The ticket code is one byte, 0, for
	// a key with no reservation (c = 0); logTicketCode has the rest.
	encode: func(dst []byte, dl uint64, w words, runs []byte) []byte {
		dst = binary.AppendUvarint(dst, uint64(w.a))
		dst = appendDur(dst, int64(dl-uint64(w.b)))
		dst = binary.AppendUvarint(dst, logTicketCode(dl, w.c))
		dst = binary.AppendUvarint(dst, uint64(len(runs)))
		return append(dst, runs...)
	},
	decode: func(b []byte, i int, dl uint64) (w words, runs, end int) {
		var u uint64
		u, i = uvarint(b, i)
		w.a = int64(u)
		var d int64
		d, i = durAt(b, i)
		w.b = int64(dl - uint64(d))
		u, i = uvarint(b, i)
		w.c = logTicketOf(dl, u)
		runs = i
		u, i = uvarint(b, i)
		return w, runs, i + int(u)
	},
	// Only an admission stores the log: a rejected call or a peek leaves
	// it exactly as it was (even the entries it found expired under its
	// own window, which a later, longer window may count).
	decideRuns: logDecide,
	toLog: func(dst []int64, dl uint64, _ words, runs []byte) ([]int64, bool) {
		return decodeRuns(dst, dl, runs)
	},
	fromLog: func(dst []byte, dl uint64, w words, log []int64) (words, []byte) {
		w.b = int64(logOldest(log))
		return w, appendRuns(dst, dl, log)
	},
}

// logTicketCode encodes a log's last ticket c under deadline dl: 0 for
// none (c = 0), else x+1 with x = zz(dl - c), small for a ticket near the
// deadline. The one x that +1 would wrap (2^64-1) takes the code that
// c = 0 frees (zz(dl)+1, which cannot wrap: dl < 2^63), so every c
// round-trips.
func logTicketCode(dl uint64, c int64) uint64 {
	switch x := zigzag.Encode(int64(dl - uint64(c))); {
	case c == 0:
		return 0
	case x == ^uint64(0):
		return zigzag.Encode(int64(dl)) + 1
	default:
		return x + 1
	}
}

// logTicketOf decodes logTicketCode.
func logTicketOf(dl uint64, code uint64) int64 {
	if code == 0 {
		return 0
	}
	x := code - 1
	if x == zigzag.Encode(int64(dl)) {
		x = ^uint64(0)
	}
	return int64(dl - uint64(zigzag.Decode(x)))
}

// logDecide runs RL.LOG on the key's state cur (logOf names its parts).
// Units with t <= now-W have left the window. On admission it appends the
// new log's runs to dst and returns the new state; a rejected call or a
// peek changes nothing (admitted is false and next is cur). An admission
// costs the runs it cuts off plus a copy of the log's bytes; a rejection
// that must say when to retry walks from the oldest run until enough
// units would leave.
func logDecide(p Params, cur held, now int64, dst []byte) (next held, r Result, admitted bool) {
	if cur.w.c > now { // reservations in line
		return logReserve(p, 0, cur, now, dst)
	}
	// cur's parts as logState names them, read one by one: copying the
	// state whole costs a measurable part of a decision.
	runs, dl := cur.runs, uint64(cur.deadline)
	cut, total, tOld := len(runs), cur.w.a, uint64(cur.w.b)
	if total == 1<<63-1 { // saturated: count what the runs hold instead
		total = 0
		prev := dl
		for i := 0; i < len(runs); {
			t, n, next := logRunAt(runs, i, prev)
			total = sat.Add(total, int64(n))
			prev, i = t, next
		}
	}
	// Cut the expired runs off the end, oldest first.
	for cut > 0 && int64(tOld) <= now-p.Window {
		dStart := varintStart(runs, cut)
		nStart := varintStart(runs, dStart)
		n, _ := uvarint(runs, nStart)
		d, _ := durAt(runs, dStart)
		total = max(total-int64(n), 0)
		cut = nStart
		if cut > 0 {
			tOld += uint64(d) // the next newer run's time
		}
	}
	if cut == 0 {
		total = 0
	}
	var t0, n0 uint64
	firstEnd := 0
	if cut > 0 {
		t0, n0, firstEnd = logRunAt(runs, 0, dl)
	}
	r = Result{Limit: p.Limit, RetryAfter: -1}
	if fitsUnder(total, p.Cost, p.Limit) {
		admitted = p.Cost > 0
	} else {
		r.Limited = true
		if p.Cost <= p.Limit {
			// The request fits once the oldest total+cost-limit units are
			// gone: walk from the oldest run (backwards over the varints)
			// until that many units are counted. A key at its limit
			// usually needs only its oldest run.
			need := total - (p.Limit - p.Cost)
			acc, t, end := int64(0), tOld, cut
			for end > 0 {
				dStart := varintStart(runs, end)
				nStart := varintStart(runs, dStart)
				n, _ := uvarint(runs, nStart)
				d, _ := durAt(runs, dStart)
				if acc = sat.Add(acc, int64(n)); acc >= need {
					r.RetryAfter = int64(t) + p.Window - now
					break
				}
				end = nStart
				if end > 0 {
					t += uint64(d)
				}
			}
		}
	}
	newest, any := int64(t0), cut > 0
	if admitted {
		total = sat.Add(total, p.Cost)
		newest, any = now, true
	}
	r.Remaining = max(p.Limit-total, 0)
	if any {
		r.ResetAfter = newest + p.Window - now
	}
	if !admitted {
		return cur, r, false
	}
	deadline := deadlineAfter(now, r.ResetAfter)
	nd := uint64(deadline)
	if cut > 0 && t0 == uint64(now) { // same ns as the newest run: merge
		dst = binary.AppendUvarint(dst, uint64(sat.Add(int64(n0), p.Cost)))
		dst = appendDur(dst, int64(nd-uint64(now)))
		dst = append(dst, runs[firstEnd:cut]...)
	} else {
		dst = binary.AppendUvarint(dst, uint64(p.Cost))
		dst = appendDur(dst, int64(nd-uint64(now)))
		if cut > 0 {
			dst = binary.AppendUvarint(dst, n0)
			dst = appendDur(dst, int64(uint64(now)-t0))
			dst = append(dst, runs[firstEnd:cut]...)
		}
	}
	if cut == 0 {
		tOld = uint64(now)
	}
	return held{w: words{a: total, b: int64(tOld)}, runs: dst, deadline: deadline}, r, true
}

// logOldest is the oldest unit's time of a log given oldest first in
// words (persistence's form), 0 for an empty log.
func logOldest(words []int64) uint64 {
	if len(words) == 0 {
		return 0
	}
	if v := words[0]; v < 0 && len(words) > 1 {
		return uint64(-v - 1)
	}
	return uint64(words[0])
}

// appendRuns encodes a log given oldest first in words (persistence's
// form) as runs, newest first, relative to deadline dl.
func appendRuns(dst []byte, dl uint64, words []int64) []byte {
	type run struct{ t, n int64 }
	var stack [128]run // a log of up to 128 runs needs no allocation
	rs := stack[:0]
	for i := 0; i < len(words); {
		if v := words[i]; v < 0 && i+1 < len(words) {
			rs = append(rs, run{-v - 1, words[i+1]})
			i += 2
		} else {
			rs = append(rs, run{v, 1}) // a malformed trailing marker is read as one unit
			i++
		}
	}
	dst = slices.Grow(dst, 6*len(rs)) // a run a second apart takes 6 bytes
	prev := dl
	for k := len(rs) - 1; k >= 0; k-- {
		dst = binary.AppendUvarint(dst, uint64(rs[k].n))
		dst = appendDur(dst, int64(prev-uint64(rs[k].t)))
		prev = uint64(rs[k].t)
	}
	return dst
}

// countRuns returns how many words decodeRuns writes for runs under
// deadline dl, and false if a run lies before time 0: its pair's marker,
// -(t+1), would read as a single unit's time. No clock makes such a run;
// a malformed state from outside can.
func countRuns(dl uint64, runs []byte) (count int, ok bool) {
	prev, times := dl, uint64(0) // times: the runs' times ORed, its top bit a run before 0
	for i := 0; i < len(runs); {
		t, n, next := logRunAt(runs, i, prev)
		times |= t
		count += 2
		if n == 1 {
			count--
		}
		prev, i = t, next
	}
	return count, int64(times) >= 0
}

// decodeRuns appends the log encoded in runs to words, oldest first.
// It decodes the runs twice, to count the words (countRuns) and then to
// write them from the end back, so the words are allocated once
// (snapshots decode every changed log each second). A run before time 0
// has no form in the log: decodeRuns then reports false and returns
// words as they were.
func decodeRuns(words []int64, dl uint64, runs []byte) ([]int64, bool) {
	count, ok := countRuns(dl, runs)
	if !ok {
		return words, false
	}
	words = slices.Grow(words, count)
	start := len(words)
	words = words[:start+count]
	k := len(words) // newest first, from the end back
	prev := dl
	for i := 0; i < len(runs); {
		t, n, next := logRunAt(runs, i, prev)
		if n == 1 {
			k--
			words[k] = int64(t)
		} else {
			k -= 2
			words[k], words[k+1] = -int64(t)-1, int64(n)
		}
		prev, i = t, next
	}
	return words, true
}

// A delta is what an RL.LOG record gained since a change feed last read
// it (Feed.WriteDeltas): its receiver holds the record as that read wrote
// it (the base) and rebuilds the new one from the two. Every decision in
// a shard is at or after the shard's latest decision time at the read,
// since (decisionTimeLocked), so a decision since the read only adds runs
// at since or later at the front, merges into a front run at since or
// later, drops runs at since or later (a reservation given back) and cuts
// runs off the end. The record's runs from the first one before since
// on are therefore the base's from its first run before since on, less
// some cut off the end:
//
//	T (since, 8 bytes LE) | uvarint L | state
//
// state is the record's state (appendState) with its runs cut just past
// the first run before T, so its runs end with that run; L is the byte
// length of the runs that follow it, which the receiver copies from the
// base, after the same run there. Only runs past that one are copied,
// whose encodings (each relative to the one before) are the same bytes in
// both. A delta is written only when L is at least minDeltaRest: for a
// short log the whole record is as small.
const minDeltaRest = 16

// appendLogDelta appends the delta of an RL.LOG record (state e, runs)
// against what a read at since held, and reports the bytes it saves over
// the whole state. ok is false when a delta would not be smaller: the
// record is then written whole.
func appendLogDelta(dst []byte, e entry, runs []byte, since int64) (out []byte, saved int, ok bool) {
	_, _, cut, ok := firstRunBefore(runs, uint64(e.deadline), since)
	if !ok || len(runs)-cut < minDeltaRest {
		return dst, 0, false
	}
	rest := len(runs) - cut
	dst = binary.LittleEndian.AppendUint64(dst, uint64(since))
	dst = binary.AppendUvarint(dst, uint64(rest))
	dst = appendState(dst, KindLog, e, runs[:cut])
	return dst, rest - 8 - 2, true
}

// firstRunBefore returns the first of runs (under deadline dl) whose
// time is before since, and the offset just past it; ok is false if
// none is. It is where a delta joins its base, on either side.
func firstRunBefore(runs []byte, dl uint64, since int64) (t, n uint64, end int, ok bool) {
	prev := dl
	for i := 0; i < len(runs); {
		t, n, i = logRunAt(runs, i, prev)
		if int64(t) < since {
			return t, n, i, true
		}
		prev = t
	}
	return 0, 0, 0, false
}

// RestoreDelta applies delta, an RL.LOG's delta (appendLogDelta) as a
// snapshot stored it, to key, marking nothing for the feeds, as Restore
// does a whole record: the key's record is rebuilt from the one it holds
// (its base, kept whatever its deadline) and the delta. A key that holds
// no RL.LOG record is left without one: the base was in a segment a fold
// dropped, and a later entry of the same load (the fold's dump) holds
// the key. It reports whether the key is held afterwards, and its
// deadline; a delta that is malformed or does not fit its base gives
// ErrState, and the key is left as it was.
func (e *Engine) RestoreDelta(key, delta []byte) (deadline int64, held bool, err error) {
	if len(delta) < 9 {
		return 0, false, ErrState
	}
	since := int64(binary.LittleEndian.Uint64(delta))
	rest, n := binary.Uvarint(delta[8:])
	if n <= 0 {
		return 0, false, ErrState
	}
	en, runs, err := parseState(KindLog, delta[8+n:])
	if err != nil {
		return 0, false, err
	}
	// The delta's runs are at since or later but the last, before it.
	lastT, lastN, ok := deltaJoin(runs, uint64(en.deadline), since)
	if !ok {
		return 0, false, ErrState
	}
	s, h := e.shardOf(key)
	s.mu.Lock()
	defer s.mu.Unlock()
	off, _, found := s.findLocked(h, key)
	if !found {
		return 0, false, nil
	}
	p := parseHead(s.data, off)
	s.wholeNextLocked()
	s.quiet = true
	defer func() { s.quiet = false }()
	if Kind(p.hdr&hdrKind) != KindLog {
		s.removeLocked(off, tagOf(h))
		return 0, false, nil
	}
	bt, bn, at, ok := firstRunBefore(p.runs, uint64(p.e.deadline), since)
	if !ok || bt != lastT || bn != lastN || uint64(len(p.runs)-at) < rest || !runsEndAt(p.runs, at, at+int(rest)) {
		return 0, false, ErrState
	}
	merged := append(append(s.logBuf[:0], runs...), p.runs[at:at+int(rest)]...)
	s.putLocked(off, p.tail, h, key, en, merged)
	s.logBuf = merged[:0]
	return en.deadline, true, nil
}

// deltaJoin checks a delta's runs (under deadline dl): every run at since
// or later but the last, which is before since. It returns that run.
func deltaJoin(runs []byte, dl uint64, since int64) (t, n uint64, ok bool) {
	defer func() {
		if recover() != nil { // runs from a store: malformed ones end here
			ok = false
		}
	}()
	t, n, end, ok := firstRunBefore(runs, dl, since)
	return t, n, ok && end == len(runs)
}

// runsEndAt reports whether end, between from and len(runs), is a run
// boundary of runs, whose runs from the boundary from on are well formed
// (a record's own). A run is two items, a count and a duration (uvarint,
// durAt), and an item ends at its first byte under 0x80. So end is a
// boundary when the byte before it ends an item and an even number of
// items lie from it to the end of runs, itself a boundary. So a delta's
// load (RestoreDelta) reads the bytes of the runs cut off the end, a few,
// and decodes none of the runs it keeps.
func runsEndAt(runs []byte, from, end int) bool {
	switch {
	case end < from || end > len(runs):
		return false
	case end == from || end == len(runs):
		return true
	case runs[end-1] >= 0x80:
		return false
	}
	items := 0
	for _, c := range runs[end:] {
		if c < 0x80 {
			items++
		}
	}
	return items%2 == 0
}

// DropExpired removes every key expired at now, marking nothing for the
// feeds, and returns how many it removed: the end of a load, which keeps
// expired RL.LOG records until every delta after them is applied.
func (e *Engine) DropExpired(now int64) int {
	n := 0
	for _, s := range e.shards {
		s.mu.Lock()
		s.quiet = true
		s.recordsLocked(func(p parsed, off int) {
			if !p.e.alive(now) {
				s.droppedLocked(p.e)
				s.removeLocked(off, tagOf(s.hash(p.key)))
				n++
			}
		})
		s.quiet = false
		s.mu.Unlock()
	}
	return n
}

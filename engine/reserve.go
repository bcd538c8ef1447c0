package engine

import (
	"encoding/binary"
	"errors"
	"slices"

	"github.com/rlserver/rlserver/internal/sat"
	"github.com/rlserver/rlserver/internal/zigzag"
)

// Reservations: an RL.BUCKET, RL.LOG or RL.FIXED call that may wait up to
// a given time instead of being refused (Store.Reserve) (docs/reservations.md is the
// contract). A reservation is a charge at its act time T >= now, granted
// when T - now <= the wait allowed; it is charged exactly as a call made
// at T would be, so a window never holds more than its limit, future
// windows included.
//
// Its ticket is T, in Unix ns. A key remembers the last ticket it issued,
// L, and every later reservation acts after L: first come, first served,
// and a ticket given back (RL.CANCEL) is never issued again, so a stale
// ticket names nothing. A call that does not wait acts at now, which it
// may only do when nothing is in line (L <= now).
//
// Where a reservation is kept:
//
//	RL.LOG     a run of its log at T (a run in the future); L is the
//	           state's third word
//	RL.BUCKET  the state charges it (the full-again time moves); the key
//	RL.FIXED   (the next window's count grows) also keeps a section
//
// A section holds L and the reservations not yet acted on, which RL.CANCEL
// needs. It follows the body of the record, flagged by bit 63 of the
// stored deadline (record.go), while L is in the future:
//
//	uvarint length | zz(deadline - L) | uvarint unit | uvarint next | runs
//
// runs are the pending reservations newest first, each uvarint cost |
// dur(prev - T) with prev = L for the first (RL.LOG's run shape). unit is
// the parameter they were made with: the bucket's period (ns*rate per
// token at the stored rate), the fixed window's length. next is a fixed
// window's count of the window after its state's (the state's third word,
// kept here because only a key with reservations has one). A call with
// other parameters forgets them (their tickets then give back 0): a
// ticket gives back only under the parameters it was reserved with.

// ErrNoReserve: the algorithm takes no reservations (RL.SLIDE, leases).
var ErrNoReserve = errors.New("engine: this algorithm takes no reservations")

// pendingBit flags a stored deadline whose record carries a section.
// Deadlines are below 2^63 (maxDeadline).
const pendingBit = 1 << 63

// pend is a reservation not yet acted on: its act time (its ticket) and
// cost.
type pend struct{ act, cost int64 }

// resv is a section, decoded: the last ticket issued (0: none in the
// future), the unit, and the pending reservations oldest first.
type resv struct {
	last int64
	unit int64
	next int64
	pend []pend
}

// decodeSection decodes a section of a record whose deadline is dl,
// appending its reservations to dst. An empty sec is no section.
func decodeSection(sec []byte, dl uint64, dst []pend) resv {
	rv := resv{pend: dst[:0]}
	if len(sec) == 0 {
		return rv
	}
	last, i := sectionLast(sec, dl)
	rv.last = last
	u, i := uvarint(sec, i)
	rv.unit = int64(u)
	u, i = uvarint(sec, i)
	rv.next = int64(u)
	rv.pend = logRuns(sec[i:], uint64(rv.last), rv.pend)
	return rv
}

// sectionLast decodes a non-empty section's L, its first word, and
// returns it with the offset past it.
func sectionLast(sec []byte, dl uint64) (int64, int) {
	u, i := uvarint(sec, 0)
	return int64(dl - uint64(zigzag.Decode(u))), i
}

// appendSection encodes rv (last > 0) under deadline dl.
func appendSection(dst []byte, dl uint64, rv resv) []byte {
	dst = binary.AppendUvarint(dst, zigzag.Encode(int64(dl-uint64(rv.last))))
	dst = binary.AppendUvarint(dst, uint64(rv.unit))
	dst = binary.AppendUvarint(dst, uint64(rv.next))
	return appendPendRuns(dst, uint64(rv.last), rv.pend)
}

// at drops what has acted by now: the reservations at or before now, and
// the whole section once L has passed.
func (rv resv) at(now int64) resv {
	if rv.last <= now {
		return resv{pend: rv.pend[:0], next: rv.next}
	}
	k := 0
	for k < len(rv.pend) && rv.pend[k].act <= now {
		k++
	}
	rv.pend = rv.pend[k:]
	return rv
}

// under is rv for a call of p on the words state w: its pending
// reservations forgotten if they were made with other parameters (rule 5
// of docs/reservations.md; L is kept).
func (rv resv) under(kind Kind, p Params, w words) resv {
	if len(rv.pend) > 0 && (rv.unit != p.Window || kind == KindBucket && bucketOf(w).rate != p.Rate) {
		rv.pend = rv.pend[:0]
	}
	return rv
}

// inLine reports whether a record has reservations that have not acted
// by now: its last ticket is in the future.
func (p parsed) inLine(now int64) bool {
	switch {
	case p.e.kind == KindLog:
		return p.e.w.c > now
	case p.runs != nil && !algorithmOf(p.e.kind).hasRuns:
		last, _ := sectionLast(p.runs, uint64(p.e.deadline)) // nothing else decoded
		return last > now
	}
	return false
}

// sectionLog is a section as Record.Log carries it for RL.BUCKET and
// RL.FIXED: L, unit, next, then (act, cost) pairs oldest first.
func sectionLog(dst []int64, rv resv) []int64 {
	dst = append(dst, rv.last, rv.unit, rv.next)
	for _, p := range rv.pend {
		dst = append(dst, p.act, p.cost)
	}
	return dst
}

// sectionOfLog is sectionLog's inverse (a malformed tail is dropped),
// its reservations appended to dst[:0].
func sectionOfLog(log []int64, dst []pend) resv {
	rv := resv{pend: dst[:0]}
	if len(log) < 3 {
		return rv
	}
	rv.last, rv.unit, rv.next = log[0], log[1], log[2]
	for i := 3; i+1 < len(log); i += 2 {
		rv.pend = append(rv.pend, pend{act: log[i], cost: log[i+1]})
	}
	return rv
}

// reserves reports whether kind takes reservations.
func reserves(kind Kind) bool { return kind == KindBucket || kind == KindFixed || kind == KindLog }

// plainOf is the plain command's decision for a words kind, ignoring any
// line: what it would decide now.
func plainOf(kind Kind, p Params, w words, now int64) (words, Result) {
	if kind == KindFixed {
		s, r := fixedLine(p, fixedOf(w), now)
		return s.words(), r
	}
	return algorithmOf(kind).decide(p, w, now)
}

// fixedLine is fixedDecide on a key that may have units reserved in its
// next window: while it has, nothing is admitted now (the caller says
// when it would be); once that window has come, they are its count.
func fixedLine(p Params, s fixedState, now int64) (fixedState, Result) {
	start := now - now%p.Window
	count, next := fixedRoll(s, start, p.Window)
	if next == 0 {
		return fixedDecide(p, fixedState{start: start, count: count}, now)
	}
	r := fixedReply(p, fixedState{start: start, count: count, next: next}, now)
	r.Limited = true
	return s, r
}

// earliest is the earliest act time T >= from (from >= now) at which a
// call of p on the words state w (RL.BUCKET or RL.FIXED) fits; ok is
// false when it never does (cost above the limit). repFrom is the first
// time at which T may be reserved: now, or for a fixed window whose next
// window is full the start of that next window (a key keeps two windows).
func earliest(kind Kind, p Params, w words, now, from int64) (T int64, ok bool, repFrom int64) {
	if p.Cost > p.Limit {
		return 0, false, 0
	}
	if kind == KindBucket {
		tat, overflow := bucketTAT(p, bucketOf(w), now)
		if overflow {
			return 0, false, 0
		}
		rate, period := uint64(p.Rate), uint64(p.Window)
		actS := tat.add(mul64(uint64(p.Cost), period)).sub(mul64(uint64(p.Limit), period))
		if !mul64(uint64(from), rate).less(actS) {
			return from, true, now
		}
		return max(from, actS.quoCeil(rate).satInt64()), true, now
	}
	cw := now - now%p.Window
	count, next := fixedRoll(fixedOf(w), cw, p.Window)
	end := sat.Add(cw, p.Window)
	if from < end && fitsUnder(count, p.Cost, p.Limit) {
		return from, true, now
	}
	if end2 := sat.Add(end, p.Window); from < end2 && fitsUnder(next, p.Cost, p.Limit) {
		return max(from, end), true, now
	} else {
		return max(from, end2), true, end
	}
}

// chargeAt charges a call of p (cost > 0) acting at T >= now on the words
// state w, exactly as the same call made at T would be, and returns the
// new state and the reply the plain command would give after it.
func chargeAt(kind Kind, p Params, w words, now, T int64) (words, Result) {
	if kind == KindBucket {
		rate, period := uint64(p.Rate), uint64(p.Window)
		tat, _ := bucketTAT(p, bucketOf(w), now) // earliest found no overflow
		if ts := mul64(uint64(T), rate); tat.less(ts) {
			tat = ts
		}
		tat = tat.add(mul64(uint64(p.Cost), period))
		debt := tat.sub(mul64(uint64(now), rate))
		r := Result{Limit: p.Limit, RetryAfter: -1, exactMs: true, retryMs: -1}
		r.Remaining = int64(min(mul64(uint64(p.Limit), period).sub(debt).divFloor(period), 1<<63-1))
		r.ResetAfter, r.resetMs = nsAndMs(debt, rate)
		return bucketState{tat: tat, rate: p.Rate}.words(), r
	}
	cw := now - now%p.Window
	count, next := fixedRoll(fixedOf(w), cw, p.Window)
	if T < sat.Add(cw, p.Window) {
		count += p.Cost
	} else {
		next += p.Cost
	}
	s := fixedState{start: cw, count: count, next: next}
	return s.words(), fixedReply(p, s, now)
}

// reserveWords decides a call of p on an RL.BUCKET or RL.FIXED key at now,
// acting no earlier than floor (>= now), whose state is w and section rv.
// It returns the new state and section and whether to store them. A
// granted reservation's reply has Wait (ns until T) and Token (the
// ticket, T). Every reply says nothing remains while a line waits.
func reserveWords(kind Kind, p Params, wait int64, w words, rv resv, now, floor int64) (words, resv, Result, bool) {
	w, rv, r, write := decideWords(kind, p, wait, w, rv, now, floor)
	if rv.last > now {
		r.Remaining = 0
	}
	return w, rv, r, write
}

// decideWords is reserveWords but for the remaining of a reply.
func decideWords(kind Kind, p Params, wait int64, w words, rv resv, now, floor int64) (words, resv, Result, bool) {
	rv = rv.at(now)
	if p.Cost == 0 { // a peek waits for nothing and charges nothing
		wait = 0
	}
	rv = rv.under(kind, p, w)
	from, plainFrom := floor, floor
	if rv.last > now {
		from, plainFrom = max(from, rv.last+1), max(plainFrom, rv.last)
	}
	T, ok, repFrom := earliest(kind, p, w, now, from)
	if ok && T == now {
		if p.Cost == 0 {
			_, r := plainOf(kind, p, w, now)
			return w, rv, r, false
		}
		next, r := chargeAt(kind, p, w, now, now)
		return next, rv, r, true
	}
	if ok && wait > 0 && repFrom <= now && T-now <= wait {
		next, r := chargeAt(kind, p, w, now, T)
		rv.last, rv.unit = T, p.Window
		rv.pend = append(rv.pend, pend{act: T, cost: p.Cost})
		r.Wait, r.Token = T-now, T
		return next, rv, r, true
	}
	_, r := plainOf(kind, p, w, now)
	if !r.Limited { // the plain call would act now but for the line: the state as it is
		q := p
		q.Cost = 0
		_, r = plainOf(kind, q, w, now)
	}
	r.refuse()
	if ok {
		if wait > 0 {
			r.setRetry(max(T-wait, repFrom) - now)
		} else {
			T, _, _ = earliest(kind, p, w, now, plainFrom)
			r.setRetry(T - now)
		}
	}
	return w, rv, r, false
}

// refuse makes r a refusal with no known wait: a plain call refused while
// reservations are in line admits nothing now.
func (r *Result) refuse() {
	if !r.Limited {
		r.Limited, r.Remaining = true, 0
	}
	r.setRetry(-1)
}

// setRetry sets the wait until the call would be granted, in ns (-1:
// never).
func (r *Result) setRetry(ns int64) {
	r.RetryAfter = ns
	if r.exactMs {
		r.retryMs = CeilMs(ns)
	}
}

// cancelWords gives back the reservation with ticket t on an RL.BUCKET or
// RL.FIXED key (state w, section rv already at now): the units given back
// and the new state. A fixed window gives back its cost; a bucket what
// later reservations did not already take (x/time/rate's CancelAt rule):
// its cost less the costs reserved after it, never below an empty
// bucket.
func cancelWords(kind Kind, w words, rv resv, t, now int64) (int64, words, resv) {
	if rv.unit <= 0 { // only a damaged record's: no call makes one
		return 0, w, rv
	}
	i := 0
	for i < len(rv.pend) && rv.pend[i].act != t {
		i++
	}
	if i == len(rv.pend) {
		return 0, w, rv
	}
	cost := rv.pend[i].cost
	later := int64(0)
	for _, p := range rv.pend[i+1:] {
		later = sat.Add(later, p.cost)
	}
	rv.pend = append(rv.pend[:i], rv.pend[i+1:]...)
	if kind == KindFixed {
		s := fixedOf(w)
		cw := now - now%rv.unit
		count, next := fixedRoll(s, cw, rv.unit)
		if t < sat.Add(cw, rv.unit) {
			count = max(count-cost, 0)
		} else {
			next = max(next-cost, 0)
		}
		return cost, fixedState{start: cw, count: count, next: next}.words(), rv
	}
	s := bucketOf(w)
	give := cost - later
	if give <= 0 {
		return 0, w, rv
	}
	nowS := mul64(uint64(now), uint64(s.rate))
	debt := s.tat.sub(nowS)
	give = min(give, int64(min(debt.divCeil(uint64(rv.unit)), 1<<63-1)))
	s.tat = s.tat.sub(mul64(uint64(give), uint64(rv.unit)))
	if s.tat.less(nowS) {
		s.tat = nowS
	}
	return give, s.words(), rv
}

// Cancel gives back the reservation with ticket t on key (RL.CANCEL): the
// units given back, 0 for a ticket at or past its act time, given back
// already, or unknown. ErrWrongType for a key of a kind that takes no
// reservations.
func (st Store) Cancel(key []byte, t int64, now int64) (int64, error) {
	s, h := st.e.shardOf(key)
	st.lock(s)
	defer st.unlock(s)
	now = s.decisionTimeLocked(now)
	off, e, tail, runs, ok := s.lookupRunsLocked(h, key, now)
	if !ok {
		return 0, nil
	}
	if !reserves(e.kind) {
		return 0, ErrWrongType
	}
	if t <= now {
		return 0, nil
	}
	if e.kind == KindLog {
		given, next := logCancel(held{w: e.w, runs: runs, deadline: e.deadline}, t, now, s.logBuf[:0])
		if given > 0 && !st.dry {
			s.putLocked(off, tail, h, key, entry{kind: KindLog, w: next.w, deadline: next.deadline}, next.runs)
		}
		return given, nil
	}
	rv := s.sectionOf(e.kind, &e, runs).at(now)
	given, w, rv := cancelWords(e.kind, e.w, rv, t, now)
	s.pend = rv.pend[:0]
	if given > 0 && !st.dry {
		var reset int64
		if e.kind == KindBucket {
			reset = bucketDebtNs(bucketOf(w), now)
		} else {
			reset = fixedReply(Params{Window: rv.unit}, fixedOf(w), now).ResetAfter
		}
		st.putWordsLocked(s, off, tail, h, key, e.kind, w, rv, now, reset)
	}
	return given, nil
}

// putWordsLocked stores an RL.BUCKET or RL.FIXED state w with section rv
// (at now), fresh again after reset ns (encodeWords).
func (st Store) putWordsLocked(s *shard, off, tail int, h uint64, key []byte, kind Kind, w words, rv resv, now, reset int64) {
	e, sec := encodeWords(kind, w, rv, now, reset, s.secBuf[:0])
	s.secBuf = sec[:0]
	s.putLocked(off, tail, h, key, e, sec)
}

// encodeWords is the entry and section (appended to dst; nil when none)
// that store an RL.BUCKET or RL.FIXED state w with section rv at now.
// The key lives until the state is fresh again, reset ns from now, and
// never less than until its last ticket acts (it must remember L). A
// fixed window's next count goes to the section.
func encodeWords(kind Kind, w words, rv resv, now, reset int64, dst []byte) (entry, []byte) {
	if kind == KindFixed {
		rv.next, w.c = w.c, 0
	}
	e := entry{kind: kind, w: w, deadline: deadlineAfter(now, reset)}
	if rv.last <= now {
		return e, nil
	}
	e.deadline = max(e.deadline, rv.last+1)
	return e, appendSection(dst, uint64(e.deadline), rv)
}

// bucketDebtNs is how long until a bucket is full again, in ns (its
// reset_after).
func bucketDebtNs(s bucketState, now int64) int64 {
	if s.rate == 0 {
		return 0
	}
	ns, _ := nsAndMs(s.tat.sub(mul64(uint64(now), uint64(s.rate))), uint64(s.rate))
	return ns
}

// sectionOf decodes a words record's section (sec, nil if none) into the
// shard's scratch, with a fixed window's next count put back in its state.
func (s *shard) sectionOf(kind Kind, e *entry, sec []byte) resv {
	rv := decodeSection(sec, uint64(e.deadline), s.pend[:0])
	if kind == KindFixed {
		e.w.c = rv.next
	}
	return rv
}

// Reserve is Store.Limit for a call of an RL.BUCKET, RL.LOG or RL.FIXED
// key that may wait up to wait ns (RESERVE; 0: the plain call) instead of
// being refused. A granted reservation's reply has Wait (ns until it
// acts) and Token (its ticket, the act time). ErrNoReserve for another
// kind, ErrWrongType if the key holds another kind.
func (st Store) Reserve(kind Kind, key []byte, p Params, wait, now int64) (Result, error) {
	if !reserves(kind) {
		return Result{}, ErrNoReserve
	}
	if wait <= 0 {
		return st.Limit(kind, key, p, now)
	}
	s, h := st.e.shardOf(key)
	st.lock(s)
	defer st.unlock(s)
	now = s.decisionTimeLocked(now)
	off, e, tail, runs, ok := s.lookupRunsLocked(h, key, now)
	if ok && e.kind != kind {
		return Result{}, ErrWrongType
	}
	if kind != KindLog {
		return st.reserveLocked(s, off, tail, h, key, kind, p, wait, e, ok, runs, now)
	}
	var cur held
	if ok {
		cur = held{w: e.w, runs: runs, deadline: e.deadline}
	}
	next, r, write := logReserve(p, wait, cur, now, s.logBuf[:0])
	if write && !ok {
		var err error
		if write, err = st.newKeyLocked(s, false, now); err != nil {
			return Result{}, err
		}
	}
	if write && !st.dry {
		s.putLocked(off, tail, h, key, entry{kind: KindLog, w: next.w, deadline: next.deadline}, next.runs)
		if cap(next.runs) <= 64<<10 {
			s.logBuf = next.runs[:0]
		}
	}
	if ok && !write && e.deadline < maxDeadline {
		r.clampTo(e.deadline - now)
	}
	return r, nil
}

// reserveLocked decides a call of an RL.BUCKET or RL.FIXED key that may
// wait, or on a key with a section: the record at off (found) holds e and
// the section sec.
func (st Store) reserveLocked(s *shard, off, tail int, h uint64, key []byte, kind Kind, p Params, wait int64, e entry, found bool, sec []byte, now int64) (Result, error) {
	rv := s.sectionOf(kind, &e, sec)
	w, rv, r, write := reserveWords(kind, p, wait, e.w, rv, now, now)
	s.pend = rv.pend[:0]
	if write && !found {
		var err error
		if write, err = st.newKeyLocked(s, false, now); err != nil {
			return Result{}, err
		}
	}
	if write && !st.dry {
		st.putWordsLocked(s, off, tail, h, key, kind, w, rv, now, r.ResetAfter)
	}
	if found && !write && e.deadline < maxDeadline {
		r.clampTo(e.deadline - now)
	}
	return r, nil
}

// logRuns decodes runs (an RL.LOG's, or a section's pending
// reservations), the first relative to prev, oldest first into dst.
func logRuns(runs []byte, prev uint64, dst []pend) []pend {
	dst = dst[:0]
	for i := 0; i < len(runs); {
		t, n, next := logRunAt(runs, i, prev)
		dst = append(dst, pend{act: int64(t), cost: int64(n)})
		prev, i = t, next
	}
	slices.Reverse(dst) // newest first in the record
	return dst
}

// appendPendRuns encodes rs (oldest first) as runs newest first, the
// first relative to prev.
func appendPendRuns(dst []byte, prev uint64, rs []pend) []byte {
	for k := len(rs) - 1; k >= 0; k-- {
		t := uint64(rs[k].act)
		dst = binary.AppendUvarint(dst, uint64(rs[k].cost))
		dst = appendDur(dst, int64(prev-t))
		prev = t
	}
	return dst
}

// logEarliest is the earliest time T >= from at which a call of p fits a
// log holding rs (oldest first, total units), every run at or before
// from: once enough of the oldest units have left the window. ok is false
// when it never fits (cost above the limit).
func logEarliest(p Params, rs []pend, total, from int64) (T int64, ok bool) {
	if p.Cost > p.Limit {
		return 0, false
	}
	T = from
	if need := total - (p.Limit - p.Cost); need > 0 {
		acc := int64(0)
		for _, r := range rs {
			if acc = sat.Add(acc, r.cost); acc >= need {
				return max(T, sat.Add(r.act, p.Window)), true
			}
		}
	}
	return T, true
}

// logReply is the plain command's reply on a log holding rs (total units)
// with last ticket last: nothing left now while reservations are in line.
func logReply(p Params, rs []pend, total, last, now int64) Result {
	r := Result{Limit: p.Limit, RetryAfter: -1}
	if last <= now {
		r.Remaining = max(p.Limit-total, 0)
	}
	if len(rs) > 0 {
		r.ResetAfter = sat.Add(rs[len(rs)-1].act, p.Window) - now
	}
	return r
}

// logHeld is the state of a log holding rs (oldest first, total units),
// last ticket last, with window w: it lives until its newest unit leaves
// the window, and never before its last ticket acts.
func logHeld(rs []pend, total, last, window, now int64, dst []byte) held {
	dl := int64(0)
	if len(rs) > 0 {
		dl = min(sat.Add(rs[len(rs)-1].act, window), maxDeadline)
	}
	w := words{a: total}
	if last > now {
		dl, w.c = max(dl, last+1), last
	}
	if len(rs) > 0 {
		w.b = rs[0].act
	}
	return held{w: w, runs: appendPendRuns(dst, uint64(dl), rs), deadline: dl}
}

// logReserve is logDecide for a call that may wait, or on a log with
// reservations in line (its last ticket in the future): a reservation is
// a run of the log at its act time, after every run before it.
func logReserve(p Params, wait int64, cur held, now int64, dst []byte) (held, Result, bool) {
	rs := logRuns(cur.runs, uint64(cur.deadline), nil)
	k := 0
	for k < len(rs) && rs[k].act <= now-p.Window {
		k++
	}
	rs = rs[k:]
	total := int64(0)
	for _, r := range rs {
		total = sat.Add(total, r.cost)
	}
	last := cur.w.c
	if last <= now {
		last = 0
	}
	if p.Cost == 0 { // a peek waits for nothing and charges nothing
		wait = 0
		if last <= now {
			return cur, logReply(p, rs, total, last, now), false
		}
	}
	from, plainFrom := now, now
	if last > now {
		from, plainFrom = last+1, last
	}
	T, ok := logEarliest(p, rs, total, from)
	if ok && (T == now || wait > 0 && T-now <= wait) {
		if n := len(rs); T == now && n > 0 && rs[n-1].act == now {
			rs[n-1].cost = sat.Add(rs[n-1].cost, p.Cost) // same ns as the newest run: merge
		} else {
			rs = append(rs, pend{act: T, cost: p.Cost})
		}
		total = sat.Add(total, p.Cost)
		if T > now {
			last = T
		}
		r := logReply(p, rs, total, last, now)
		r.Wait, r.Token = T-now, 0
		if T > now {
			r.Token = T
		}
		return logHeld(rs, total, last, p.Window, now, dst), r, true
	}
	r := logReply(p, rs, total, last, now) // nothing remains while a line waits
	r.Limited = true
	r.setRetry(-1)
	if ok {
		if wait > 0 {
			r.setRetry(T - wait - now)
		} else {
			T, _ = logEarliest(p, rs, total, plainFrom)
			r.setRetry(T - now)
		}
	}
	return cur, r, false
}

// logCancel gives back the reservation with ticket t (> now) of an RL.LOG
// key: its run leaves the log whole (a log's later runs took none of its
// units). It returns the units given back and the new state.
func logCancel(cur held, t, now int64, dst []byte) (int64, held) {
	rs := logRuns(cur.runs, uint64(cur.deadline), nil)
	i := 0
	for i < len(rs) && rs[i].act != t {
		i++
	}
	if i == len(rs) {
		return 0, cur
	}
	given := rs[i].cost
	rs = append(rs[:i], rs[i+1:]...)
	total := int64(0)
	for _, r := range rs {
		total = sat.Add(total, r.cost)
	}
	// The key keeps its deadline and the runs that left the window: no
	// window length is known here. The next decision cuts them.
	w := words{a: total, c: cur.w.c}
	if len(rs) > 0 {
		w.b = rs[0].act
	}
	return given, held{w: w, runs: appendPendRuns(dst, uint64(cur.deadline), rs), deadline: cur.deadline}
}

// waits reports whether some limit of b may wait (RL.ALL with RESERVE).
func (b *Batch) waits() bool {
	for i := range b.Limits {
		if b.Limits[i].Wait > 0 {
			return true
		}
	}
	return false
}

// logFound is limit i's RL.LOG state found, at now: its runs oldest first
// (the expired cut off), their units, and its last ticket if in the
// future (else 0).
func (b *Batch) logFound(i int, now int64) (rs []pend, total, last int64) {
	ls, p := &b.states[i], b.Limits[i].Params
	rs = logRuns(ls.curRuns, uint64(ls.cur.deadline), b.pends[i][:0])
	b.pends[i] = rs[:0]
	k := 0
	for k < len(rs) && rs[k].act <= now-p.Window {
		k++
	}
	rs = rs[k:]
	for _, r := range rs {
		total = sat.Add(total, r.cost)
	}
	if last = ls.cur.w.c; last <= now || !ls.found {
		last = 0
	}
	return rs, total, last
}

// earliestOf is the earliest time >= from (>= now) at which limit i could
// act, after its line; ok is false when it never can. repFrom is as
// earliest's. A limit of a kind that cannot wait (RL.SLIDE, GCRA, a
// lease) answers from if it admits now, else when it would.
func (b *Batch) earliestOf(i int, now, from int64) (T int64, ok bool, repFrom int64) {
	l, ls := &b.Limits[i], &b.states[i]
	switch l.Kind {
	case KindBucket, KindFixed:
		if ls.rv.last > now {
			from = max(from, ls.rv.last+1)
		}
		return earliest(l.Kind, l.Params, ls.cur.w, now, from)
	case KindLog:
		rs, total, last := b.logFound(i, now)
		if last > now {
			from = max(from, last+1)
		}
		T, ok = logEarliest(l.Params, rs, total, from)
		return T, ok, now
	}
	r, err := b.decideOne(i, now)
	switch {
	case err != nil || r.Limited && r.RetryAfter < 0:
		return 0, false, 0
	case r.Limited:
		return max(from, sat.Add(now, r.RetryAfter)), true, now
	}
	return from, true, now
}

// commonAct is the earliest time at which every limit of b could act
// together: each limit's earliest from the latest of the others', until
// it settles (a limit's earliest never decreases as from grows, and a
// fixed window's moves at most two windows on). ok is false when some
// limit never can.
func (b *Batch) commonAct(now int64) (T int64, ok bool) {
	T = now
	for range 4 + 2*len(b.Limits) {
		next := T
		for i := range b.Limits {
			t, ok, _ := b.earliestOf(i, now, T)
			if !ok {
				return 0, false
			}
			next = max(next, t)
		}
		if next == T {
			return T, true
		}
		T = next
	}
	return 0, false
}

// decideAt decides a call of b whose limits could all act at T > now: if
// every limit may wait until T, and may reserve it now (a fixed window
// reserves its next window at most), each is charged at T (its
// reservation, ticket T) and b.Wait and b.Ticket are set; else the limits
// that may not refuse it (with when the call would be granted for them)
// and the others answer their peek. It reports whether the call was
// refused.
func (b *Batch) decideAt(now, T int64) (limited bool) {
	for i := range b.Limits {
		l := &b.Limits[i]
		_, _, rep := b.earliestOf(i, now, T)
		if T-now <= l.Wait && rep <= now {
			b.Results[i] = Result{} // answered below
			continue
		}
		r := b.peekOne(i, now)
		r.Limited, r.Remaining = true, 0
		r.setRetry(max(T-l.Wait, rep) - now)
		b.Results[i], limited = r, true
	}
	if limited {
		for i := range b.Limits {
			if !b.Results[i].Limited {
				b.Results[i] = b.peekOne(i, now)
			}
		}
		return true
	}
	for i := range b.Limits {
		b.Results[i] = b.chargeOne(i, now, T)
	}
	b.Wait, b.Ticket = T-now, T
	return false
}

// chargeOne charges limit i (RL.BUCKET, RL.FIXED or RL.LOG) at T > now, a
// reservation with ticket T after its line, filling its state's next,
// runs and write, and returns its reply. A guard (cost 0) is checked,
// never charged: its peek.
func (b *Batch) chargeOne(i int, now, T int64) Result {
	l, ls := &b.Limits[i], &b.states[i]
	p := l.Params
	if p.Cost == 0 {
		return b.peekOne(i, now)
	}
	var r Result
	if l.Kind == KindLog {
		rs, total, _ := b.logFound(i, now)
		rs = append(rs, pend{act: T, cost: p.Cost})
		total = sat.Add(total, p.Cost)
		r = logReply(p, rs, total, T, now)
		h := logHeld(rs, total, T, p.Window, now, b.runs[i][:0])
		ls.next, ls.runs = entry{kind: KindLog, w: h.w, deadline: h.deadline}, h.runs
		b.runs[i] = h.runs[:0]
	} else {
		var w words
		w, r = chargeAt(l.Kind, p, ls.cur.w, now, T)
		rv := ls.rv.under(l.Kind, p, ls.cur.w)
		rv.last, rv.unit = T, p.Window
		rv.pend = append(rv.pend, pend{act: T, cost: p.Cost})
		ls.next, ls.runs = encodeWords(l.Kind, w, rv, now, r.ResetAfter, b.runs[i][:0])
		b.runs[i] = ls.runs[:0]
	}
	ls.write = true
	r.Remaining = 0 // a line waits
	r.Wait, r.Token = T-now, T
	return r
}

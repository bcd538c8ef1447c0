package engine

import (
	"errors"
	"math"
	"slices"
)

// RL.ALL: several limits decided as one. Every limit is decided by its own
// algorithm at one clock reading, exactly as its own command would decide
// it then; if every limit admits, every new state is stored, and if any
// rejects, nothing is (the rejecting keys included). Only the shards of
// the keys are locked, in ascending index order, so concurrent calls
// cannot deadlock and calls on other shards go on.
//
//	phase 1  lock the keys' shards, ascending; one decision time for all
//	phase 2  look up and decide every limit (pure functions), and check
//	         that every new key may be stored (maxmemory); nothing stored
//	phase 3  all admitted: store every changed state; else store nothing
//	         and answer, for the limits that did admit, their cost-0 peek

// ErrSameKey: two limits of one call name the same key.
var ErrSameKey = errors.New("engine: the same key twice in one call")

// Limit is one limit of a Batch: a key and the algorithm and parameters
// its own command would take. Kind is an RL.* kind, or KindThrottle for
// CL.THROTTLE's GCRA (GCRA set, Params.Cost its quantity).
type Limit struct {
	Key    []byte // borrowed until Decide returns
	Kind   Kind
	Params Params
	GCRA   GCRA
	// Wait is how long the call may wait for this limit, in ns (RESERVE;
	// reserve.go): 0 for none. RL.BUCKET, RL.LOG and RL.FIXED take it.
	Wait int64
}

// limitState is a limit's decision while its shard is locked.
type limitState struct {
	s         *shard
	si        int // the shard's index
	h         uint64
	found     bool
	stale     bool   // an expired record is at off, its tail at tail (lookupKeepLocked), not yet stored over or dropped
	off, tail int    // where the record found is, and its tail (valid until a record of the shard is stored)
	cur       entry  // the state found (zero if none)
	curRuns   []byte // its runs (RL.LOG) or section, borrowed from the shard
	rv        resv   // an RL.BUCKET's or RL.FIXED's section, decoded (reserve.go)
	next      entry  // the state to store, if write
	runs      []byte
	write     bool
}

// Batch is one RL.ALL call's limits and, after Decide, their results.
// Keep one per connection and Reset it for each call: its buffers are
// reused, so a call allocates nothing once they have grown. Not safe for
// concurrent use.
type Batch struct {
	Limits []Limit
	// Results holds, after Decide, each limit's reply in order: what its
	// own command answered when every limit admitted; when one rejected,
	// the rejecting limits' rejections and the others' cost-0 peeks.
	Results []Result
	states  []limitState
	shards  []int    // the indexes of the limits' shards, ascending
	runs    [][]byte // per limit: room for a new RL.LOG state's runs
	pends   [][]pend // per limit: room for a section's reservations
	peeks   []byte   // room for a peek's runs (discarded)
	// Wait and Ticket are, after Decide, the wait in ns of a call that
	// waits (reserve.go) and its ticket, the act time of every limit's
	// reservation; both 0 when the call acts now or is refused.
	Wait, Ticket int64
}

// Reset empties b for a new call.
func (b *Batch) Reset() {
	b.Limits, b.Results = b.Limits[:0], b.Results[:0]
}

// Add appends a limit.
func (b *Batch) Add(l Limit) { b.Limits = append(b.Limits, l) }

// Decide decides b's limits at now as one (see above) and reports whether
// any rejected. On an error nothing is stored and at is the index of the
// limit it concerns: ErrSameKey (at names the second), ErrWrongType,
// ErrExpire (a GCRA whose TTL computes below -1 ms), or ErrOOM.
func (st Store) Decide(b *Batch, now int64) (limited bool, at int, err error) {
	n := len(b.Limits)
	for i := 1; i < n; i++ {
		for j := range i {
			if string(b.Limits[i].Key) == string(b.Limits[j].Key) {
				return false, i, ErrSameKey
			}
		}
	}
	b.states = slices.Grow(b.states[:0], n)[:n]
	b.Results = slices.Grow(b.Results[:0], n)[:n]
	for len(b.runs) < n {
		b.runs = append(b.runs, nil)
		b.pends = append(b.pends, nil)
	}
	b.Wait, b.Ticket = 0, 0

	// Phase 1.
	b.shards = b.shards[:0]
	for i := range b.Limits {
		s, h := st.e.shardOf(b.Limits[i].Key)
		si := int((h >> 32) & st.e.mask) // as shardOf picks s
		b.states[i] = limitState{s: s, si: si, h: h}
		if !slices.Contains(b.shards, si) {
			b.shards = append(b.shards, si)
		}
	}
	slices.Sort(b.shards)
	if len(b.shards) > 1 && !st.held {
		st.e.cut.RLock() // a consistent cut never splits the call (Engine.cut)
		defer st.e.cut.RUnlock()
	}
	for _, si := range b.shards {
		st.lock(st.e.shards[si])
	}
	defer func() {
		for i := range b.states[:n] {
			if ls := &b.states[i]; ls.stale { // not stored over: drop it
				ls.s.dropStaleLocked(ls.h, b.Limits[i].Key)
				ls.stale = false
			}
		}
		for _, si := range b.shards {
			st.unlock(st.e.shards[si])
		}
	}()
	for _, si := range b.shards {
		now = max(now, st.e.shards[si].latest)
	}
	for _, si := range b.shards {
		st.e.shards[si].decisionTimeLocked(now)
	}
	if n > 1 && st.e.large.Load() {
		// The keys' slots, then their records, in two passes: their
		// cache misses overlap instead of following one another
		// (prefetch.go). A pipelined batch's Prefetch took every key of its
		// first calls, up to PrefetchMax, and none of the others' (or of a
		// call that comes another way: EXEC, the Envoy front); for the
		// keys it took, this pass finds them cached.
		var hs [PrefetchMax]uint64
		k := min(n, PrefetchMax)
		for i := range k {
			hs[i] = b.states[i].h
		}
		st.e.prefetchLocked(hs[:k])
	}

	// Phase 2.
	for i := range b.Limits {
		l, ls := &b.Limits[i], &b.states[i]
		ls.off, ls.cur, ls.tail, ls.curRuns, ls.found, ls.stale = ls.s.lookupKeepLocked(ls.h, l.Key, now)
		if ls.found && ls.cur.kind != l.Kind {
			return false, i, ErrWrongType
		}
		ls.rv = resv{}
		if ls.curRuns != nil && !algorithmOf(l.Kind).hasRuns {
			ls.rv = decodeSection(ls.curRuns, uint64(ls.cur.deadline), b.pends[i][:0])
			b.pends[i] = ls.rv.pend[:0]
			if l.Kind == KindFixed {
				ls.cur.w.c = ls.rv.next
			}
			ls.rv = ls.rv.at(now)
		}
	}
	if b.waits() {
		// One act time for all: the earliest at which every limit fits,
		// after every limit's line. At now, an ordinary call.
		if T, ok := b.commonAct(now); ok && T > now {
			limited = b.decideAt(now, T)
			if limited {
				return true, 0, nil
			}
			return b.store(st, now)
		}
	}
	for i := range b.Limits {
		r, err := b.decideOne(i, now)
		if err != nil {
			return false, i, err
		}
		b.Results[i] = r
		limited = limited || r.Limited
	}
	if limited {
		for i := range b.Limits {
			if !b.Results[i].Limited {
				b.Results[i] = b.peekOne(i, now)
			}
		}
		return true, 0, nil
	}
	return b.store(st, now)
}

// store stores the new states of an admitted call's limits (phase 3),
// once maxmemory lets every new key in.
func (b *Batch) store(st Store, now int64) (bool, int, error) {
	evicted := st.e.mem.evicted.Load()
	for i := range b.Limits {
		ls := &b.states[i]
		if ls.write && !ls.found {
			var err error
			ls.write, ls.off, ls.tail, ls.stale, err = st.newKeyAt(ls.s, ls.h, b.Limits[i].Key, b.Limits[i].Params.Cost == 0, ls.off, ls.tail, ls.stale, now)
			if err != nil {
				return false, i, err
			}
		}
	}

	// Phase 3. A key is looked up again before it is stored if its
	// record may have moved or gone: a limit of its shard was stored
	// before it (a store may move records), or a key was evicted to make
	// room for a new one (it may have been a record of this very call,
	// whose new state is then stored as a new record).
	if st.dry {
		return false, 0, nil
	}
	evictedAny := st.e.mem.evicted.Load() != evicted
	for i := range b.Limits {
		l, ls := &b.Limits[i], &b.states[i]
		if !ls.write {
			continue
		}
		off, tail := ls.off, ls.tail
		again := evictedAny
		for j := range i {
			again = again || b.states[j].write && b.states[j].si == ls.si
		}
		switch {
		case again && ls.stale:
			off, tail, ls.stale = ls.s.staleAtLocked(ls.h, l.Key)
		case again:
			off, _, tail, _, _ = ls.s.lookupRunsLocked(ls.h, l.Key, now)
		}
		if !ls.found && !ls.stale {
			off, tail = 0, 0
		}
		ls.stale = false
		ls.s.putLocked(off, tail, ls.h, l.Key, ls.next, ls.runs)
		if a := algorithmOf(l.Kind); a.stored != nil {
			a.stored(ls.s, ls.cur.w, ls.found, ls.next.w)
		}
	}
	return false, 0, nil
}

// tat is a GCRA limit's TAT found (0 if none).
func (ls *limitState) tat() uint64 {
	if !ls.found {
		return 0
	}
	return throttleOf(ls.cur.w).tat
}

// held is an RL.* limit's state found as an algorithm takes it (zero if
// none).
func (ls *limitState) held() held {
	if !ls.found {
		return held{}
	}
	return held{w: ls.cur.w, runs: ls.curRuns, deadline: ls.cur.deadline}
}

// decideOne decides limit i against its state found, filling its
// state's next, runs and write, and returns its own command's reply.
func (b *Batch) decideOne(i int, now int64) (Result, error) {
	l, ls := &b.Limits[i], &b.states[i]
	if l.Kind == KindThrottle {
		d, err := l.GCRA.Decide(ls.tat(), ls.found, now, l.Params.Cost)
		if err != nil {
			return Result{}, err
		}
		if l.Params.Cost != 0 && d.Write {
			// A guard (cost 0) is checked, never charged: its TAT stays.
			ls.write = true
			ls.next = entry{kind: KindThrottle, deadline: never}
			if d.TTLMs >= 0 {
				ls.next = redisExpiry(now/1_000_000 + d.TTLMs)
			}
			ls.next.w = throttleState{tat: d.NewTAT, farMs: ls.next.w.b}.words()
		}
		return d.rlResult(), nil
	}
	a := algorithmOf(l.Kind)
	var r Result
	if a.hasRuns {
		cur := ls.held()
		if a.found != nil {
			cur = a.found(ls.s, cur)
		}
		next, res, write := a.decideRuns(l.Params, cur, now, b.runs[i][:0])
		r, ls.write = res, write
		if write {
			ls.next = entry{kind: l.Kind, w: next.w, deadline: next.deadline}
			ls.runs = next.runs
			if cap(next.runs) <= 64<<10 {
				b.runs[i] = next.runs[:0]
			}
		}
	} else if ls.curRuns != nil { // a section: reservations in line, or were
		var w words
		var rv resv
		w, rv, r, ls.write = reserveWords(l.Kind, l.Params, l.Wait, ls.cur.w, ls.rv, now, now)
		if ls.write {
			ls.next, ls.runs = encodeWords(l.Kind, w, rv, now, r.ResetAfter, b.runs[i][:0])
			b.runs[i] = ls.runs[:0]
		}
	} else {
		next, res := a.decide(l.Params, ls.cur.w, now) // cur is zero for a fresh key
		r = res
		ls.write = next != ls.cur.w
		if ls.write {
			ls.next = entry{kind: l.Kind, w: next, deadline: deadlineAfter(now, r.ResetAfter)}
		}
	}
	if !ls.write && ls.found && ls.cur.deadline < maxDeadline {
		// As Store.Limit: a key that this call does not change expires
		// at its deadline, which bounds the waits it reports.
		r.clampTo(ls.cur.deadline - now)
	}
	return r, nil
}

// peekOne is the reply a cost-0 call of limit i would have had, for a
// limit that admitted in a call another limit refused. Nothing was
// stored, so its state found is still the shard's.
func (b *Batch) peekOne(i int, now int64) Result {
	l, ls := &b.Limits[i], &b.states[i]
	if l.Kind == KindThrottle {
		d, _ := l.GCRA.Decide(ls.tat(), ls.found, now, 0) // quantity 0 never fails
		return d.rlResult()
	}
	a := algorithmOf(l.Kind)
	p := l.Params
	p.Cost = 0
	var r Result
	if a.hasRuns {
		var pn held
		pn, r, _ = a.decideRuns(p, ls.held(), now, b.peeks[:0])
		if cap(pn.runs) <= 64<<10 {
			b.peeks = pn.runs[:0]
		}
	} else if ls.curRuns != nil {
		_, _, r, _ = reserveWords(l.Kind, p, 0, ls.cur.w, ls.rv, now, now)
	} else {
		_, r = a.decide(p, ls.cur.w, now)
	}
	if ls.found && ls.cur.deadline < maxDeadline {
		r.clampTo(ls.cur.deadline - now)
	}
	return r
}

// Summary is the call's answer in a single limiter's positions, after
// Decide (docs/algorithms.md, "Several limits at once"):
// index, the deciding limit (from 0): when limited, the rejecting limit
// with the longest wait (one that can never admit counts as the longest;
// ties: the lowest index), else the one with the fewest calls left;
// remaining, the identical calls still admitted now (0 when limited; a
// guard of cost 0 never runs out, and a call of guards only answers their
// least remaining); retryMs, the longest wait of the rejecting limits in
// ms (-1 when admitted or never); resetMs, the longest reset of all.
func (b *Batch) Summary() (index int, remaining, retryMs, resetMs int64) {
	limited := slices.ContainsFunc(b.Results, func(r Result) bool { return r.Limited })
	retryMs = -1
	never := false
	best := int64(-1)
	for i, r := range b.Results {
		ri, si := r.Millis()
		resetMs = max(resetMs, si)
		switch {
		case limited:
			if !r.Limited || never {
				continue
			}
			if ri < 0 { // this limit can never admit the call
				never, index, retryMs = true, i, -1
			} else if ri > retryMs {
				index, retryMs = i, ri
			}
		default:
			calls := int64(math.MaxInt64)
			if c := b.Limits[i].Params.Cost; c > 0 {
				calls = max(r.Remaining, 0) / c
			}
			if best < 0 || calls < best {
				index, best = i, calls
			}
		}
	}
	if !limited {
		remaining = best
		if best == math.MaxInt64 { // guards only: the least remaining
			for i, r := range b.Results {
				if i == 0 || r.Remaining < remaining {
					index, remaining = i, r.Remaining
				}
			}
		}
	}
	return index, remaining, retryMs, resetMs
}

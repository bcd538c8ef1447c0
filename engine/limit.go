package engine

// What the RL.* algorithms (fixed.go, log.go, slide.go, bucket.go; the
// contract is docs/algorithms.md) share: their parameters, their result,
// and the arithmetic helpers. Each is a pure function of (params, state,
// now); times are Unix ns; every decision is exact integer arithmetic
// (128-bit where products of counts and windows need it).

// Params are an RL.* call's arguments. For RL.BUCKET, Limit is the
// capacity, Window the refill period and Rate the tokens per period; the
// others ignore Rate. All are >= 0 (Window, Rate >= 1); the commands layer
// validates them.
type Params struct {
	Limit  int64
	Window int64 // ns
	Rate   int64
	Cost   int64
}

// Result is an RL.* reply before rounding: waits are exact ns, -1 for
// "never" (retry) or "not limited".
type Result struct {
	Limited    bool
	Limit      int64
	Remaining  int64
	RetryAfter int64 // ns until this request would be admitted; -1 if admitted or never (saturated)
	ResetAfter int64 // ns until the key is fresh; 0 if it is (saturated)
	// Token is the fencing token of a lease acquired (lease.go), or the
	// ticket of a reservation granted (its act time, reserve.go), else 0.
	Token int64
	// Wait is the ns a granted reservation waits until it acts (its
	// ticket minus now); 0 when it acts now, or when refused.
	Wait int64
	// exactMs, when set, holds the waits in ms computed without
	// saturating the ns (RL.BUCKET's can pass 2^63 ns).
	exactMs          bool
	retryMs, resetMs int64
}

// Millis returns RetryAfter and ResetAfter as the reply carries them:
// rounded up to whole milliseconds, -1 kept as -1.
func (r Result) Millis() (retry, reset int64) {
	if r.exactMs {
		return r.retryMs, r.resetMs
	}
	return CeilMs(r.RetryAfter), CeilMs(r.ResetAfter)
}

// clampTo caps the waits at life, the ns until the key expires and is
// fresh again, after which any request of cost <= limit is admitted.
func (r *Result) clampTo(life int64) {
	lifeMs := CeilMs(life)
	if r.Limited && r.RetryAfter > life {
		r.RetryAfter = life
		if r.exactMs {
			r.retryMs = lifeMs
		}
	}
	if r.ResetAfter > life {
		r.ResetAfter = life
		if r.exactMs {
			r.resetMs = lifeMs
		}
	}
}

// nsAndMs converts a wait in ns*rate units to ns (saturated) and whole ms
// rounded up (saturated), exactly.
func nsAndMs(waitS u128, rate uint64) (ns, ms int64) {
	n := waitS.quoCeil(rate)
	return n.satInt64(), n.quoCeil(1_000_000).satInt64()
}

// CeilMs is a time in ns as every RL.* reply carries it: whole ms,
// rounded up; a negative time (-1, "never" or "not limited") is -1.
func CeilMs(ns int64) int64 {
	if ns < 0 {
		return -1
	}
	return ns/1_000_000 + min(ns%1_000_000, 1)
}

// fitsUnder reports whether used + cost <= limit without overflow.
func fitsUnder(used, cost, limit int64) bool { return used <= limit && cost <= limit-used }

// Limit runs the RL.* algorithm kind for key at now and stores the
// outcome: a rejected request or a cost-0 peek changes nothing visible,
// and a key whose state becomes fresh is dropped. ErrWrongType if the key
// holds another kind.
func (st Store) Limit(kind Kind, key []byte, p Params, now int64) (Result, error) {
	a := algorithmOf(kind)
	s, h := st.e.shardOf(key)
	st.lock(s)
	defer st.unlock(s)
	now = s.decisionTimeLocked(now)
	off, e, tail, runs, ok, stale := s.lookupKeepLocked(h, key, now)
	if ok && e.kind != kind {
		return Result{}, ErrWrongType
	}
	var r Result
	write := false
	if a.hasRuns {
		var cur held
		if ok {
			cur = held{w: e.w, runs: runs, deadline: e.deadline}
		}
		if a.found != nil {
			cur = a.found(s, cur)
		}
		var next held
		next, r, write = a.decideRuns(p, cur, now, s.logBuf[:0])
		if write && !ok {
			var err error
			if write, off, tail, stale, err = st.newKeyAt(s, h, key, p.Cost == 0, off, tail, stale, now); err != nil {
				return Result{}, err
			}
		}
		if write = write && !st.dry; write {
			s.putLocked(off, tail, h, key, entry{kind: kind, w: next.w, deadline: next.deadline}, next.runs)
			if a.stored != nil {
				a.stored(s, e.w, ok, next.w)
			}
			if cap(next.runs) <= 64<<10 { // keep the scratch unless a huge log grew it
				s.logBuf = next.runs[:0]
			}
		}
	} else {
		if runs != nil { // a section: reservations in line, or were (reserve.go)
			return st.reserveLocked(s, off, tail, h, key, kind, p, 0, e, ok, runs, now)
		}
		var next words
		next, r = a.decide(p, e.w, now) // e is zero for a fresh key
		write = next != e.w
		if write && !ok {
			var err error
			if write, off, tail, stale, err = st.newKeyAt(s, h, key, p.Cost == 0, off, tail, stale, now); err != nil {
				return Result{}, err
			}
		}
		if write = write && !st.dry; write {
			s.putLocked(off, tail, h, key, entry{kind: kind, w: next, deadline: deadlineAfter(now, r.ResetAfter)}, nil)
		}
	}
	if !write {
		s.dropStaleIf(stale, h, key)
	}
	if ok && !write && e.deadline < maxDeadline { // a capped deadline is only a lower bound
		// The key expires (becomes fresh) at its deadline, set by the
		// parameters of its last write; a call with other parameters that
		// changes nothing cannot wait longer than that.
		r.clampTo(e.deadline - now)
	}
	return r, nil
}

// newKeyLocked decides whether a call may store a key that does not exist
// yet (maxmemory.go): it reports whether to write, or ErrOOM. A peek
// stores nothing while the engine refuses new keys, and is answered all
// the same.
func (st Store) newKeyLocked(s *shard, peek bool, now int64) (bool, error) {
	if st.dry {
		return false, nil
	}
	if peek && st.full() {
		return false, nil
	}
	if err := st.roomLocked(s, now); err != nil {
		return false, err
	}
	return true, nil
}

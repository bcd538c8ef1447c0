package engine

import "math/big"

// The RL.* algorithms of ../shared/spec/algorithms.md, as pure functions of
// (params, state, now). Times are Unix ns; every decision is exact integer
// arithmetic (128-bit where products of counts and windows need it).

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
	return ceilMs(r.RetryAfter), ceilMs(r.ResetAfter)
}

// clampTo caps the waits at life, the ns until the key expires and is
// fresh again, after which any request of cost <= limit is admitted.
func (r *Result) clampTo(life int64) {
	lifeMs := ceilMs(life)
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

func ceilMs(ns int64) int64 {
	if ns < 0 {
		return -1
	}
	return ns/1_000_000 + min(ns%1_000_000, 1)
}

// state is an algorithm's compact state: three words whose meaning each
// algorithm defines. The zero value is the fresh state.
type state struct{ a, b, c int64 }

// satAdd adds non-negative int64s, saturating at the maximum.
func satAdd(a, b int64) int64 {
	if a > 1<<63-1-b {
		return 1<<63 - 1
	}
	return a + b
}

// fitsUnder reports whether used + cost <= limit without overflow.
func fitsUnder(used, cost, limit int64) bool { return used <= limit && cost <= limit-used }

// RL.FIXED: a = start of the window the count belongs to (ns), b = count.
// The count carries over only while now is in that same window under the
// current window length, so changing the window length starts afresh
// unless the old start is also the new one.
func fixedDecide(p Params, s state, now int64) (state, Result) {
	start := now - now%p.Window
	count := int64(0)
	if s.a == start {
		count = s.b
	}
	end := satAdd(start, p.Window)
	r := Result{Limit: p.Limit, RetryAfter: -1}
	if fitsUnder(count, p.Cost, p.Limit) {
		if p.Cost > 0 {
			count += p.Cost
			s = state{a: start, b: count}
		}
	} else {
		r.Limited = true
		if p.Cost <= p.Limit {
			r.RetryAfter = end - now
		}
	}
	r.Remaining = max(p.Limit-count, 0)
	if count > 0 {
		r.ResetAfter = end - now
	}
	return s, r
}

// RL.SLIDE: a = start of the current window (ns), b = its count (cur),
// c = the previous window's count (prev). Rolled to now: the stored
// window is current (keep), previous (cur becomes prev) or older (fresh).
func slideRoll(p Params, s state, now int64) (start, cur, prev int64) {
	start = now - now%p.Window
	switch {
	case s.a == start:
		return start, s.b, s.c
	case s.a == start-p.Window:
		return start, 0, s.b
	}
	return start, 0, 0
}

func slideDecide(p Params, s state, now int64) (state, Result) {
	start, cur, prev := slideRoll(p, s, now)
	W := uint64(p.Window)
	e := uint64(now - start)
	weighted := mul64(uint64(prev), W-e) // prev*(W-e), the previous window's share times W
	r := Result{Limit: p.Limit, RetryAfter: -1}
	// Admit iff prev*(W-e) + cur*W < (limit-cost+1)*W, i.e. iff
	// cur + cost <= limit and prev*(W-e) < (limit-cost+1-cur)*W.
	admit := fitsUnder(cur, p.Cost, p.Limit) && weighted.less(mul64(uint64(p.Limit-p.Cost-cur)+1, W))
	if admit {
		if p.Cost > 0 {
			cur += p.Cost
			s = state{a: start, b: cur, c: prev}
		}
	} else {
		r.Limited = true
		if p.Cost <= p.Limit {
			r.RetryAfter = slideRetry(p, cur, prev, e)
		}
	}
	// remaining = max(0, ceil(limit - estimate)) = ceil((limit*W - prev*(W-e) - cur*W) / W).
	if cur < p.Limit {
		room := mul64(uint64(p.Limit-cur), W).sub(weighted)
		r.Remaining = int64(room.divCeil(W))
	}
	switch {
	case cur > 0:
		r.ResetAfter = satAdd(int64(W-e), p.Window) // both windows must pass
	case prev > 0:
		r.ResetAfter = int64(W - e)
	}
	return s, r
}

// slideRetry is the exact wait until a rejected request (cost <= limit)
// would pass, nothing else arriving: later in this window (the previous
// window's weight shrinks), in the next (this window's count becomes the
// weighted one), or at the start of the one after (both gone).
func slideRetry(p Params, cur, prev int64, e uint64) int64 {
	W := uint64(p.Window)
	untilNext := int64(W - e)
	// Later in this window: need prev*x < k*W with x = W - e' ns left,
	// k = limit - cost + 1 - cur >= 1.
	if fitsUnder(cur, p.Cost, p.Limit) && prev > 0 {
		k := uint64(p.Limit-p.Cost-cur) + 1
		xmax := mul64(k, W).sub(u128Of(1)).divFloor(uint64(prev)) // largest x with prev*x < k*W
		if xmax >= 1 && xmax < W-e {
			return int64(W - e - xmax)
		}
	}
	// In the next window: prev' = cur, cur' = 0; need cur*x < (limit-cost+1)*W.
	k := uint64(p.Limit-p.Cost) + 1
	if cur == 0 || mul64(uint64(cur), W).less(mul64(k, W)) {
		return untilNext
	}
	xmax := mul64(k, W).sub(u128Of(1)).divFloor(uint64(cur))
	if xmax >= 1 {
		return satAdd(untilNext, int64(W-xmax))
	}
	return satAdd(untilNext, p.Window)
}

// RL.BUCKET: the state is one timestamp, the time at which the bucket
// would be full again (a theoretical arrival time), kept exactly in units
// of 1/rate ns: a:b = that time times rate (128 bits), c = the rate it is
// scaled by. With rate and period constant every step is exact; a call
// with another rate rescales the time, rounding it up (toward fewer
// tokens), once.
func bucketTAT(p Params, s state, now int64) (tat u128, overflow bool) {
	nowS := mul64(uint64(now), uint64(p.Rate))
	tat = u128{uint64(s.a), uint64(s.b)}
	if s.c != 0 && s.c != p.Rate {
		if tat, overflow = tat.mulDivCeilOK(uint64(p.Rate), uint64(s.c)); overflow {
			return tat, true
		}
	}
	if tat.less(nowS) {
		return nowS, false
	}
	return tat, false
}

// bucketHuge decides a call whose rescaled state does not fit 128 bits
// (a rate far above the previous one on a bucket owing centuries of
// refill). Such a bucket owes more than any capacity can hold, so the call
// is rejected and nothing is stored; only the waits need computing, here
// with big integers (a rare path that may allocate).
func bucketHuge(p Params, s state, now int64) Result {
	rate, period := new(big.Int).SetInt64(p.Rate), new(big.Int).SetInt64(p.Window)
	tat := new(big.Int).SetUint64(uint64(s.a))
	tat.Lsh(tat, 64).Add(tat, new(big.Int).SetUint64(uint64(s.b)))
	tat.Mul(tat, rate)
	old := new(big.Int).SetInt64(s.c)
	tat.Add(tat, old).Sub(tat, big.NewInt(1)).Quo(tat, old) // ceil: rescaled toward fewer tokens
	debt := tat.Sub(tat, new(big.Int).Mul(big.NewInt(now), rate))
	ms := func(waitS *big.Int) int64 {
		d := new(big.Int).Mul(rate, big.NewInt(1_000_000))
		q := new(big.Int).Add(waitS, d)
		q.Sub(q, big.NewInt(1)).Quo(q, d)
		if !q.IsInt64() {
			return 1<<63 - 1
		}
		return q.Int64()
	}
	r := Result{Limited: true, Limit: p.Limit, RetryAfter: -1, exactMs: true, retryMs: -1}
	if p.Cost <= p.Limit {
		w := new(big.Int).Mul(big.NewInt(p.Cost-p.Limit), period)
		w.Add(w, debt)
		r.retryMs = ms(w)
		r.RetryAfter = 1<<63 - 1
	}
	r.resetMs = ms(debt)
	r.ResetAfter = 1<<63 - 1
	return r
}

// bucketResetMs is a bucket's reset_after in ms from its state alone (the
// full-again time is absolute), for PTTL: exact where the key's ns
// deadline saturates.
func bucketResetMs(s state, now int64) int64 {
	tat := u128{uint64(s.a), uint64(s.b)}
	_, ms := nsAndMs(tat.sub(mul64(uint64(now), uint64(s.c))), uint64(s.c))
	return ms
}

func bucketDecide(p Params, s state, now int64) (state, Result) {
	rate, period := uint64(p.Rate), uint64(p.Window)
	nowS := mul64(uint64(now), rate)
	tat, overflow := bucketTAT(p, s, now)
	if overflow {
		return s, bucketHuge(p, s, now)
	}
	capS := mul64(uint64(p.Limit), period)
	inc := mul64(uint64(p.Cost), period)
	debt := tat.sub(nowS) // how far from full, in ns*rate: tokens missing = debt/period
	r := Result{Limit: p.Limit, RetryAfter: -1, exactMs: true, retryMs: -1}
	if after := debt.add(inc); !capS.less(after) {
		if p.Cost > 0 {
			tat = tat.add(inc)
			debt = after
			s = state{a: int64(tat.hi), b: int64(tat.lo), c: p.Rate}
		}
	} else {
		r.Limited = true
		if p.Cost <= p.Limit {
			r.RetryAfter, r.retryMs = nsAndMs(after.sub(capS), rate)
		}
	}
	r.Remaining = int64(min(capS.sub(debt).divFloor(period), 1<<63-1))
	r.ResetAfter, r.resetMs = nsAndMs(debt, rate)
	return s, r
}

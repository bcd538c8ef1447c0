package engine

import (
	"encoding/binary"

	"github.com/rlserver/rlserver/internal/sat"
)

// RL.SLIDE, the sliding window counter (as Cloudflare describes it): two
// counters, the current window's and the previous one's, the previous
// weighted by how much of it the rolling window still overlaps. Cheap and
// smooth for even traffic, but it trusts the spread: a burst just after a
// boundary reaches twice the limit in a rolling window.

// slideState is an RL.SLIDE key's state. The zero value is fresh.
type slideState struct {
	start int64 // start of the current window, Unix ns
	cur   int64 // units admitted in the current window
	prev  int64 // units admitted in the window before it
}

func slideOf(w words) slideState  { return slideState{start: w.a, cur: w.b, prev: w.c} }
func (s slideState) words() words { return words{a: s.start, b: s.cur, c: s.prev} }

var slideAlgorithm = Algorithm{
	Kind: KindSlide, Name: "slide",
	// Body: dur(deadline - start) | cur | prev (appendDur).
	encode: func(dst []byte, dl uint64, w words, _ []byte) []byte {
		s := slideOf(w)
		dst = appendDur(dst, int64(dl-uint64(s.start)))
		dst = binary.AppendUvarint(dst, uint64(s.cur))
		return binary.AppendUvarint(dst, uint64(s.prev))
	},
	decode: func(b []byte, i int, dl uint64) (words, int, int) {
		var s slideState
		d, i := durAt(b, i)
		s.start = int64(dl - uint64(d))
		u, i := uvarint(b, i)
		s.cur = int64(u)
		u, i = uvarint(b, i)
		s.prev = int64(u)
		return s.words(), 0, i
	},
	decide: slideWords,
}

// slideRoll rolls a state to now: the stored window is current (keep),
// previous (cur becomes prev) or older (fresh).
func slideRoll(p Params, s slideState, now int64) (start, cur, prev int64) {
	start = now - now%p.Window
	switch {
	case s.start == start:
		return start, s.cur, s.prev
	case s.start == start-p.Window:
		return start, 0, s.cur
	}
	return start, 0, 0
}

// slideWords is slideDecide over the state's words.
func slideWords(p Params, w words, now int64) (words, Result) {
	next, r := slideDecide(p, slideOf(w), now)
	return next.words(), r
}

// slideDecide decides an RL.SLIDE request: the previous window's count
// weighted by how much of it the rolling window still covers, plus the
// current window's count.
func slideDecide(p Params, s slideState, now int64) (slideState, Result) {
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
			s = slideState{start: start, cur: cur, prev: prev}
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
		r.ResetAfter = sat.Add(int64(W-e), p.Window) // both windows must pass
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
		xmax := mul64(k, W).sub(one).divFloor(uint64(prev)) // largest x with prev*x < k*W
		if xmax >= 1 && xmax < W-e {
			return int64(W - e - xmax)
		}
	}
	// In the next window: prev' = cur, cur' = 0; need cur*x < (limit-cost+1)*W.
	k := uint64(p.Limit-p.Cost) + 1
	if cur == 0 || mul64(uint64(cur), W).less(mul64(k, W)) {
		return untilNext
	}
	xmax := mul64(k, W).sub(one).divFloor(uint64(cur))
	if xmax >= 1 {
		return sat.Add(untilNext, int64(W-xmax))
	}
	return sat.Add(untilNext, p.Window)
}

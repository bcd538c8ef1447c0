package engine

import (
	"errors"
	"math"
	"math/bits"
)

// GCRA (the generic cell rate algorithm) exactly as redis-cell v0.5 runs it
// for CL.THROTTLE; docs/cl-throttle.md is the contract and its
// section numbers are quoted below.
//
// The state is one "theoretical arrival time" (TAT): the instant at which the
// bucket would be empty again if no more requests came. A request of
// quantity Q moves TAT forward by Q emission intervals; it is admitted when
// the new TAT is at most DVT (= limit emission intervals) ahead of now.

// Errors of CL.THROTTLE's arithmetic; their texts are mapped to redis-cell's
// wording by the commands package.
var (
	// ErrZeroRate: the emission interval computes to 0 (§4.4).
	ErrZeroRate = errors.New("engine: zero rates are not supported")
	// ErrExpire: the TTL to hand to the key is below -1 ms (§6.3). The new
	// TAT has been stored (with no expiry), as Redis >= 7 does.
	ErrExpire = errors.New("engine: error while setting key expire")
)

// GCRA holds CL.THROTTLE's derived quantities for one (max_burst, count,
// period) triple, all in nanoseconds with int64 wrap-around where upstream
// wraps. Build it with NewGCRA; the zero value is not valid.
type GCRA struct {
	EI    int64 // emission interval
	Limit int64 // max_burst + 1
	DVT   int64 // delay variation tolerance, EI * Limit
}

// NewGCRA derives EI, Limit and DVT from CL.THROTTLE's arguments (§4) and
// returns ErrZeroRate when EI is 0. period is in whole seconds.
func NewGCRA(maxBurst, count, period int64) (GCRA, error) {
	g := GCRA{EI: emissionInterval(count, period)}
	g.Limit = maxBurst + 1
	g.DVT = g.EI * g.Limit
	if g.EI == 0 {
		return g, ErrZeroRate
	}
	return g, nil
}

// NewGCRAPeriod is NewGCRA with the period in ns, for RL.ALL's GCRA
// limits, which take the RL.* period syntax. For a whole number of
// seconds it derives exactly what NewGCRA does: the float64 of the exact
// period in ns, divided by count.
func NewGCRAPeriod(maxBurst, count, periodNs int64) (GCRA, error) {
	g := GCRA{Limit: maxBurst + 1}
	if count != 0 && periodNs != 0 {
		g.EI = f64ToI64(float64(periodNs) / float64(count))
	}
	g.DVT = g.EI * g.Limit
	if g.EI == 0 {
		return g, ErrZeroRate
	}
	return g, nil
}

// emissionInterval is period*1e9/count computed as upstream does: the exact
// 128-bit product rounded once to float64, a float division, then a
// saturating truncation to int64 (§4.1).
func emissionInterval(count, period int64) int64 {
	if count == 0 || period == 0 {
		return 0
	}
	mag := uint64(period)
	if period < 0 {
		mag = uint64(-period) // -MinInt64 wraps to itself, whose uint64 is 2^63: right
	}
	hi, lo := bits.Mul64(mag, 1e9)
	p := u128ToFloat(hi, lo)
	if period < 0 {
		p = -p
	}
	return f64ToI64(p / float64(count))
}

// ThrottleResult is CL.THROTTLE's reply: [limited, limit, remaining,
// retry_after, reset_after], times in seconds as redis-cell rounds them.
type ThrottleResult struct {
	Limited    bool
	Limit      int64
	Remaining  int64
	RetryAfter int64
	ResetAfter int64
}

// ThrottleDecision is what one GCRA step decides: the reply and, when Write
// is set, the TAT to store and its expiry.
type ThrottleDecision struct {
	Result ThrottleResult
	Write  bool
	// NewTAT is the TAT to store, modulo 2^64 (§5.1).
	NewTAT uint64
	// TTLMs is the relative expiry in ms handed to Redis (§6.3): -1 means
	// persistent; below -1 the write still happens, with no expiry, and
	// Decide's error is ErrExpire.
	TTLMs int64
	// retry and ttl are RetryAfter and ResetAfter in ns before redis-cell
	// rounds them to seconds (retry negative: admitted, or never).
	retry, ttl i128
}

// rlResult is the decision as the RL.* commands reply: the waits in whole
// ms rounded up (RL.ALL's GCRA limits), -1 for a retry when admitted or
// never possible.
func (d ThrottleDecision) rlResult() Result {
	r := Result{Limited: d.Result.Limited, Limit: d.Result.Limit, Remaining: d.Result.Remaining, exactMs: true,
		RetryAfter: -1, retryMs: -1}
	if !d.retry.isNeg() {
		r.RetryAfter, r.retryMs = d.retry.satNs(), d.retry.ceilMs()
	}
	ttl := d.ttl
	if ttl.isNeg() {
		ttl = i128{}
	}
	r.ResetAfter, r.resetMs = ttl.satNs(), ttl.ceilMs()
	return r
}

const nsPerSec = 1_000_000_000

// Decide runs one CL.THROTTLE call (§6) for quantity q at now (Unix ns) on a
// key holding tat (valid only if hasTAT). It is a pure function: the caller
// stores the outcome. The error is ErrExpire or nil.
func (g GCRA) Decide(tat uint64, hasTAT bool, now, q int64) (ThrottleDecision, error) {
	inc := g.EI * q
	nowW := i128FromI64(now)
	tat0 := nowW
	if hasTAT {
		tat0 = i128FromU64(tat)
	}
	base := tat0
	if nowW.cmp(tat0) > 0 {
		base = nowW
	}
	newTAT := base.add(i128FromI64(inc))
	diff := nowW.sub(newTAT.sub(i128FromI64(g.DVT)))

	var d ThrottleDecision
	var ttl, retry i128
	if diff.isNeg() {
		d.Result.Limited = true
		retry = i128FromI64(-nsPerSec)
		if inc <= g.DVT {
			retry = diff.neg()
		}
		ttl = tat0.sub(nowW)
	} else {
		retry = i128FromI64(-nsPerSec)
		ttl = newTAT.sub(nowW)
		d.Write = true
		d.NewTAT = newTAT.lo
		d.TTLMs, _ = ttl.quoRem(1_000_000)
	}
	d.Result.Limit = g.Limit
	next := i128FromI64(g.DVT).sub(ttl)
	if next.cmp(i128FromI64(g.EI).neg()) > 0 {
		nextUs, _ := next.quoRem(1000)
		d.Result.Remaining = f64ToI64(float64(nextUs) / float64(g.EI/1000))
	}
	d.Result.RetryAfter = replySeconds(retry)
	d.Result.ResetAfter = replySeconds(ttl)
	d.retry, d.ttl = retry, ttl
	if d.Write && d.TTLMs < -1 {
		return d, ErrExpire
	}
	return d, nil
}

// replySeconds is redis-cell's seconds rounding (§6.1 secs): whole seconds
// as a float sum, plus one only when the leftover is at least one whole
// millisecond.
func replySeconds(d i128) int64 {
	s, r := d.quoRem(nsPerSec)
	v := f64ToI64(float64(s) + float64(r)/1e9)
	if r/1_000_000 > 0 {
		v++
	}
	return v
}

// maxDeadline caps expiry deadlines in ns (April 2262); deadlines further
// out (TTLs of centuries) are kept as "far future" rather than
// overflowing. An RL.* key's capped deadline is a lower bound of its
// life; a CL.THROTTLE key keeps its exact Redis expiry beside it
// (farDeadline in throttle.go, docs/cl-throttle.md §6.4).
const maxDeadline = math.MaxInt64 - 1

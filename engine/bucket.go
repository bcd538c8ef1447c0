package engine

import (
	"encoding/binary"
	"math/big"
	"math/bits"

	"github.com/rlserver/rlserver/internal/zigzag"
)

// RL.BUCKET, the token bucket: capacity tokens, refilled at rate per
// period, never floored (a client polling faster than one token interval
// still earns its tokens). The state is one timestamp, the time at which
// the bucket would be full again (a theoretical arrival time), kept
// exactly in units of 1/rate ns. With rate and period constant every step
// is exact; a call with another rate rescales the time, rounding it up
// (toward fewer tokens), once.

// bucketState is an RL.BUCKET key's state. The zero value is fresh.
type bucketState struct {
	tat  u128  // the full-again time times rate (ns*rate)
	rate int64 // the rate tat is scaled by; 0 when fresh
}

func bucketOf(w words) bucketState {
	return bucketState{tat: u128{uint64(w.a), uint64(w.b)}, rate: w.c}
}
func (s bucketState) words() words {
	return words{a: int64(s.tat.hi), b: int64(s.tat.lo), c: s.rate}
}

var bucketAlgorithm = Algorithm{
	Kind: KindBucket, Name: "bucket",
	// Body: rate | zz(lo(D)) | zz(hi(D) - sign(lo(D))), where D =
	// deadline*rate - tat (128-bit, wrapping): the full-again time sits
	// close to the deadline, so D is small.
	encode: func(dst []byte, dl uint64, w words, _ []byte) []byte {
		s := bucketOf(w)
		hi, lo := bucketDelta(dl, s)
		dst = binary.AppendUvarint(dst, uint64(s.rate))
		dst = binary.AppendUvarint(dst, zigzag.Encode(int64(lo)))
		return binary.AppendUvarint(dst, zigzag.Encode(int64(hi-uint64(int64(lo)>>63))))
	},
	decode: func(b []byte, i int, dl uint64) (words, int, int) {
		var s bucketState
		u, i := uvarint(b, i)
		s.rate = int64(u)
		var zl, zh uint64
		zl, i = uvarint(b, i)
		zh, i = uvarint(b, i)
		lo := uint64(zigzag.Decode(zl))
		hi := uint64(zigzag.Decode(zh)) + uint64(int64(lo)>>63)
		ph, pl := bits.Mul64(dl, uint64(s.rate))
		tl, borrow := bits.Sub64(pl, lo, 0)
		th, _ := bits.Sub64(ph, hi, borrow)
		s.tat = u128{th, tl}
		return s.words(), 0, i
	},
	decide: bucketWords,
	// Exact even past the ns deadline's range.
	lifeMs: func(e entry, now int64) int64 { return bucketResetMs(bucketOf(e.w), now) },
}

// bucketDelta is D = deadline*rate - tat as a 128-bit (hi, lo), wrapping.
func bucketDelta(dl uint64, s bucketState) (hi, lo uint64) {
	ph, pl := bits.Mul64(dl, uint64(s.rate))
	lo, borrow := bits.Sub64(pl, s.tat.lo, 0)
	hi, _ = bits.Sub64(ph, s.tat.hi, borrow)
	return hi, lo
}

// bucketTAT is the state's full-again time rescaled to p's rate, and no
// earlier than now.
func bucketTAT(p Params, s bucketState, now int64) (tat u128, overflow bool) {
	nowS := mul64(uint64(now), uint64(p.Rate))
	tat = s.tat
	if s.rate != 0 && s.rate != p.Rate {
		if tat, overflow = tat.mulDivCeilOK(uint64(p.Rate), uint64(s.rate)); overflow {
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
func bucketHuge(p Params, s bucketState, now int64) Result {
	rate, period := new(big.Int).SetInt64(p.Rate), new(big.Int).SetInt64(p.Window)
	tat := new(big.Int).SetUint64(s.tat.hi)
	tat.Lsh(tat, 64).Add(tat, new(big.Int).SetUint64(s.tat.lo))
	tat.Mul(tat, rate)
	old := new(big.Int).SetInt64(s.rate)
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
func bucketResetMs(s bucketState, now int64) int64 {
	_, ms := nsAndMs(s.tat.sub(mul64(uint64(now), uint64(s.rate))), uint64(s.rate))
	return ms
}

// bucketWords is bucketDecide over the state's words.
func bucketWords(p Params, w words, now int64) (words, Result) {
	next, r := bucketDecide(p, bucketOf(w), now)
	return next.words(), r
}

// bucketDecide decides an RL.BUCKET request: admitted while the bucket,
// refilled to now, holds cost tokens; an admission moves the full-again
// time cost refill intervals later.
func bucketDecide(p Params, s bucketState, now int64) (bucketState, Result) {
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
			s = bucketState{tat: tat, rate: p.Rate}
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

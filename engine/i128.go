package engine

import (
	"math"
	"math/bits"
)

// i128 is a signed 128-bit integer in two's complement. CL.THROTTLE needs it:
// a stored TAT is an unsigned 64-bit value and TAT + increment, or a
// difference of such times, does not fit int64 (docs/cl-throttle.md §7).
type i128 struct {
	hi int64
	lo uint64
}

func i128FromI64(v int64) i128  { return i128{hi: v >> 63, lo: uint64(v)} }
func i128FromU64(v uint64) i128 { return i128{lo: v} }

func (a i128) add(b i128) i128 {
	lo, c := bits.Add64(a.lo, b.lo, 0)
	return i128{hi: a.hi + b.hi + int64(c), lo: lo}
}

func (a i128) sub(b i128) i128 {
	lo, br := bits.Sub64(a.lo, b.lo, 0)
	return i128{hi: a.hi - b.hi - int64(br), lo: lo}
}

func (a i128) neg() i128 { return i128{}.sub(a) }

func (a i128) isNeg() bool { return a.hi < 0 }

// cmp returns -1, 0 or +1 as a is less than, equal to or greater than b.
func (a i128) cmp(b i128) int {
	switch {
	case a.hi < b.hi:
		return -1
	case a.hi > b.hi:
		return 1
	case a.lo < b.lo:
		return -1
	case a.lo > b.lo:
		return 1
	}
	return 0
}

// quoRem divides by d > 0, truncating toward zero like Rust and Go integer
// division; the remainder has a's sign. The quotient must fit in int64,
// which holds for every time CL.THROTTLE computes (|a| < 2^67) and d >= 1000.
func (a i128) quoRem(d int64) (q, r int64) {
	neg := a.isNeg()
	if neg {
		a = a.neg()
	}
	hi, lo := uint64(a.hi), a.lo
	qHi := hi / uint64(d)
	qLo, rem := bits.Div64(hi%uint64(d), lo, uint64(d))
	q = int64(qLo)
	if qHi != 0 || q < 0 { // out of int64 range: saturate (not reached for times)
		q = math.MaxInt64
	}
	r = int64(rem)
	if neg {
		return -q, -r
	}
	return q, r
}

// u128ToFloat returns the float64 nearest to hi*2^64+lo (ties to even), as
// Rust's i128-to-f64 conversion does.
func u128ToFloat(hi, lo uint64) float64 {
	if hi == 0 {
		return float64(lo)
	}
	n := 128 - bits.LeadingZeros64(hi)
	s := uint(n - 64)
	m := hi<<(64-s) | lo>>s
	if lo<<(64-s) != 0 {
		m |= 1 // sticky bit: far below the 53-bit rounding point, so ties round right
	}
	return math.Ldexp(float64(m), int(s))
}

// f64ToI64 converts like Rust's `as i64`: truncate toward zero, saturate at
// the int64 bounds, NaN gives 0. Go's int64(f) does not saturate.
func f64ToI64(f float64) int64 {
	switch {
	case f != f:
		return 0
	case f >= 9223372036854775807.0:
		return math.MaxInt64
	case f <= -9223372036854775808.0:
		return math.MinInt64
	}
	return int64(f)
}

// satNs is a >= 0 as an int64 of ns, saturated.
func (a i128) satNs() int64 {
	if a.hi != 0 || a.lo > math.MaxInt64 {
		return math.MaxInt64
	}
	return int64(a.lo)
}

// ceilMs is a >= 0 ns in whole ms rounded up, saturated.
func (a i128) ceilMs() int64 {
	q, r := a.quoRem(1_000_000)
	if r > 0 && q < math.MaxInt64 {
		q++
	}
	return q
}

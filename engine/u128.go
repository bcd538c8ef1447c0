package engine

import "math/bits"

// u128 is an unsigned 128-bit integer. RL.SLIDE and RL.BUCKET need it:
// counts up to 2^62 times windows up to 10 years in ns (2^59) do not fit
// 64 bits, and the decisions must be exact.
type u128 struct{ hi, lo uint64 }

// one is the u128 1.
var one = u128{lo: 1}

func mul64(a, b uint64) u128 {
	hi, lo := bits.Mul64(a, b)
	return u128{hi, lo}
}

// add saturates at the maximum (never reached by the algorithms' bounded
// inputs; saturation keeps a bug from wrapping to a small value).
func (a u128) add(b u128) u128 {
	lo, c := bits.Add64(a.lo, b.lo, 0)
	hi, c2 := bits.Add64(a.hi, b.hi, c)
	if c2 != 0 {
		return u128{^uint64(0), ^uint64(0)}
	}
	return u128{hi, lo}
}

// sub returns a-b, or 0 when b > a.
func (a u128) sub(b u128) u128 {
	if a.less(b) {
		return u128{}
	}
	lo, br := bits.Sub64(a.lo, b.lo, 0)
	return u128{a.hi - b.hi - br, lo}
}

func (a u128) less(b u128) bool { return a.hi < b.hi || (a.hi == b.hi && a.lo < b.lo) }

// divCeil returns ceil(a/d) for d > 0, saturated to uint64.
func (a u128) divCeil(d uint64) uint64 {
	q, r := a.divRem(d)
	if r != 0 && q != ^uint64(0) {
		q++
	}
	return q
}

// divFloor returns floor(a/d) for d > 0, saturated to uint64.
func (a u128) divFloor(d uint64) uint64 {
	q, _ := a.divRem(d)
	return q
}

func (a u128) divRem(d uint64) (q, r uint64) {
	if a.hi >= d {
		return ^uint64(0), 0 // quotient beyond 64 bits: saturate
	}
	return bits.Div64(a.hi, a.lo, d)
}

// mulDivCeilOK returns ceil(a*m/d) (d > 0), or the u128 maximum and true
// when the result does not fit.
func (a u128) mulDivCeilOK(m, d uint64) (u128, bool) {
	// 192-bit product p2:p1:p0.
	h1, p0 := bits.Mul64(a.lo, m)
	h2, l2 := bits.Mul64(a.hi, m)
	p1, c := bits.Add64(h1, l2, 0)
	p2 := h2 + c
	if p2 >= d {
		return u128{^uint64(0), ^uint64(0)}, true
	}
	q1, r := bits.Div64(p2, p1, d)
	q0, r := bits.Div64(r, p0, d)
	out := u128{q1, q0}
	if r != 0 {
		if out == (u128{^uint64(0), ^uint64(0)}) {
			return out, true
		}
		out = out.add(one)
	}
	return out, false
}

// satInt64 clamps a u128 to int64.
func (a u128) satInt64() int64 {
	if a.hi != 0 || a.lo > 1<<63-1 {
		return 1<<63 - 1
	}
	return int64(a.lo)
}

// quoCeil returns ceil(a/d) for d > 0 as a u128 (no saturation needed).
func (a u128) quoCeil(d uint64) u128 {
	qhi, r := a.hi/d, a.hi%d
	qlo, r := bits.Div64(r, a.lo, d)
	q := u128{qhi, qlo}
	if r != 0 {
		q = q.add(one)
	}
	return q
}

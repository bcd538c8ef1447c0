// Package sat is saturating integer arithmetic: the sums of times and
// durations that must stop at the ends of the int64 range instead of
// wrapping (a deadline centuries out, a clock reading far in the future).
// It imports nothing, so every package may use it.
package sat

// Add returns a+b, saturated to the int64 range.
func Add(a, b int64) int64 {
	s := a + b
	if (s > a) != (b > 0) {
		if b > 0 {
			return 1<<63 - 1
		}
		return -1 << 63
	}
	return s
}

// Sub returns a-b, saturated to the int64 range.
func Sub(a, b int64) int64 {
	s := a - b
	if (s < a) != (b > 0) {
		if b > 0 {
			return -1 << 63
		}
		return 1<<63 - 1
	}
	return s
}

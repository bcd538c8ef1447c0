// Package redisint reads integers as Redis reads its protocol lengths and
// most integer arguments: util.c's string2ll.
package redisint

// Parse reads b as string2ll does: "0", or an optional '-', a digit 1-9
// and more digits, within an int64. So "+1", "01", "-0", " 1" and "" are
// not integers, as in Redis. It does not allocate.
func Parse(b []byte) (int64, bool) {
	if len(b) == 1 && b[0] == '0' {
		return 0, true
	}
	neg := false
	if len(b) > 0 && b[0] == '-' {
		neg, b = true, b[1:]
	}
	if len(b) == 0 || len(b) > 19 || b[0] < '1' || b[0] > '9' {
		return 0, false
	}
	var u uint64 // 19 digits fit
	for _, c := range b {
		if c < '0' || c > '9' {
			return 0, false
		}
		u = u*10 + uint64(c-'0')
	}
	switch {
	case neg && u <= 1<<63:
		return int64(-u), true // MinInt64 too
	case !neg && u < 1<<63:
		return int64(u), true
	}
	return 0, false
}

package commands

// parseInt64 parses a decimal int64 exactly as Redis (and Rust's
// str::parse::<i64>, docs/cl-throttle.md §2.2) accept it: an optional single
// sign, then one or more ASCII digits, in range. It does not allocate.
func parseInt64(b []byte) (int64, bool) {
	neg := false
	if len(b) > 0 && (b[0] == '+' || b[0] == '-') {
		neg = b[0] == '-'
		b = b[1:]
	}
	u, ok := parseDigits(b)
	if !ok {
		return 0, false
	}
	if neg {
		if u > 1<<63 {
			return 0, false
		}
		return -int64(u), true
	}
	if u > 1<<63-1 {
		return 0, false
	}
	return int64(u), true
}

// parseUint64 parses an unsigned decimal with an optional '+', as Rust's
// str::parse::<u64> does (a stored CL.THROTTLE TAT, docs/cl-throttle.md §5.2).
func parseUint64(b []byte) (uint64, bool) {
	if len(b) > 0 && b[0] == '+' {
		b = b[1:]
	}
	return parseDigits(b)
}

// parseCursor parses a SCAN cursor as Redis does, with C's strtoul in base
// 10: an optional sign and digits within a uint64, a minus wrapping the
// value around (-1 is the largest cursor), and the empty string 0. A
// leading space, a sign without digits or anything after the digits is no
// cursor.
func parseCursor(b []byte) (uint64, bool) {
	if len(b) == 0 {
		return 0, true
	}
	neg := b[0] == '-'
	if b[0] == '-' || b[0] == '+' {
		b = b[1:]
	}
	u, ok := parseDigits(b)
	if neg {
		u = -u
	}
	return u, ok
}

// parseDigits parses one or more ASCII digits into a uint64, refusing
// overflow.
func parseDigits(b []byte) (uint64, bool) {
	if len(b) == 0 {
		return 0, false
	}
	var u uint64
	if len(b) <= 19 { // below 10^19: no overflow to check for
		for _, c := range b {
			if c < '0' || c > '9' {
				return 0, false
			}
			u = u*10 + uint64(c-'0')
		}
		return u, true
	}
	for _, c := range b {
		if c < '0' || c > '9' {
			return 0, false
		}
		d := uint64(c - '0')
		if u > (1<<64-1-d)/10 {
			return 0, false
		}
		u = u*10 + d
	}
	return u, true
}

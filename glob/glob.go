// Package glob is Redis's glob matching (its stringmatchlen), which KEYS,
// SCAN MATCH, CONFIG GET, PSUBSCRIBE and the users' key and channel
// patterns (package acl) share.
//
// This package imports nothing.
package glob

// Match reports whether s matches pattern as Redis's stringmatchlen
// does: '*', '?', '[...]' with ranges and '^' negation, '\' escapes; with
// nocase, ASCII letters match either case. It is iterative for '*' runs to
// stay linear in the common case and bounded in the worst (a nesting limit
// like Redis's). It allocates nothing.
func Match(pattern, s []byte, nocase bool) bool {
	return matchDepth(pattern, s, nocase, 0)
}

func lower(c byte) byte {
	if 'A' <= c && c <= 'Z' {
		return c + 'a' - 'A'
	}
	return c
}

func matchDepth(p, s []byte, nocase bool, depth int) bool {
	if depth > 1000 {
		return false
	}
	for len(p) > 0 {
		switch p[0] {
		case '*':
			for len(p) > 1 && p[1] == '*' {
				p = p[1:]
			}
			if len(p) == 1 {
				return true
			}
			for i := 0; i <= len(s); i++ {
				if matchDepth(p[1:], s[i:], nocase, depth+1) {
					return true
				}
			}
			return false
		case '?':
			if len(s) == 0 {
				return false
			}
			s = s[1:]
		case '[':
			if len(s) == 0 {
				return false
			}
			p = p[1:]
			not := len(p) > 0 && p[0] == '^'
			if not {
				p = p[1:]
			}
			match := false
			for {
				if len(p) == 0 {
					break
				}
				if p[0] == '\\' && len(p) >= 2 {
					p = p[1:]
					if p[0] == s[0] {
						match = true
					}
				} else if p[0] == ']' {
					break
				} else if len(p) >= 3 && p[1] == '-' {
					start, end := p[0], p[2]
					if start > end {
						start, end = end, start
					}
					c := s[0]
					if nocase {
						start, end, c = lower(start), lower(end), lower(c)
					}
					p = p[2:]
					if c >= start && c <= end {
						match = true
					}
				} else if p[0] == s[0] || (nocase && lower(p[0]) == lower(s[0])) {
					match = true
				}
				p = p[1:]
			}
			if len(p) == 0 { // no closing ']': Redis treats the end as closing
				p = []byte{']'}
			}
			if not {
				match = !match
			}
			if !match {
				return false
			}
			s = s[1:]
		case '\\':
			if len(p) >= 2 {
				p = p[1:]
			}
			fallthrough
		default:
			if len(s) == 0 || (p[0] != s[0] && !(nocase && lower(p[0]) == lower(s[0]))) {
				return false
			}
			s = s[1:]
		}
		p = p[1:]
		if len(s) == 0 {
			for len(p) > 0 && p[0] == '*' {
				p = p[1:]
			}
			break
		}
	}
	return len(p) == 0 && len(s) == 0
}

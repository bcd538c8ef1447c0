// Package ascii compares protocol words as Redis does (strcasecmp), and
// maps their case: command names, subcommands, keywords, rules and config
// names match in any ASCII case, and no other Unicode letter stands for
// one of theirs (strings.EqualFold would take ſ, U+017F, for s). It
// imports nothing, so every package may use it.
package ascii

// EqualFold reports whether b and s are equal ignoring ASCII case. b is
// a word as read from the wire or a rule, bytes or a string.
func EqualFold[B []byte | string](b B, s string) bool {
	if len(b) != len(s) {
		return false
	}
	for i := range len(b) {
		if x, y := b[i], s[i]; x != y && lower(x) != lower(y) {
			return false
		}
	}
	return true
}

// lower maps an ASCII upper-case letter to its lower case, any other byte
// to itself.
func lower(c byte) byte {
	if 'A' <= c && c <= 'Z' {
		return c + 'a' - 'A'
	}
	return c
}

// AppendLower appends b to dst with its ASCII upper-case letters made
// lower case, and returns the extended slice: Lower without an allocation
// when dst has room (a name looked up in a map of lower-case names).
func AppendLower[B []byte | string](dst []byte, b B) []byte {
	for i := range len(b) {
		dst = append(dst, lower(b[i]))
	}
	return dst
}

// Lower returns b with its ASCII upper-case letters made lower case, for a
// switch over lower-case names. Other bytes stay as they are: Unicode's
// mapping would make the Kelvin sign (U+212A) a k.
func Lower[B []byte | string](b B) string { return mapCase(b, 'A', 'Z') }

// Upper returns b with its ASCII lower-case letters made upper case. Other
// bytes stay as they are: Unicode's mapping would make ſ (U+017F) an S and
// ı (U+0131) an I.
func Upper[B []byte | string](b B) string { return mapCase(b, 'a', 'z') }

// mapCase returns b with the bytes from lo to hi moved to the other case.
func mapCase[B []byte | string](b B, lo, hi byte) string {
	for i := range len(b) {
		if lo <= b[i] && b[i] <= hi {
			out := make([]byte, len(b)) // a copy: []byte(b) of a []byte is b itself
			copy(out, b)
			for j := i; j < len(out); j++ {
				if c := out[j]; lo <= c && c <= hi {
					out[j] = c ^ 0x20
				}
			}
			return string(out)
		}
	}
	return string(b)
}

// Package ascii compares protocol words as Redis does (strcasecmp):
// command names, subcommands and keywords match in any ASCII case, and no
// other Unicode letter stands for one of theirs (strings.EqualFold would
// take ſ, U+017F, for s). It imports nothing, so every package may use it.
package ascii

// EqualFold reports whether b and s are equal ignoring ASCII case.
func EqualFold(b []byte, s string) bool {
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

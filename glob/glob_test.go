package glob

import "testing"

// TestMatch: Redis's stringmatchlen on the cases its users meet (KEYS,
// SCAN MATCH, PSUBSCRIBE, CONFIG GET without case, ACL key patterns).
func TestMatch(t *testing.T) {
	for _, tc := range []struct {
		pattern, s string
		nocase     bool
		want       bool
	}{
		{"*", "", false, true},
		{"*", "anything", false, true},
		{"app:*", "app:x", false, true},
		{"app:*", "App:x", false, false},
		{"app:*", "App:x", true, true},
		{"app:*", "other:x", false, false},
		{"h?llo", "hello", false, true},
		{"h?llo", "hllo", false, false},
		{"h[ae]llo", "hallo", false, true},
		{"h[ae]llo", "hillo", false, false},
		{"h[^e]llo", "hallo", false, true},
		{"h[^e]llo", "hello", false, false},
		{"h[a-b]llo", "hbllo", false, true},
		{"h[b-a]llo", "hallo", false, true},
		{"h[A-B]llo", "hallo", true, true},
		{"h\\*llo", "h*llo", false, true},
		{"h\\*llo", "hello", false, false},
		{"a*b*c", "aXXbYYc", false, true},
		{"a*b*c", "aXXbYY", false, false},
		{"[abc", "a", false, true}, // no closing ']': the end closes it
		{"", "", false, true},
		{"", "x", false, false},
		{"maxmemory*", "MAXMEMORY-policy", true, true},
	} {
		if got := Match([]byte(tc.pattern), []byte(tc.s), tc.nocase); got != tc.want {
			t.Errorf("Match(%q, %q, %v) = %v, want %v", tc.pattern, tc.s, tc.nocase, got, tc.want)
		}
	}
}

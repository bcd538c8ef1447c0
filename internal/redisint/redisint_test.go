package redisint

import (
	"strconv"
	"testing"
)

// TestParseAsString2ll: each input as Redis 7.0's string2ll reads it.
func TestParseAsString2ll(t *testing.T) {
	for _, tc := range []struct {
		in   string
		want int64
		ok   bool
	}{
		{"0", 0, true}, {"1", 1, true}, {"-1", -1, true}, {"42", 42, true},
		{"9223372036854775807", 1<<63 - 1, true}, {"-9223372036854775808", -1 << 63, true},
		{"9223372036854775808", 0, false}, {"-9223372036854775809", 0, false},
		{"99999999999999999999", 0, false}, {"18446744073709551616", 0, false},
		{"", 0, false}, {"-", 0, false}, {"+1", 0, false}, {"+0", 0, false}, {"-0", 0, false},
		{"01", 0, false}, {"00", 0, false}, {"-01", 0, false}, {" 1", 0, false}, {"1 ", 0, false},
		{"1a", 0, false}, {"0x1", 0, false}, {"1.0", 0, false}, {"--1", 0, false},
	} {
		got, ok := Parse([]byte(tc.in))
		if got != tc.want || ok != tc.ok {
			t.Errorf("Parse(%q) = %d, %v; want %d, %v", tc.in, got, ok, tc.want, tc.ok)
		}
	}
}

// FuzzParse holds Parse to strconv: an integer exactly when strconv reads
// one and writes it back as it was given.
func FuzzParse(f *testing.F) {
	for _, s := range []string{"0", "-1", "+1", "01", "9223372036854775807", "-9223372036854775808", ""} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, s string) {
		got, ok := Parse([]byte(s))
		v, err := strconv.ParseInt(s, 10, 64)
		want := err == nil && strconv.FormatInt(v, 10) == s
		if ok != want || ok && got != v {
			t.Fatalf("Parse(%q) = %d, %v; strconv %d, %v", s, got, ok, v, err)
		}
	})
}

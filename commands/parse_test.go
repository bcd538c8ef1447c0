package commands

import (
	"math/rand/v2"
	"strconv"
	"testing"

	"github.com/stretchr/testify/require"
)

func TestParseInt64MatchesStrconv(t *testing.T) {
	cases := []string{"", "+", "-", " 1", "1 ", "1.5", "1e3", "0x10", "1_000", "+5", "-0", "007", "+01",
		"9223372036854775807", "9223372036854775808", "-9223372036854775808", "-9223372036854775809",
		"18446744073709551615", "18446744073709551616", "99999999999999999999", "--1", "+-1", "٣",
		"9999999999999999999", "10000000000000000000", "000000000000000000009", "0000000000000000000018446744073709551615", "1234567890123456789x"}
	r := rand.New(rand.NewPCG(9, 9))
	for i := 0; i < 2000; i++ {
		cases = append(cases, strconv.FormatInt(int64(r.Uint64()), 10), strconv.FormatUint(r.Uint64(), 10))
	}
	for _, c := range cases {
		want, err := strconv.ParseInt(c, 10, 64)
		got, ok := parseInt64([]byte(c))
		require.Equal(t, err == nil, ok, c)
		if ok {
			require.Equal(t, want, got, c)
		}
		// Rust's u64 parse: optional '+', digits, in range; strconv has no '+' for ParseUint.
		s := c
		if len(s) > 0 && s[0] == '+' {
			s = s[1:]
		}
		wantU, errU := strconv.ParseUint(s, 10, 64)
		if len(s) > 0 && (s[0] == '+' || s[0] == '-') {
			errU = strconv.ErrSyntax
		}
		gotU, okU := parseUint64([]byte(c))
		require.Equal(t, errU == nil, okU, c)
		if okU {
			require.Equal(t, wantU, gotU, c)
		}
	}
}

package ascii

import (
	"testing"

	"github.com/stretchr/testify/require"
)

// TestEqualFoldIsASCIIOnly holds EqualFold to a plain ASCII case fold of
// every byte at every position of the RL.* grammar's keywords, and to
// Redis's strcasecmp: a Unicode letter that folds to one of a keyword's
// letters (ſ, U+017F, to S) is not that letter.
func TestEqualFoldIsASCIIOnly(t *testing.T) {
	lower := func(c byte) byte {
		if 'A' <= c && c <= 'Z' {
			return c + 'a' - 'A'
		}
		return c
	}
	for _, word := range []string{"AND", "COST", "RESERVE", "ANY", "FIXED", "SLIDE", "LOG", "BUCKET", "GCRA", "LEASE"} {
		b := []byte(word)
		for i := range b {
			for c := range 256 {
				b[i] = byte(c)
				want := lower(byte(c)) == lower(word[i])
				require.Equal(t, want, EqualFold(b, word), "%q against %s", b, word)
			}
			b[i] = word[i]
		}
		require.False(t, EqualFold(b[:len(b)-1], word))
		require.False(t, EqualFold(append(b, 'S'), word))
	}
	require.False(t, EqualFold([]byte("CO\u017fT"), "COST"))
	require.False(t, EqualFold([]byte("CO\u017f"), "COS"))
	require.True(t, EqualFold([]byte("select"), "SeLeCt"), "either side in any case")
}

// TestLowerUpperAreASCIIOnly holds Lower and Upper to a plain ASCII case
// map of every byte, and checks that the Unicode letters whose case maps
// to ASCII (the Kelvin sign, ſ, ı) stay as they are.
func TestLowerUpperAreASCIIOnly(t *testing.T) {
	for c := range 256 {
		b := []byte{'x', byte(c), 'Y'}
		lo, up := b[1], b[1]
		if 'A' <= lo && lo <= 'Z' {
			lo += 'a' - 'A'
		}
		if 'a' <= up && up <= 'z' {
			up -= 'a' - 'A'
		}
		require.Equal(t, string([]byte{'x', lo, 'y'}), Lower(b), "byte %#x", c)
		require.Equal(t, "<"+Lower(b), string(AppendLower([]byte("<"), string(b))), "byte %#x", c)
		require.Equal(t, string([]byte{'X', up, 'Y'}), Upper(string(b)), "byte %#x", c)
		require.Equal(t, []byte{'x', byte(c), 'Y'}, b, "the argument is not changed")
	}
	for _, s := range []string{"\u212Aill", "\u017fet", "\u0131nfo", "İ"} {
		require.NotEqual(t, "kill", Lower(s))
		require.Equal(t, s, Lower(s), "no ASCII upper case in %q", s[len(s)-1:])
	}
	require.Equal(t, "\u017fET", Upper("\u017fet"))
	require.Equal(t, "\u0131NFO", Upper("\u0131nfo"))
	require.Equal(t, "keys", Lower("KeYs"))
	require.Equal(t, "", Lower(""))
}

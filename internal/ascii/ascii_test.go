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

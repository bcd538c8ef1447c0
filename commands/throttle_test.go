package commands

import (
	"math/rand/v2"
	"testing"
	"unicode/utf8"

	"github.com/stretchr/testify/require"
)

// TestUTF8FastPath: utf8.Valid, which CL.THROTTLE tries first, accepts
// exactly what the Rust-compatible utf8Error accepts, so the fast path
// never hides an error redis-cell would give: random bytes biased toward
// multi-byte sequences, surrogates, overlongs and truncations.
func TestUTF8FastPath(t *testing.T) {
	r := rand.New(rand.NewPCG(5, 8))
	pieces := [][]byte{{'a'}, {0x7f}, {0xc2, 0x80}, {0xc0, 0x80}, {0xe0, 0xa0, 0x80}, {0xe0, 0x80, 0x80},
		{0xed, 0x9f, 0xbf}, {0xed, 0xa0, 0x80}, {0xf0, 0x90, 0x80, 0x80}, {0xf4, 0x8f, 0xbf, 0xbf},
		{0xf4, 0x90, 0x80, 0x80}, {0xf5}, {0xff}, {0x80}, {0xe2, 0x82}, {0xf0, 0x9f, 0x98}}
	for n := 0; n < 200000; n++ {
		var b []byte
		for k := r.IntN(6); k > 0; k-- {
			if r.IntN(3) == 0 {
				b = append(b, byte(r.Uint32()))
			} else {
				b = append(b, pieces[r.IntN(len(pieces))]...)
			}
		}
		_, bad := utf8Error(b)
		require.Equal(t, !bad, utf8.Valid(b), "% x", b)
	}
}

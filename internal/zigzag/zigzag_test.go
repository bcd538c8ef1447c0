package zigzag

import (
	"encoding/binary"
	"math"
	"math/rand/v2"
	"testing"
)

// TestZigzag: Encode is binary.PutVarint's mapping (the uvarint it
// writes for v is the one PutUvarint writes for Encode(v)), small
// magnitudes of either sign map to small numbers, and Decode inverts it.
func TestZigzag(t *testing.T) {
	for i, v := range []int64{0, -1, 1, -2, 2} {
		if got := Encode(v); got != uint64(i) {
			t.Fatalf("Encode(%d) = %d, want %d", v, got, i)
		}
	}
	r := rand.New(rand.NewPCG(1, 2))
	vals := []int64{math.MinInt64, math.MaxInt64, math.MinInt64 + 1, math.MaxInt64 - 1}
	for range 100_000 {
		vals = append(vals, int64(r.Uint64()), r.Int64N(1000)-500)
	}
	var a, b [binary.MaxVarintLen64]byte
	for _, v := range vals {
		if got := Decode(Encode(v)); got != v {
			t.Fatalf("Decode(Encode(%d)) = %d", v, got)
		}
		if n, m := binary.PutVarint(a[:], v), binary.PutUvarint(b[:], Encode(v)); string(a[:n]) != string(b[:m]) {
			t.Fatalf("%d: Varint %x, Uvarint(Encode) %x", v, a[:n], b[:m])
		}
	}
}

// Package zigzag maps signed integers to unsigned ones so that small
// magnitudes of either sign stay small (0, -1, 1, -2 ... to 0, 1, 2, 3
// ...): what a uvarint of a signed difference needs. encoding/binary
// does the same inside its Varint functions but does not export it; the
// engine's record layouts and persistence's log codec pack the result
// with tag bits of their own. Their layout comments write it zz(v). It
// imports nothing, so every package may use it.
package zigzag

// Encode returns v zigzag-encoded.
func Encode(v int64) uint64 { return uint64(v<<1) ^ uint64(v>>63) }

// Decode returns the int64 that Encode mapped to u.
func Decode(u uint64) int64 { return int64(u>>1) ^ -int64(u&1) }

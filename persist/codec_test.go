package persist

import (
	"errors"
	"fmt"
	"math/rand/v2"
	"slices"
	"strings"
	"testing"

	"github.com/rlserver/rlserver/engine"
	"github.com/stretchr/testify/require"
)

func TestCodecRoundTrip(t *testing.T) {
	for _, r := range []engine.Record{
		{Key: "k", Kind: engine.KindThrottle, Deadline: 1_700_000_001_000_000_000, A: -1},
		{Key: "", Kind: engine.KindFixed, Deadline: 1 << 62, A: 1_700_000_000_000_000_000, B: 1 << 62},
		{Key: "log", Kind: engine.KindLog, Deadline: 5, A: 12, Log: []int64{1, 2, -(3 + 1), 10}},
		{Key: "b", Kind: engine.KindBucket, Deadline: 9, A: 1 << 40, B: -1, C: 100},
		{Key: "s\x00\xff", Kind: engine.KindSlide, Deadline: 7, A: 3, B: 4, C: 5},
		{Key: "gone", Kind: engine.KindNone}, // a deletion, as the replication stream carries it
	} {
		enc := AppendRecord(nil, r)
		got, err := DecodeRecord(r.Key, enc)
		require.NoError(t, err)
		require.Equal(t, r, got)
		// Any single-byte change is detected.
		for i := range enc {
			bad := append([]byte(nil), enc...)
			bad[i] ^= 0x40
			_, err := DecodeRecord(r.Key, bad)
			require.Error(t, err, "byte %d", i)
		}
		_, err = DecodeRecord(r.Key+"x", enc)
		require.ErrorIs(t, err, ErrChecksum)
	}
}

func TestCodecVersion(t *testing.T) {
	r := engine.Record{Key: "k", Kind: engine.KindFixed, Deadline: 1}
	good := AppendRecord(nil, r)
	// A future version with a valid checksum.
	body := append([]byte{9}, good[1:len(good)-4]...)
	enc := appendCRC("k", body)
	_, err := DecodeRecord("k", enc)
	require.True(t, errors.Is(err, ErrVersion), "%v", err)
}

// FuzzDecodeRecord: no input crashes the decoder, and whatever decodes
// re-encodes to the same bytes.
func FuzzDecodeRecord(f *testing.F) {
	f.Add("k", AppendRecord(nil, engine.Record{Key: "k", Kind: engine.KindLog, Deadline: 5, A: 3, Log: []int64{1, -3, 2}}))
	f.Add("", []byte{1, 1, 0})
	f.Fuzz(func(t *testing.T, key string, b []byte) {
		r, err := DecodeRecord(key, b)
		if err != nil {
			return
		}
		require.Equal(t, b, AppendRecord(nil, r))
	})
}

// TestKeyOrder: a snapshot writes its changes sorted by key, a key's
// changes in the order they came (stable), whatever the keys share:
// against a stable sort by key alone, on fixed cases and random keys
// drawn from a small alphabet (common prefixes, keys that extend others,
// zero bytes, the empty key, repeats).
func TestKeyOrder(t *testing.T) {
	check := func(keys []string) {
		t.Helper()
		recs := make([]engine.Record, len(keys))
		for i, k := range keys {
			recs[i].Key = k
		}
		want := make([]int32, len(keys))
		for i := range want {
			want[i] = int32(i)
		}
		slices.SortStableFunc(want, func(a, b int32) int { return strings.Compare(keys[a], keys[b]) })
		got, _ := keyOrder(recs, nil, nil)
		require.Len(t, got, len(keys))
		for i, o := range got {
			require.Equal(t, want[i], o.i, "position %d of %q", i, keys)
		}
	}
	for _, keys := range [][]string{
		{},
		{"a"},
		{"user:2", "user:10", "user:1"},
		{"same", "same", "other", "same"},
		{"rl:gcra:000000000012", "rl:gcra:000000000003", "rl:gcra:00000000001"},
		{"abc", "abc\x00", "ab", "abc\x00\x00", "", "abc"},
		{"prefix:12345678", "prefix:123456789", "prefix:12345678\x00", "prefix:1234567"},
		{"\xff\xff", "\xff", "\x00\xff"},
	} {
		check(keys)
	}
	r := rand.New(rand.NewPCG(1, 2))
	for n := range 2100 {
		// Batches of up to 30 keys take the comparison sort; the last
		// 100, of radixMin to 2,000, the radix sort.
		size := r.IntN(30)
		if n >= 2000 {
			size = radixMin + r.IntN(2000-radixMin)
		}
		keys := make([]string, size)
		shared := strings.Repeat("k", r.IntN(12))
		for i := range keys {
			b := []byte(shared)
			for range r.IntN(12) {
				b = append(b, "a\x00\xffb"[r.IntN(4)])
			}
			keys[i] = string(b)
		}
		check(keys)
	}
	// Server-like names, a numeric suffix after a long shared prefix,
	// repeated (a key's deletion and rewrite in one batch).
	keys := make([]string, 5000)
	for i := range keys {
		keys[i] = fmt.Sprintf("rl:gcra:%012d", r.IntN(3000))
	}
	check(keys)
}

package persist

import (
	"errors"
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

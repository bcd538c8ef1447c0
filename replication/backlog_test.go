package replication

import (
	"math/rand/v2"
	"testing"

	"github.com/stretchr/testify/require"
)

// TestBacklog writes random chunks into backlogs of several sizes, made at
// several offsets, now and then truncating the newest bytes, and checks
// against the whole stream kept aside that first, end and histlen are
// Redis's and every covered offset reads back the stream's bytes.
func TestBacklog(t *testing.T) {
	r := rand.New(rand.NewPCG(7, 7))
	for _, size := range []int{1, 7, 64, 1000} {
		for _, start := range []int64{0, 5, 1 << 40} {
			b := newBacklog(size, start)
			require.Equal(t, start+1, b.first)
			require.Zero(t, b.histlen())
			require.True(t, b.covers(start+1))
			require.False(t, b.covers(start+2))
			var stream []byte  // byte o at stream[o-start-1]
			first := start + 1 // the model of b.first
			for range 200 {
				if len(stream) > 0 && r.IntN(5) == 0 {
					// Drop up to histlen newest bytes.
					end := start + int64(len(stream))
					k := r.Int64N(end - first + 2)
					b.truncate(end - k)
					stream = stream[:int64(len(stream))-k]
					first = min(first, end-k+1)
				} else {
					p := make([]byte, r.IntN(2*size+3))
					for i := range p {
						p[i] = byte(r.Uint32())
					}
					b.write(p)
					stream = append(stream, p...)
					first = max(first, start+int64(len(stream))-int64(size)+1)
				}
				end := start + int64(len(stream))
				require.Equal(t, end, b.end)
				require.Equal(t, first, b.first)
				require.Equal(t, end-first+1, b.histlen())
				require.LessOrEqual(t, b.histlen(), int64(size))
				require.False(t, b.covers(b.first-1))
				require.True(t, b.covers(end+1))
				require.False(t, b.covers(end+2))
				from := b.first + r.Int64N(b.histlen()+1)
				dst := make([]byte, r.IntN(size+2))
				n := b.read(dst, from)
				want := stream[from-start-1:]
				require.Equal(t, min(len(dst), len(want)), n)
				require.Equal(t, string(want[:n]), string(dst[:n]), "size %d start %d from %d", size, start, from)
			}
		}
	}
}

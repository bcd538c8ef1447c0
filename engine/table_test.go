package engine

import (
	"fmt"
	"math/rand/v2"
	"testing"

	"github.com/stretchr/testify/require"
)

// TestTableAgainstMap drives a shard's key table with random inserts and
// removals under heavy hash-tag collisions (few distinct tags, so probe
// runs are long and wrap around) and compares it with a Go map.
func TestTableAgainstMap(t *testing.T) {
	seed := rand.Uint64()
	t.Logf("seed %d", seed)
	r := rand.New(rand.NewPCG(seed, 3))
	for round := 0; round < 20; round++ {
		s := newShard()
		model := map[string]uint32{}
		tags := 1 + r.IntN(40)
		hashOf := func(k string) uint64 { return uint64(len(k)*7919+int(k[len(k)-1])) % uint64(tags) * 0x9E3779B1 }
		for op := 0; op < 3000; op++ {
			k := fmt.Sprint("k", r.IntN(400))
			h := hashOf(k)
			i, ok := s.findLocked(h, []byte(k))
			mi, mok := model[k]
			require.Equal(t, mok, ok, "seed %d op %d key %s", seed, op, k)
			if ok {
				require.Equal(t, mi, i)
				require.Equal(t, k, string(s.keyLocked(i)))
			}
			switch {
			case !ok && r.IntN(3) > 0:
				model[k] = s.insertLocked(h, []byte(k), entry{kind: KindFixed, deadline: never})
			case ok && r.IntN(2) == 0:
				s.removeLocked(i)
				delete(model, k)
			}
			require.Equal(t, len(model), s.count)
			if op%500 == 499 {
				s.peak = 1 << 20 // force a compaction now and then
				s.compactLocked()
				model = map[string]uint32{}
				for j := range s.slab {
					model[string(s.keyLocked(uint32(j)))] = uint32(j)
				}
			}
		}
	}
}

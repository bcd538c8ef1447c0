package engine

import (
	"fmt"
	"hash/maphash"
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
		tags := 1 + r.IntN(40)
		hashOf := func(k string) uint64 { return uint64(len(k)*7919+int(k[len(k)-1])) % uint64(tags) * 0x9E3779B1 }
		s := newShard(maphash.MakeSeed(), options{
			migrateAtOnce: []int{0, 16, 1024}[round%3],                        // tables that grow in steps, or at once
			hash:          func(k []byte) uint64 { return hashOf(string(k)) }, // compaction rehashes keys
		})
		model := map[string]bool{}
		for op := 0; op < 3000; op++ {
			k := fmt.Sprint("k", r.IntN(400))
			h := hashOf(k)
			off, _, ok := s.findLocked(h, []byte(k))
			require.Equal(t, model[k], ok, "seed %d op %d key %s", seed, op, k)
			if ok {
				require.Equal(t, k, string(parseRecord(s.data, off).key))
			}
			switch {
			case !ok && r.IntN(3) > 0:
				s.putLocked(0, 0, h, []byte(k), entry{kind: KindFixed, deadline: never, w: fixedState{count: int64(op)}.words()}, nil)
				model[k] = true
			case ok && r.IntN(3) == 0:
				// A count that needs more varint bytes moves the record.
				s.putLocked(off, parseRecord(s.data, off).tail, h, []byte(k), entry{kind: KindFixed, deadline: never, w: fixedState{count: int64(op) << (7 * r.IntN(8))}.words()}, nil)
			case ok && r.IntN(2) == 0:
				s.removeLocked(off, tagOf(h))
				delete(model, k)
			case ok && r.IntN(4) == 0:
				s.sweepAt = off // the sweep stopped before this record
			}
			require.Equal(t, len(model), s.count)
			switch {
			case op%500 == 499: // force a compaction now and then, of either kind
				if op%1000 == 499 {
					s.compactInPlaceLocked()
					s.shrinkLocked()
				} else {
					s.compactInPlaceLocked()
				}
				require.Zero(t, s.garbage)
			case s.compacting || r.IntN(200) == 0: // or a step of an incremental one
				s.compactStepLocked(1 + r.IntN(600)) // bytes: one record to a few dozen
			}
			if op%250 == 0 || s.compacting && op%40 == 0 {
				checkRegion(t, s, model)
			}
		}
	}
}

// checkRegion walks the shard's region as the sweep and snapshots do: it
// must parse into whole records ending exactly at its end (a compaction's
// gap included), hold exactly the model's keys live, each where the table
// points, and as much dead space as the shard counts as garbage; the
// sweep's resume point must be one of its record boundaries.
func checkRegion(t *testing.T, s *shard, model map[string]bool) {
	t.Helper()
	live, dead, sweepOK := 0, 0, s.sweepAt == len(s.data)
	for off := 0; off < len(s.data); {
		sweepOK = sweepOK || off == s.sweepAt
		p := parseRecord(s.data, off)
		require.Greater(t, p.end, off)
		if p.hdr&hdrDead != 0 {
			dead += p.end - off
		} else {
			live++
			require.True(t, model[string(p.key)], "live record of a key not held: %q", p.key)
			at, _, ok := s.findLocked(s.hash(p.key), p.key)
			require.True(t, ok)
			require.Equal(t, off, at)
		}
		off = p.end
		require.LessOrEqual(t, off, len(s.data))
	}
	require.Equal(t, len(model), live)
	require.Equal(t, s.garbage, dead)
	// The tables hold count entries, the old one (while the table grows)
	// only tombstones below the migration point.
	entries := 0
	for i, slot := range append(append([]uint64(nil), s.slots...), s.old...) {
		if slot != 0 && slot != moved {
			entries++
			if i >= len(s.slots) {
				require.GreaterOrEqual(t, i-len(s.slots), s.migrated, "an old slot below the migration point is live")
			}
		}
	}
	require.Equal(t, s.count, entries)
	require.NotContains(t, s.slots, moved, "a tombstone in the new table")
	require.Equal(t, s.old == nil, s.mem.oldSlots == nil)
	require.True(t, sweepOK, "sweep position %d is not a record boundary", s.sweepAt)
}

package topk

import (
	"fmt"
	"hash/maphash"
	"math/rand/v2"
	"runtime"
	"testing"
	"time"
)

// TestHammeredKeysFirst: among 100,000 keys counted once or twice each
// (150,000 counts), ten keys counted 1,000 times each (more than
// 150,000/Capacity: sure to be held) come out first, exactly those, none
// counted below its true count, and the summaries hold at most Capacity
// keys a slice however many keys pass.
func TestHammeredKeysFirst(t *testing.T) {
	var w Window
	now := int64(1_700_000_000) * int64(time.Second)
	rng := rand.New(rand.NewPCG(1, 2))
	hot := map[string]bool{}
	for i := range 10 {
		hot[fmt.Sprintf("hot:%d", i)] = true
	}
	var stream []string
	for i := range 100_000 {
		stream = append(stream, fmt.Sprintf("cold:%d", i))
		if i%2 == 0 {
			stream = append(stream, fmt.Sprintf("cold:%d", rng.IntN(100_000)))
		}
	}
	for k := range hot {
		for range 1000 {
			stream = append(stream, k)
		}
	}
	rng.Shuffle(len(stream), func(i, j int) { stream[i], stream[j] = stream[j], stream[i] })
	for i, k := range stream {
		w.Add([]byte(k), now+int64(i)*int64(time.Millisecond)/10) // 15 s of traffic
	}
	end := now + int64(len(stream))*int64(time.Millisecond)/10
	top := Top(10, end, &w)
	if len(top) != 10 {
		t.Fatalf("top has %d entries", len(top))
	}
	for _, e := range top {
		if !hot[e.Key] {
			t.Errorf("%q (%d) in the top 10: %v", e.Key, e.Count, top)
		}
		if e.Count < 1000 {
			t.Errorf("%q counted %d, below its 1000", e.Key, e.Count)
		}
	}
	for i, s := range w.slices {
		if s != nil && s.n > Capacity {
			t.Errorf("slice %d holds %d keys", i, s.n)
		}
	}
	// Past the minute, nothing is left.
	if got := Top(10, end+int64(2*time.Minute), &w); len(got) != 0 {
		t.Errorf("a minute later: %v", got)
	}
}

// TestMemoryBounded: a million distinct keys leave the heap about where
// a thousand do.
func TestMemoryBounded(t *testing.T) {
	heap := func() uint64 {
		runtime.GC()
		var m runtime.MemStats
		runtime.ReadMemStats(&m)
		return m.HeapAlloc
	}
	var w Window
	now := int64(1_700_000_000) * int64(time.Second)
	before := heap()
	for i := range 1_000_000 {
		w.Add(fmt.Appendf(nil, "key:%d", i), now+int64(i)*50_000) // 50 s
	}
	grown := heap() - before
	if limit := uint64(Windows * Capacity * 200); grown > limit {
		t.Errorf("heap grew %d bytes for 1e6 keys, want at most %d", grown, limit)
	}
	runtime.KeepAlive(&w)
}

// TestSummaryInvariants: over random skewed streams (a few hot keys, many
// cold ones, keys removed and taken again), after every few adds: the
// counts add up to the adds (space-saving's invariant), no held count is
// below the key's true count, a key counted more than adds/Capacity times
// is held, every held key is found by its hash and no other is, and the
// heap's top is the least count.
func TestSummaryInvariants(t *testing.T) {
	for seed := range uint64(20) {
		rng := rand.New(rand.NewPCG(seed, 7))
		var s summary
		s.reset(1)
		truth := map[string]int64{}
		cold := 100 + rng.IntN(5000)
		adds := int64(0)
		for n := range 20_000 {
			var k string
			if rng.IntN(3) == 0 {
				k = fmt.Sprintf("hot:%d", rng.IntN(8))
			} else {
				k = fmt.Sprintf("cold:%d", rng.IntN(cold))
			}
			s.add([]byte(k), maphash.String(seed0, k))
			truth[k]++
			adds++
			if n%97 != 0 {
				continue
			}
			sum := int64(0)
			held := map[string]bool{}
			for i := range s.n {
				k := string(s.keys[i])
				sum += s.count[i]
				held[k] = true
				if s.count[i] < truth[k] {
					t.Fatalf("seed %d: %q counted %d, below its %d", seed, k, s.count[i], truth[k])
				}
				if j, ok := s.find(s.keys[i], s.hash[i]); !ok || j != i {
					t.Fatalf("seed %d: %q not found in its slot", seed, k)
				}
				if s.count[s.heap[0]] > s.count[i] {
					t.Fatalf("seed %d: the heap's top %d is above %d", seed, s.count[s.heap[0]], s.count[i])
				}
				if int(s.heap[s.pos[i]]) != i {
					t.Fatalf("seed %d: slot %d's heap position is wrong", seed, i)
				}
			}
			if sum != adds {
				t.Fatalf("seed %d: counts add up to %d after %d adds", seed, sum, adds)
			}
			for k, c := range truth {
				if c > adds/Capacity && !held[k] {
					t.Fatalf("seed %d: %q counted %d (> %d/%d) is not held", seed, k, c, adds, Capacity)
				}
				if !held[k] {
					if _, ok := s.find([]byte(k), maphash.String(seed0, k)); ok {
						t.Fatalf("seed %d: %q found but not held", seed, k)
					}
				}
			}
		}
	}
}

// seed0 hashes the keys of TestSummaryInvariants (any seed will do).
var seed0 = maphash.MakeSeed()

// BenchmarkAddRefused is a stream of 1,000 keys counted in turn, as when
// a server refuses every request on 1,000 keys: most adds take the least
// counted key's slot.
func BenchmarkAddRefused(b *testing.B) {
	var w Window
	keys := make([][]byte, 1000)
	for i := range keys {
		keys[i] = fmt.Appendf(nil, "rl:gcra:%012d", i*7919%1000)
	}
	b.ReportAllocs()
	for i := 0; b.Loop(); i++ {
		w.Add(keys[i%len(keys)], 1_700_000_000_000_000_000)
	}
}

func BenchmarkAddHeld(b *testing.B) {
	var w Window
	key := []byte("rl:user:12345")
	b.ReportAllocs()
	for i := 0; b.Loop(); i++ {
		w.Add(key, int64(i))
	}
}

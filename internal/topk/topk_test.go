package topk

import (
	"fmt"
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
	for i := range w.slices {
		if n := len(w.slices[i].keys); n > Capacity {
			t.Errorf("slice %d holds %d keys", i, n)
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

func BenchmarkAddHeld(b *testing.B) {
	var w Window
	key := []byte("rl:user:12345")
	b.ReportAllocs()
	for i := 0; b.Loop(); i++ {
		w.Add(key, int64(i))
	}
}

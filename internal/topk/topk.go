// Package topk finds the keys counted most often over a sliding minute
// in bounded memory, whatever the number of distinct keys: the most
// rejected keys (RL.TOP, INFO rlserver, rlserver_top_rejected).
//
// Each of Windows time slices of Slice keeps a space-saving summary
// (Metwally, Agrawal, El Abbadi, "Efficient computation of frequent and
// top-k elements in data streams", 2005) of at most Capacity keys: a key
// not held replaces the least counted one and inherits its count, so a
// key counted more than total/Capacity times in a slice is always held
// and no held count is below the key's true count. Top merges the
// slices of the last minute.
package topk

import (
	"sort"
	"sync"
	"time"
)

const (
	// Capacity is how many keys one slice's summary holds.
	Capacity = 256
	// Windows slices of Slice make the sliding minute.
	Windows = 6
	Slice   = 10 * time.Second
)

// Entry is a key and its count (an upper bound on its true count).
type Entry struct {
	Key   string
	Count int64
}

// summary is one slice's space-saving summary.
type summary struct {
	start int64 // the slice's start, Unix ns; 0 if unused
	index map[string]int
	keys  []string
	count []int64
}

// add counts key once.
func (s *summary) add(key []byte) {
	if i, ok := s.index[string(key)]; ok {
		s.count[i]++
		return
	}
	if len(s.keys) < Capacity {
		k := string(key)
		s.index[k] = len(s.keys)
		s.keys = append(s.keys, k)
		s.count = append(s.count, 1)
		return
	}
	low := 0
	for i, c := range s.count {
		if c < s.count[low] {
			low = i
		}
	}
	delete(s.index, s.keys[low])
	k := string(key)
	s.index[k] = low
	s.keys[low] = k
	s.count[low]++
}

// Window is a sliding minute of summaries. Safe for concurrent use.
type Window struct {
	mu     sync.Mutex
	slices [Windows]summary
}

// Add counts key once at now (Unix ns).
func (w *Window) Add(key []byte, now int64) {
	start := now - now%int64(Slice)
	s := &w.slices[(now/int64(Slice))%Windows]
	w.mu.Lock()
	if s.start != start {
		*s = summary{start: start, index: make(map[string]int, 16)}
	}
	s.add(key)
	w.mu.Unlock()
}

// Reset forgets every count.
func (w *Window) Reset() {
	w.mu.Lock()
	w.slices = [Windows]summary{}
	w.mu.Unlock()
}

// merge adds the counts of w's slices within the minute before now into
// into.
func (w *Window) merge(into map[string]int64, now int64) {
	w.mu.Lock()
	defer w.mu.Unlock()
	oldest := now - now%int64(Slice) - (Windows-1)*int64(Slice)
	for i := range w.slices {
		s := &w.slices[i]
		if s.start == 0 || s.start < oldest || s.start > now {
			continue
		}
		for j, k := range s.keys {
			into[k] += s.count[j]
		}
	}
}

// Top returns the n keys counted most over the minute before now across
// windows, most counted first (ties by key).
func Top(n int, now int64, windows ...*Window) []Entry {
	all := map[string]int64{}
	for _, w := range windows {
		w.merge(all, now)
	}
	out := make([]Entry, 0, len(all))
	for k, c := range all {
		out = append(out, Entry{k, c})
	}
	sort.Slice(out, func(i, j int) bool {
		if out[i].Count != out[j].Count {
			return out[i].Count > out[j].Count
		}
		return out[i].Key < out[j].Key
	})
	if len(out) > n {
		out = out[:n]
	}
	return out
}

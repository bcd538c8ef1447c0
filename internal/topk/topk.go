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
	"hash/maphash"
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

// summary is one slice's space-saving summary: up to Capacity slots,
// each a key and its count, found by the key's hash in an open-addressed
// table and ordered by count in a min-heap, so that a key counted again
// and a key taking the least counted one's slot both cost a hash, a probe
// and a few heap steps. Every refused request passes here, so it must
// cost little and allocate nothing: a slot's key bytes are reused by the
// next key that takes it.
type summary struct {
	start int64 // the slice's start, Unix ns; 0 if unused
	n     int   // slots in use
	keys  [Capacity][]byte
	hash  [Capacity]uint64
	count [Capacity]int64
	heap  [Capacity]uint16 // slots, the least counted first
	pos   [Capacity]uint16 // slot -> its index in heap
	// table holds slot+1 at a key's hash position (linear probing), 0
	// where empty; twice Capacity, so probe runs stay short.
	table [2 * Capacity]uint16
}

// tableMask maps a hash to a table position.
const tableMask = 2*Capacity - 1

// find returns key's slot and whether it is held.
func (s *summary) find(key []byte, h uint64) (int, bool) {
	for p := h & tableMask; s.table[p] != 0; p = (p + 1) & tableMask {
		if i := int(s.table[p] - 1); s.hash[i] == h && string(s.keys[i]) == string(key) {
			return i, true
		}
	}
	return 0, false
}

// place puts slot i, whose hash is h, into the table.
func (s *summary) place(i int, h uint64) {
	p := h & tableMask
	for s.table[p] != 0 {
		p = (p + 1) & tableMask
	}
	s.table[p] = uint16(i + 1)
}

// unplace takes slot i, whose hash is h, out of the table, moving back
// the entries after it that a hole would cut off from their home (the
// deletion of linear probing, which needs no tombstones).
func (s *summary) unplace(i int, h uint64) {
	p := h & tableMask
	for int(s.table[p]) != i+1 {
		p = (p + 1) & tableMask
	}
	for q := (p + 1) & tableMask; s.table[q] != 0; q = (q + 1) & tableMask {
		home := s.hash[s.table[q]-1] & tableMask
		// The entry at q may move to the hole at p if its home is not
		// in the cyclic range (p, q].
		if (q > p && (home <= p || home > q)) || (q < p && home <= p && home > q) {
			s.table[p] = s.table[q]
			p = q
		}
	}
	s.table[p] = 0
}

// up restores the heap above index j, whose slot's count may be below
// its parent's (a new slot's 1).
func (s *summary) up(j int) {
	for j > 0 {
		p := (j - 1) / 2
		if s.count[s.heap[p]] <= s.count[s.heap[j]] {
			return
		}
		s.heap[j], s.heap[p] = s.heap[p], s.heap[j]
		s.pos[s.heap[j]], s.pos[s.heap[p]] = uint16(j), uint16(p)
		j = p
	}
}

// down restores the heap below index j after its slot's count grew.
func (s *summary) down(j int) {
	for {
		l := 2*j + 1
		if l >= s.n {
			return
		}
		c := l
		if r := l + 1; r < s.n && s.count[s.heap[r]] < s.count[s.heap[l]] {
			c = r
		}
		if s.count[s.heap[c]] >= s.count[s.heap[j]] {
			return
		}
		s.heap[j], s.heap[c] = s.heap[c], s.heap[j]
		s.pos[s.heap[j]], s.pos[s.heap[c]] = uint16(j), uint16(c)
		j = c
	}
}

// add counts key, whose hash is h, once.
func (s *summary) add(key []byte, h uint64) {
	if i, ok := s.find(key, h); ok {
		s.count[i]++
		s.down(int(s.pos[i]))
		return
	}
	var i int
	if s.n < Capacity {
		i = s.n // a new slot, at the heap's end
		s.heap[i], s.pos[i], s.count[i] = uint16(i), uint16(i), 0
		s.n++
	} else {
		i = int(s.heap[0]) // the least counted key gives its slot up
		s.unplace(i, s.hash[i])
	}
	s.keys[i] = append(s.keys[i][:0], key...)
	s.hash[i] = h
	s.place(i, h)
	s.count[i]++ // 1 in a new slot; the count it inherits, and this one
	s.up(int(s.pos[i]))
	s.down(int(s.pos[i]))
}

// reset empties s for the slice starting at start, keeping its key
// buffers.
func (s *summary) reset(start int64) {
	s.start, s.n = start, 0
	clear(s.table[:])
}

// Window is a sliding minute of summaries, each made when its slice is
// first counted in. Safe for concurrent use.
type Window struct {
	mu     sync.Mutex
	slices [Windows]*summary
}

// seed hashes keys for every summary.
var seed = maphash.MakeSeed()

// Add counts key once at now (Unix ns).
func (w *Window) Add(key []byte, now int64) {
	start := now - now%int64(Slice)
	h := maphash.Bytes(seed, key)
	w.mu.Lock()
	s := w.slices[(now/int64(Slice))%Windows]
	if s == nil {
		s = new(summary)
		w.slices[(now/int64(Slice))%Windows] = s
	}
	if s.start != start {
		s.reset(start)
	}
	s.add(key, h)
	w.mu.Unlock()
}

// Reset forgets every count.
func (w *Window) Reset() {
	w.mu.Lock()
	for _, s := range w.slices {
		if s != nil {
			s.reset(0)
		}
	}
	w.mu.Unlock()
}

// merge adds the counts of w's slices within the minute before now into
// into.
func (w *Window) merge(into map[string]int64, now int64) {
	w.mu.Lock()
	defer w.mu.Unlock()
	oldest := now - now%int64(Slice) - (Windows-1)*int64(Slice)
	for _, s := range w.slices {
		if s == nil || s.start == 0 || s.start < oldest || s.start > now {
			continue
		}
		for i := range s.n {
			into[string(s.keys[i])] += s.count[i]
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

package persist

import (
	"cmp"
	"context"
	"errors"
	"fmt"
	"log/slog"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/rlserver/rlserver/clock"
	"github.com/rlserver/rlserver/engine"
)

// ErrInProgress: a snapshot is already being written (BGSAVE).
var ErrInProgress = errors.New("persist: background save already in progress")

// ErrStopped: the Snapshotter was stopped (the server is shutting down).
var ErrStopped = errors.New("persist: snapshots stopped")

// Snapshotter writes the engine's changes to a Store: incrementally every
// interval, on demand (SAVE, BGSAVE) and at shutdown. Changes that fail to
// be written are kept and retried with the next snapshot; the server goes
// on answering meanwhile. Safe for concurrent use.
type Snapshotter struct {
	e     *engine.Engine
	feed  *engine.Feed // the snapshotter's own position in the engine's changes
	store *Store
	clk   clock.Clock
	log   *slog.Logger

	mu      sync.Mutex               // one snapshot at a time; guards the fields below
	pending map[string]engine.Record // changes a failed snapshot did not write
	cur     []engine.Record          // this snapshot's changes (reused)
	order   []keyAt                  // cur's order by key (fill; reused)
	scratch []keyAt                  // keyOrder's second buffer (fill; reused)
	// perRecord is the last snapshot's batch bytes per record, to size
	// the next one's batch.
	perRecord float64
	flush     bool // a FLUSHALL not yet written
	// position, if set, reports the replication position to store with
	// each snapshot (SetPosition).
	position func() (Position, bool)
	broken   bool // the last commit failed: reopen the store first
	stopped  bool // Stop was called: only the final Save may follow

	bg sync.WaitGroup // the BGSAVE goroutine, if one runs

	inProgress atomic.Bool
	bgRunning  atomic.Bool  // a BGSAVE goroutine exists
	lastOK     atomic.Int64 // Unix s of the last good snapshot (server clock)
	lastStatus atomic.Bool  // last snapshot succeeded
	lastDur    atomic.Int64 // ns
	errors     atomic.Int64
	saves      atomic.Int64
	lastCount  atomic.Int64 // records written by the last good snapshot
	unwritten  atomic.Int64 // changes taken from the engine and not yet written
}

// NewSnapshotter returns a snapshotter reading e's changes through a feed
// of its own (engine.NewFeed), from now on.
func NewSnapshotter(e *engine.Engine, st *Store, clk clock.Clock, log *slog.Logger) *Snapshotter {
	if log == nil {
		log = slog.New(slog.DiscardHandler)
	}
	s := &Snapshotter{e: e, feed: e.NewFeed(), store: st, clk: clk, log: log, pending: map[string]engine.Record{}}
	s.lastStatus.Store(true)
	s.lastOK.Store(clk.Now() / 1e9)
	return s
}

// SetPosition makes every snapshot store the replication position fn
// reports. fn is called before the snapshot reads the engine's changes,
// so every record at or before the position is in the snapshot; ok false
// stores none. Call it before Run.
func (s *Snapshotter) SetPosition(fn func() (Position, bool)) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.position = fn
}

// Save writes every change since the last snapshot, with the clock's
// high-water mark, in one synced batch.
func (s *Snapshotter) Save() error {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.saveLocked()
}

// BackgroundSave starts Save in a goroutine, or returns ErrInProgress.
func (s *Snapshotter) BackgroundSave() error {
	if !s.bgRunning.CompareAndSwap(false, true) {
		return ErrInProgress
	}
	if s.inProgress.Load() {
		s.bgRunning.Store(false)
		return ErrInProgress
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.stopped {
		s.bgRunning.Store(false)
		return ErrStopped
	}
	s.bg.Add(1)
	go func() {
		defer s.bg.Done()
		defer s.bgRunning.Store(false)
		if bgHook != nil {
			bgHook()
		}
		s.mu.Lock()
		defer s.mu.Unlock()
		if s.stopped {
			return // the final snapshot, after Stop, writes what it would have
		}
		if err := s.saveLocked(); err != nil {
			s.log.Error("background save failed", "err", err)
		}
	}()
	return nil
}

// bgHook, if set (tests only), runs first in a BGSAVE's goroutine.
var bgHook func()

// Stop ends background saving: a BGSAVE that has not begun writing gives
// way, one writing is waited for, and later ones are refused with
// ErrStopped. Save still works, for the final snapshot; the Store may be
// closed after it, as no goroutine of the Snapshotter is left to use it.
// The caller stops Run first (its context).
func (s *Snapshotter) Stop() {
	s.mu.Lock()
	s.stopped = true
	s.mu.Unlock()
	s.bg.Wait()
}

func (s *Snapshotter) saveLocked() (err error) {
	s.inProgress.Store(true)
	defer s.inProgress.Store(false)
	start := time.Now()
	// Collect this round's changes in order (a key deleted then written
	// again appears twice, deletion first). Records that failed to be
	// written before are in s.pending and go first, superseded by these.
	var pos Position
	posOK := false
	if s.position != nil {
		pos, posOK = s.position()
	}
	s.cur = s.cur[:0]
	if s.feed.Next(func(r engine.Record) { s.cur = append(s.cur, r) }) {
		// A FLUSHALL since the last call: what is still pending from
		// before it is void; this call's records all postdate it (a shard
		// not yet flushed when read reports the flush next time).
		clear(s.pending)
		s.flush = true
	}
	s.unwritten.Store(int64(len(s.pending) + len(s.cur)))
	defer func() {
		if r := recover(); r != nil { // pebble reports some I/O failures by panicking through our logger
			err = fmt.Errorf("persist: %s: %v", s.store.Path(), r)
			s.broken = true
		}
		s.lastDur.Store(int64(time.Since(start)))
		if err != nil {
			for _, r := range s.cur { // keep them for the next attempt
				s.pending[r.Key] = r
			}
			s.cur = s.cur[:0]
			s.errors.Add(1)
			// One line when snapshots start failing, one when they
			// recover: not one per attempt.
			if s.lastStatus.Swap(false) {
				s.log.Error("snapshot failed; changes kept for the next one", "err", err, "pending", len(s.pending))
			} else {
				s.log.Debug("snapshot failed again", "err", err, "pending", len(s.pending))
			}
			return
		}
		if !s.lastStatus.Swap(true) {
			s.log.Info("snapshots recovered", "failed_since_start", s.errors.Load())
		}
		s.saves.Add(1)
	}()
	if s.broken {
		if err := s.store.Reopen(); err != nil {
			return fmt.Errorf("reopen after a failed write: %w", err)
		}
		s.broken = false
	}
	// Sized from the last snapshot's bytes per record (a change's size
	// varies little from one second to the next), with an eighth more.
	b := s.store.NewBatchSized(int(s.perRecord*float64(len(s.pending)+len(s.cur))*9/8) + 1024)
	if err := s.fill(b); err != nil {
		b.Close()
		return err
	}
	n := b.Len()
	if s.position != nil {
		if err := b.SetPosition(pos, posOK); err != nil {
			b.Close()
			return err
		}
	}
	// The mark covers every lease token issued, which may run a few ns
	// ahead of the clock (engine/lease.go): a restart never issues one
	// again.
	hw := max(s.clk.Now(), s.e.TokenHigh())
	size := b.Bytes() // (Commit lets go of the batch)
	if err := s.store.Commit(b, hw, s.e.Store().Len()); err != nil {
		s.broken = true
		return err
	}
	s.lastOK.Store(hw / 1e9)
	s.lastCount.Store(int64(n))
	if n > 0 {
		s.perRecord = float64(size) / float64(n)
	}
	s.unwritten.Store(0)
	clear(s.pending)
	clear(s.cur) // drop references to logs
	s.cur = s.cur[:0]
	s.flush = false
	return nil
}

// fill puts the pending and current changes into b, in key order, after
// a DeleteAll if a FLUSHALL is to be written. The order is Pebble's: its
// memtable is a skiplist, and an insert next to the previous one starts
// its search from there, where one in hash order searches from the top,
// a cache miss per level (at 100,000 keys a second, unsorted inserts
// took 16% of the server's CPU; sorted, they take a fraction of it).
// The sort is stable: a key's changes keep their order, pending before
// current, deletion before a write that followed it.
func (s *Snapshotter) fill(b *Batch) error {
	if s.flush {
		if err := b.DeleteAll(); err != nil {
			return err
		}
	}
	if len(s.pending) > 0 {
		cur := make([]engine.Record, 0, len(s.pending)+len(s.cur))
		for _, r := range s.pending {
			cur = append(cur, r)
		}
		s.cur = append(cur, s.cur...)
	}
	order, scratch := keyOrder(s.cur, s.order[:0], s.scratch[:0])
	s.order, s.scratch = order, scratch
	for _, o := range order {
		if err := b.Put(s.cur[o.i]); err != nil {
			return err
		}
	}
	clear(order) // drop references to keys, in both of keyOrder's buffers
	clear(scratch[:min(len(order), cap(scratch))])
	return nil
}

// keyOrder appends to order the records' keys and positions, sorted by
// key, and for equal keys by position (a stable sort: a key's changes
// keep their order). Moving (key, position) pairs costs less than moving
// whole records. Keys mostly share a prefix ("user:"), so each pair
// carries the 8 bytes after the batch's common prefix as an integer
// (prefixWord): a batch of radixMin pairs or more is sorted by that word
// with a stable radix sort (scratch is its second buffer), and only the
// runs of equal words are sorted again by key. It returns order and
// scratch, grown as needed.
func keyOrder(recs []engine.Record, order, scratch []keyAt) ([]keyAt, []keyAt) {
	cp := commonPrefix(recs)
	for i := range recs {
		order = append(order, keyAt{prefixWord(recs[i].Key, cp), recs[i].Key, int32(i)})
	}
	// The pairs are in position order, and every sort below is stable:
	// equal keys keep it.
	if len(order) < radixMin {
		slices.SortStableFunc(order, compareKeyAt)
		return order, scratch
	}
	order, scratch = radixByWord(order, scratch)
	for i := 0; i < len(order); {
		j := i + 1
		for j < len(order) && order[j].word == order[i].word {
			j++
		}
		if j-i > 1 {
			slices.SortStableFunc(order[i:j], compareKeyAt)
		}
		i = j
	}
	return order, scratch
}

// compareKeyAt orders pairs by key: by word, then, for equal words, by
// the whole keys.
func compareKeyAt(a, b keyAt) int {
	if a.word != b.word {
		return cmp.Compare(a.word, b.word)
	}
	return strings.Compare(a.key, b.key)
}

// radixMin is the batch size from which keyOrder sorts by radix: below
// it a comparison sort costs less than the radix sort's counting passes.
const radixMin = 256

// radixByWord sorts pairs by word, stably: a least-significant-digit
// radix sort, a byte per pass, passes over a byte every pair shares
// skipped (keys' words often agree in their high or low bytes). It
// returns the sorted pairs and the other buffer, either of which may be
// pairs' or scratch's.
func radixByWord(pairs, scratch []keyAt) ([]keyAt, []keyAt) {
	var counts [8][256]int
	for _, p := range pairs {
		w := p.word
		for d := range 8 {
			counts[d][byte(w>>(8*d))]++
		}
	}
	if cap(scratch) < len(pairs) {
		scratch = make([]keyAt, len(pairs))
	}
	src, dst := pairs, scratch[:len(pairs)]
	for d := range 8 {
		c := &counts[d]
		if c[byte(src[0].word>>(8*d))] == len(src) {
			continue // every pair has this byte
		}
		at := 0
		for b := range c {
			at, c[b] = at+c[b], at
		}
		for _, p := range src {
			b := byte(p.word >> (8 * d))
			dst[c[b]] = p
			c[b]++
		}
		src, dst = dst, src
	}
	return src, dst
}

// keyAt is a change's key and its position in Snapshotter.cur, with the
// key's sort word (prefixWord).
type keyAt struct {
	word uint64
	key  string
	i    int32
}

// commonPrefix is the length of the prefix every record's key shares.
func commonPrefix(recs []engine.Record) int {
	if len(recs) == 0 {
		return 0
	}
	first := recs[0].Key
	n := len(first)
	for _, r := range recs[1:] {
		n = min(n, len(r.Key))
		i := 0
		for i < n && r.Key[i] == first[i] {
			i++
		}
		n = i
	}
	return n
}

// prefixWord is the 8 bytes of key after its first cp, big-endian, zeros
// past its end: keys in byte order have their words in order (a key and
// one that extends it with zeros share a word; strings.Compare tells
// them apart).
func prefixWord(key string, cp int) uint64 {
	var w uint64
	for i := range 8 {
		w <<= 8
		if j := cp + i; j < len(key) {
			w |= uint64(key[j])
		}
	}
	return w
}

// Run saves every interval until ctx is done.
func (s *Snapshotter) Run(ctx context.Context, interval time.Duration) {
	clock.Every(ctx, interval, func() {
		_ = s.Save() // failures are logged and counted; the changes are retried
	})
}

// Info is what INFO persistence and LASTSAVE report; the node reads it
// as it is.
type Info struct {
	ChangesSinceSave int64         // changed keys not yet in a snapshot
	LastSaveUnix     int64         // the last good snapshot (or the start), Unix s of the server clock
	LastOK           bool          // the last snapshot succeeded
	LastDuration     time.Duration // how long the last snapshot took
	InProgress       bool          // a snapshot is being written
	Errors, Saves    int64         // failed and good snapshots since start
	LastRecords      int64         // records (puts and deletes) the last good snapshot wrote
}

// Info reports the snapshotter's state.
func (s *Snapshotter) Info() Info {
	return Info{
		ChangesSinceSave: int64(s.feed.Pending()) + s.unwritten.Load(),
		LastSaveUnix:     s.lastOK.Load(),
		LastOK:           s.lastStatus.Load(),
		LastDuration:     time.Duration(s.lastDur.Load()),
		InProgress:       s.inProgress.Load(),
		Errors:           s.errors.Load(),
		Saves:            s.saves.Load(),
		LastRecords:      s.lastCount.Load(),
	}
}

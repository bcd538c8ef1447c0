package persist

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
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

	mu  sync.Mutex // one snapshot at a time; guards the fields below
	buf []byte     // this snapshot's entries (reused)
	// bufPeak is the largest len(buf) of the recent snapshots, in bytes:
	// it falls by an eighth a snapshot. buf is let go only when it is
	// much larger than that, so snapshots whose sizes alternate (a fold
	// step among the others) do not grow a new buffer each time.
	bufPeak int
	// stepPeak is the largest len(buf) of the last fold's steps, which
	// dump the keyspace: buf is kept at that size too, however small the
	// snapshots between folds (RL.LOG's deltas are a tenth of a dump),
	// so that a fold step does not grow a buffer by doubling, page
	// faults and all, each time.
	stepPeak int
	// fold: the next snapshot writes every key and drops every older
	// segment. Set after a failed snapshot, whose changes the feed no
	// longer lists.
	fold bool
	// round is a fold in steps under way (foldDue).
	round foldRound
	// sinceFold counts the entries written since the last fold ended,
	// an RL.LOG's delta as the share of its whole record's bytes it
	// took (weighed). The store keeps it and round (Store.Fold): a
	// restart goes on with them.
	sinceFold int64
	// stepKeys is foldStepKeys and minFold foldMin (tests choose fewer,
	// for more steps and folds).
	stepKeys, minFold int
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
// of its own (engine.NewEncodedFeed), from now on.
func NewSnapshotter(e *engine.Engine, st *Store, clk clock.Clock, log *slog.Logger) *Snapshotter {
	if log == nil {
		log = slog.New(slog.DiscardHandler)
	}
	s := &Snapshotter{e: e, feed: e.NewEncodedFeed(AppendStateEntry, 0), store: st, clk: clk, log: log,
		stepKeys: foldStepKeys, minFold: foldMin}
	s.feed.WriteDeltas()
	f := st.Fold()
	s.sinceFold = f.Since
	if f.Start > 0 && f.Shards == e.Shards() {
		s.round = foldRound{on: true, start: f.Start, next: f.Next}
	} // else a fold under way restarts at the first shard: the keys moved shards
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

// Folding: a snapshot writes one segment of what changed, so the store
// grows with every snapshot, and a load reads every segment. When the
// entries written since the last fold exceed foldRatio times the keys
// held (or foldMin, for a small keyspace), the snapshots fold: each of
// the next few writes, besides its changes, every key of the next
// shards, about foldStepKeys keys (at least a shard), and the one that
// reaches the last shard drops every segment older than the first
// step's (engine.Feed.AppendDump). Each entry written costs at most
// 1/foldRatio of an entry more, so a snapshot's cost still follows the
// changes, and the store holds at most about foldRatio+1 entries a key.
// In steps, a fold holds a shard's lock (and the engine's cut, which
// writes over several shards wait for) while that shard alone is
// copied, not the whole keyspace at once; in as few steps as that
// allows, the segments it drops mostly die in Pebble's memtable, before
// a flush writes them and a compaction reads them again.
//
// Why dropping the older segments is safe: every snapshot is one
// consistent cut; a shard dumped in the round holds, from its dump on,
// every live key of that shard (and its deletions before, for the keys
// of earlier segments), and its later changes follow in later segments.
// So the segments from the round's first on hold every key's last state.
const (
	foldRatio    = 2
	foldMin      = 1 << 14
	foldStepKeys = 1 << 16
)

// foldRound is a fold in steps: the segment it started at (0 before its
// first snapshot is written) and the first shard not dumped yet.
type foldRound struct {
	on    bool
	start uint64
	next  int
}

// foldDue says whether a fold is under way or is to start.
func (s *Snapshotter) foldDue() bool {
	return s.round.on || s.sinceFold > foldRatio*max(int64(s.e.Store().Len()), int64(s.minFold))
}

// weighed is what n entries of size bytes count towards a fold, when
// RL.LOG's deltas among them saved saved bytes against whole records:
// n times the share of the whole records' bytes they took. A delta is a
// few runs of a log of many, so it counts for a fraction of an entry,
// and the store folds after about as many bytes as with whole records
// (foldRatio times the keyspace's), not after as many entries.
func weighed(n, size, saved int) int64 {
	if saved <= 0 || size <= 0 {
		return int64(n)
	}
	return max(1, int64(n)*int64(size)/int64(size+saved))
}

func (s *Snapshotter) saveLocked() (err error) {
	s.inProgress.Store(true)
	defer s.inProgress.Store(false)
	start := time.Now()
	var pos Position
	posOK := false
	if s.position != nil {
		pos, posOK = s.position()
	}
	// Take this round's changes, encoded, in the order they were made,
	// and every key of the shards a fold dumps now (dump [from, to)).
	shards := s.e.Shards()
	from, to := 0, 0
	switch {
	case s.fold:
		from, to = 0, shards
	case s.foldDue():
		s.round.on = true
		steps := min(shards, max(1, s.e.Store().Len()/s.stepKeys))
		from = s.round.next
		to = min(shards, from+(shards+steps-1)/steps)
	}
	folded := to == shards // this snapshot ends a fold
	var flushed bool
	s.buf, flushed = s.feed.AppendDump(s.buf[:0], s.clk.Now(), from, to)
	defer func() {
		if r := recover(); r != nil { // pebble reports some I/O failures by panicking through our logger
			err = fmt.Errorf("persist: %s: %v", s.store.Path(), r)
			s.broken = true
		}
		s.lastDur.Store(int64(time.Since(start)))
		if err != nil {
			// The feed no longer lists what this snapshot took: the next
			// one writes every key.
			s.fold = true
			s.errors.Add(1)
			// One line when snapshots start failing, one when they
			// recover: not one per attempt.
			if s.lastStatus.Swap(false) {
				s.log.Error("snapshot failed; the next one writes every key", "err", err, "unwritten", s.unwritten.Load())
			} else {
				s.log.Debug("snapshot failed again", "err", err, "unwritten", s.unwritten.Load())
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
	b := s.store.NewBatchSized(len(s.buf) + len(s.buf)/64 + 1024)
	if s.round.on && s.round.start == 0 {
		s.round.start = b.Seq()
	}
	n := b.Append(s.buf)
	s.unwritten.Store(int64(n))
	w := weighed(n, len(s.buf), s.feed.Saved())
	folding := FoldState{Since: s.sinceFold + w, Shards: shards}
	switch {
	case flushed: // what the deletion leaves: this snapshot
		b.DeleteAll()
		folding.Since = w
	case s.fold: // every key: folded too
		b.DeleteAll()
		folding.Since = 0
	case folded:
		b.DeleteBefore(s.round.start)
		folding.Since = 0
	case s.round.on:
		folding.Start, folding.Next = s.round.start, to
	}
	b.SetFold(folding)
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
	if err := s.store.Commit(b, hw, s.e.Store().Len()); err != nil {
		s.broken = true
		return err
	}
	s.lastOK.Store(hw / 1e9)
	s.lastCount.Store(int64(n))
	s.unwritten.Store(0)
	s.sinceFold, s.round = folding.Since, foldRound{on: folding.Start > 0, start: folding.Start, next: folding.Next}
	s.fold = false
	s.bufPeak = max(len(s.buf), s.bufPeak-s.bufPeak/8)
	if to > from { // a fold's step
		if from == 0 { // its first, or every key
			s.stepPeak = 0
		}
		s.stepPeak = max(s.stepPeak, len(s.buf))
	}
	if cap(s.buf) > 4*max(s.bufPeak, s.stepPeak)+chunkSize {
		s.buf = nil // a burst's buffer: let go some ten snapshots after it
	}
	return nil
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

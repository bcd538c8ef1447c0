package persist

import (
	"errors"
	"fmt"
	"log/slog"
	"os"
	"strconv"
	"strings"
	"time"

	"github.com/cockroachdb/pebble/v2"
	"github.com/cockroachdb/pebble/v2/vfs"
	"github.com/rlserver/rlserver/engine"
)

// FormatVersion is the layout of the store; Open refuses any other.
const FormatVersion = 1

// Layout: meta keys start with 0x00, records with 'k'.
var (
	metaFormat = []byte("\x00format")
	metaClock  = []byte("\x00clock")
	metaKeys   = []byte("\x00keys")
	metaRepl   = []byte("\x00repl")
	keyPrefix  = byte('k')
	keysEnd    = []byte{'k' + 1}
)

// ErrFormat: the store was written by an unknown format version.
var ErrFormat = errors.New("persist: unknown store format version")

// Store is a Pebble database holding one record per key and the clock's
// high-water mark.
type Store struct {
	db     *pebble.DB
	path   string
	opts   Options
	closed bool // db is closed: by Close, or by a Reopen that failed
}

// Options for Open. FS defaults to the OS file system (tests pass an
// in-memory or error-injecting one).
type Options struct {
	Dir    string
	FS     vfs.FS
	Logger *slog.Logger
	// ReadOnly opens an existing store without changing a byte of it (no
	// WAL flush, no compaction): how a store is checked and loaded before
	// it is trusted. A missing store is then ErrNoStore.
	ReadOnly bool
}

// ErrNoStore: a read-only open found no store in the directory.
var ErrNoStore = errors.New("persist: no store")

// Open opens (creating if needed) the store in o.Dir. Errors name the
// path and the cause; a store of another format version is refused, and
// nothing in the directory is changed then.
func Open(o Options) (*Store, error) {
	fs := o.FS
	if fs == nil {
		fs = vfs.Default
	}
	if o.FS == nil {
		if st, err := os.Stat(o.Dir); err == nil && !st.IsDir() {
			return nil, fmt.Errorf("persist: %s: not a directory", o.Dir)
		}
	}
	// A larger memtable than the default: snapshots write many small
	// batches, and fewer flushes mean fewer compactions competing with
	// request handling for the CPU.
	if o.ReadOnly {
		if names, err := fs.List(o.Dir); err != nil || len(names) == 0 {
			return nil, fmt.Errorf("%w in %s", ErrNoStore, o.Dir)
		}
	}
	opts := &pebble.Options{FS: fs, Logger: pebbleLogger{o.Logger}, MemTableSize: 64 << 20,
		ReadOnly: o.ReadOnly, ErrorIfNotExists: o.ReadOnly}
	db, err := pebble.Open(o.Dir, opts)
	if errors.Is(err, pebble.ErrDBDoesNotExist) {
		return nil, fmt.Errorf("%w in %s", ErrNoStore, o.Dir)
	}
	if err != nil {
		return nil, fmt.Errorf("persist: open %s: %w", o.Dir, err)
	}
	s := &Store{db: db, path: o.Dir, opts: o}
	v, closer, err := db.Get(metaFormat)
	switch {
	case errors.Is(err, pebble.ErrNotFound) && o.ReadOnly:
		// Created but never written to: the read-write open records it.
	case errors.Is(err, pebble.ErrNotFound):
		// A new store: record the format.
		if err := db.Set(metaFormat, []byte(strconv.Itoa(FormatVersion)), pebble.Sync); err != nil {
			db.Close()
			return nil, fmt.Errorf("persist: %s: write format version: %w", o.Dir, err)
		}
	case err != nil:
		db.Close()
		return nil, fmt.Errorf("persist: %s: read format version: %w", o.Dir, err)
	default:
		got := string(v)
		closer.Close()
		if got != strconv.Itoa(FormatVersion) {
			db.Close()
			return nil, fmt.Errorf("%w %q in %s (this rlserver reads %d)", ErrFormat, got, o.Dir, FormatVersion)
		}
	}
	return s, nil
}

// Reopen closes and reopens the database: after Pebble refuses further
// writes (a failed WAL write is fatal to an open Pebble DB), a fresh open
// recovers what was durably written and accepts writes again.
func (s *Store) Reopen() error {
	func() {
		defer func() { recover() }() // closing a DB in a failed state may panic
		s.db.Close()
	}()
	n, err := Open(s.opts)
	if err != nil {
		s.closed = true // Close must not close it again (pebble panics)
		return err
	}
	s.db, s.closed = n.db, false
	return nil
}

// Path is the store's directory.
func (s *Store) Path() string { return s.path }

// Close closes the database.
func (s *Store) Close() error {
	if s.closed {
		return nil
	}
	s.closed = true
	return s.db.Close()
}

// HighWater returns the clock high-water mark of the last snapshot (0 if
// none).
func (s *Store) HighWater() (int64, error) {
	v, closer, err := s.db.Get(metaClock)
	if errors.Is(err, pebble.ErrNotFound) {
		return 0, nil
	}
	if err != nil {
		return 0, fmt.Errorf("persist: %s: read clock mark: %w", s.path, err)
	}
	defer closer.Close()
	n, perr := strconv.ParseInt(string(v), 10, 64)
	if perr != nil {
		return 0, fmt.Errorf("%s: clock mark %q: %w", s.path, v, ErrCorrupt)
	}
	return n, nil
}

// Position is where a replica's records stand in its primary's stream:
// the primary's replication id and the offset every stored record is
// at or before (docs/replication.md, "Restarting a replica").
type Position struct {
	ReplID string
	Offset int64
}

// Position returns the replication position stored with the last
// snapshot; ok is false when none is (a primary's store, or a replica's
// taken during a full sync).
func (s *Store) Position() (p Position, ok bool, err error) {
	v, closer, err := s.db.Get(metaRepl)
	if errors.Is(err, pebble.ErrNotFound) {
		return Position{}, false, nil
	}
	if err != nil {
		return Position{}, false, fmt.Errorf("persist: %s: read replication position: %w", s.path, err)
	}
	defer closer.Close()
	id, off, found := strings.Cut(string(v), " ")
	n, perr := strconv.ParseInt(off, 10, 64)
	if !found || perr != nil || len(id) != 40 || n < 0 {
		return Position{}, false, fmt.Errorf("%s: replication position %q: %w", s.path, v, ErrCorrupt)
	}
	return Position{ReplID: id, Offset: n}, true, nil
}

// Load decodes every record and passes it to fn, in key order. A record
// that fails its checksum or has an unknown version stops the load with
// an error naming the path and the key.
func (s *Store) Load(fn func(engine.Record)) error {
	it, err := s.db.NewIter(&pebble.IterOptions{LowerBound: []byte{keyPrefix}, UpperBound: keysEnd})
	if err != nil {
		return fmt.Errorf("persist: %s: %w", s.path, err)
	}
	defer it.Close()
	for it.First(); it.Valid(); it.Next() {
		key := string(it.Key()[1:])
		v, err := it.ValueAndErr()
		if err != nil {
			return fmt.Errorf("persist: %s: read %q: %w", s.path, key, err)
		}
		r, err := DecodeRecord(key, v)
		if err != nil {
			return fmt.Errorf("%s: record %q: %w", s.path, key, err)
		}
		fn(r)
	}
	if err := it.Error(); err != nil {
		return fmt.Errorf("persist: %s: %w", s.path, err)
	}
	return nil
}

// KeysHint returns the key count written by the last snapshot (0 if
// unknown): a progress estimate for loading, not a fact.
func (s *Store) KeysHint() int {
	v, closer, err := s.db.Get(metaKeys)
	if err != nil {
		return 0
	}
	defer closer.Close()
	n, _ := strconv.Atoi(string(v))
	return n
}

// progressEvery is how often a long load logs its progress.
var progressEvery = time.Second

// LoadEngine restores every record into e, dropping the ones expired at
// now, and logs progress every second for large stores (keys loaded,
// rate, time left). It returns the keys held and the records dropped.
func LoadEngine(st *Store, e *engine.Engine, now int64, log *slog.Logger) (held, expired int, err error) {
	total := st.KeysHint()
	start := time.Now()
	next := start.Add(progressEvery)
	err = st.Load(func(r engine.Record) {
		if e.Restore(r, now) {
			held++
		} else {
			expired++
		}
		if (held+expired)%65536 == 0 {
			e.FreeRetired() // the sweep, which frees them, starts after the load
		}
		if n := held + expired; n%4096 == 0 && log != nil && time.Now().After(next) {
			next = time.Now().Add(progressEvery)
			el := time.Since(start)
			rate := float64(n) / el.Seconds()
			left := "unknown"
			if total > n {
				left = time.Duration(float64(total-n) / rate * float64(time.Second)).Round(time.Second).String()
			}
			log.Info("loading", "keys", n, "of_about", total, "keys_per_sec", int(rate), "time_left", left)
		}
	})
	e.FreeRetired()
	return held, expired, err
}

// Batch is one snapshot's writes.
type Batch struct {
	b   *pebble.Batch
	buf []byte
	key []byte
}

// NewBatch starts a snapshot.
func (s *Store) NewBatch() *Batch { return &Batch{b: s.db.NewBatch()} }

// NewBatchSized starts a snapshot expected to take about size bytes: a
// batch grows by doubling, copying what it holds each time, which for a
// snapshot of tens of MB (RL.LOG keys at their limit) cost a tenth of
// the server's CPU.
func (s *Store) NewBatchSized(size int) *Batch {
	return &Batch{b: s.db.NewBatchWithSize(size)}
}

// Bytes is the size of the batch's representation.
func (b *Batch) Bytes() int { return b.b.Len() }

// DeleteAll drops every record (a FLUSHALL before the records that follow).
func (b *Batch) DeleteAll() error {
	return b.b.DeleteRange([]byte{keyPrefix}, keysEnd, nil)
}

// Put writes r (a deletion when r.Kind is KindNone).
func (b *Batch) Put(r engine.Record) error {
	b.key = append(append(b.key[:0], keyPrefix), r.Key...)
	if r.Kind == engine.KindNone {
		return b.b.Delete(b.key, nil)
	}
	b.buf = AppendRecord(b.buf[:0], r)
	return b.b.Set(b.key, b.buf, nil)
}

// Len is the number of operations in the batch.
func (b *Batch) Len() int { return int(b.b.Count()) }

// Close discards an uncommitted batch.
func (b *Batch) Close() { b.b.Close() }

// SetPosition stores the replication position with the batch, or, if
// ok is false, removes the stored one.
func (b *Batch) SetPosition(p Position, ok bool) error {
	if !ok {
		return b.b.Delete(metaRepl, nil)
	}
	return b.b.Set(metaRepl, []byte(p.ReplID+" "+strconv.FormatInt(p.Offset, 10)), nil)
}

// Commit writes the batch with the clock mark and the number of keys
// held (for load progress), and syncs it.
func (s *Store) Commit(b *Batch, highWater int64, keys int) error {
	defer b.b.Close()
	if err := b.b.Set(metaClock, []byte(strconv.FormatInt(highWater, 10)), nil); err != nil {
		return err
	}
	if err := b.b.Set(metaKeys, []byte(strconv.Itoa(keys)), nil); err != nil {
		return err
	}
	if err := b.b.Commit(pebble.Sync); err != nil {
		return fmt.Errorf("persist: %s: commit: %w", s.path, err)
	}
	return nil
}

// pebbleLogger routes Pebble's log lines to slog; Fatalf panics (with the
// message) instead of exiting, so callers can recover and report.
type pebbleLogger struct{ l *slog.Logger }

func (p pebbleLogger) Infof(format string, args ...interface{}) {
	if p.l != nil {
		p.l.Debug("pebble: " + fmt.Sprintf(format, args...))
	}
}

func (p pebbleLogger) Errorf(format string, args ...interface{}) {
	if p.l != nil {
		p.l.Error("pebble: " + fmt.Sprintf(format, args...))
	}
}

func (p pebbleLogger) Fatalf(format string, args ...interface{}) {
	panic(fmt.Sprintf("pebble: "+format, args...))
}

package persist

import (
	"context"
	"encoding/binary"
	"errors"
	"fmt"
	"hash/crc32"
	"log/slog"
	"math"
	"os"
	"strconv"
	"strings"
	"time"

	"github.com/cockroachdb/pebble/v2"
	"github.com/cockroachdb/pebble/v2/objstorage/objstorageprovider"
	"github.com/cockroachdb/pebble/v2/sstable"
	"github.com/cockroachdb/pebble/v2/vfs"
	"github.com/rlserver/rlserver/engine"
)

// FormatVersion is the layout of the store this package writes: 3, the
// segments of version 2 and the meta that names the live ones
// (metaLive) and where folding stands (metaFold). Open also takes a
// store of version 1 (one Pebble key per record) or 2 (every segment
// live), which the first commit turns into version 3. An rlserver that
// reads only version 2 would load segments that version 3 no longer
// counts (a table ingested without its commit, or dropped by a FLUSHALL
// and not yet removed), so it is refused one.
const FormatVersion = 3

// Layout (docs/persistence.md, "Storage format"): meta keys start with
// 0x00; a snapshot's entries are in segments, 's' then the snapshot's
// sequence number and the chunk's index, big-endian, so that Pebble's
// order is the order they were written in; a version 1 store's records
// are under 'k' and the key.
var (
	metaFormat = []byte("\x00format")
	metaClock  = []byte("\x00clock")
	metaKeys   = []byte("\x00keys")
	metaRepl   = []byte("\x00repl")
	metaLive   = []byte("\x00live")
	metaFold   = []byte("\x00fold")
	keyPrefix  = byte('k') // version 1's records
	segPrefix  = byte('s')
	dataStart  = []byte{keyPrefix}
	dataEnd    = []byte{segPrefix + 1}
)

// segKeyLen is a segment chunk's key: the prefix, the sequence number
// (u64) and the chunk's index (u32).
const segKeyLen = 1 + 8 + 4

// chunkSize is the size at which a segment's chunk is closed and the
// next begun: Pebble sees one value per chunk, not one per key.
const chunkSize = 256 << 10

// ingestMin is the size from which a segment is written as a table of
// its own and ingested, not committed in a batch. A batch's bytes are
// written twice (the write-ahead log, then a flush), copied into the
// memtable, and compacted down the levels; an ingested table is written
// once, lands in the last level (its keys are above every other
// segment's), and is dropped whole when a fold or a FLUSHALL lets it go.
// Below this size the files would be many and small. A variable for
// the tests, which run both ways.
var ingestMin = 1 << 20

// segKey is the key of chunk i of segment seq.
func segKey(dst []byte, seq uint64, i uint32) []byte {
	dst = append(dst[:0], segPrefix)
	dst = binary.BigEndian.AppendUint64(dst, seq)
	return binary.BigEndian.AppendUint32(dst, i)
}

// ErrFormat: the store was written by an unknown format version.
var ErrFormat = errors.New("persist: unknown store format version")

// Store is a Pebble database holding the snapshots' segments and the
// clock's high-water mark.
type Store struct {
	db     *pebble.DB
	path   string
	opts   Options
	closed bool // db is closed: by Close, or by a Reopen that failed
	// format is the store's format version as found or last written.
	format int
	// next is the next snapshot's sequence number: above every segment
	// in the store, and never used twice while the Store is open, even
	// by a batch that failed.
	next uint64
	// first and last are the live segments, as the last commit recorded
	// them (metaLive): a load reads no other. A segment below first was
	// dropped by a fold or a FLUSHALL, and is removed after the commit
	// that let it go; one above last was ingested by a snapshot whose
	// commit never came. first is 0 while a version 1 store's records
	// are live; last is maxSeq when the store records no range (written
	// before it did: every segment is live).
	first, last uint64
	// fold is where folding stood at the last commit (metaFold).
	fold FoldState
	// spare is the last committed batch, reset: the next snapshot writes
	// into its buffer, whose pages are mapped already, instead of a new
	// one of megabytes (page faults were most of a chunk's copy).
	spare *pebble.Batch
	// table is how a segment's table is written: the database's table
	// format and the last level's options.
	table sstable.WriterOptions
	fs    vfs.FS
}

// maxSeq stands for "no upper bound" in Store.last.
const maxSeq = ^uint64(0)

// tmpSuffix ends the name of a segment's table while it is written,
// before Pebble ingests it; Open removes any left by a crash.
const tmpSuffix = ".segment.tmp"

// maxSpareBatch bounds the buffer a spare batch keeps.
const maxSpareBatch = 64 << 20

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
	if !o.ReadOnly {
		// Removing dropped segments' tables (DB.Excise) needs virtual
		// tables. An older store is moved up to it; Pebble never moves down.
		opts.FormatMajorVersion = pebble.FormatVirtualSSTables
	}
	db, err := pebble.Open(o.Dir, opts)
	if errors.Is(err, pebble.ErrDBDoesNotExist) {
		return nil, fmt.Errorf("%w in %s", ErrNoStore, o.Dir)
	}
	if err != nil {
		return nil, fmt.Errorf("persist: open %s: %w", o.Dir, err)
	}
	s := &Store{db: db, path: o.Dir, opts: o, format: FormatVersion, last: maxSeq, fs: fs}
	opts.EnsureDefaults()
	s.table = opts.MakeWriterOptions(len(opts.Levels)-1, db.TableFormat())
	// Not compressed: compression was a third of what snapshots cost the
	// server (bench/RESULTS.md, "Large segments ingested"), for a table
	// written once and read only by a start.
	s.table.Compression = sstable.NoCompression
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
		if s.format, err = strconv.Atoi(got); err != nil || s.format < 1 || s.format > FormatVersion {
			db.Close()
			return nil, fmt.Errorf("%w %q in %s (this rlserver reads 1 to %d)", ErrFormat, got, o.Dir, FormatVersion)
		}
	}
	if s.next, err = lastSegment(db); err != nil {
		db.Close()
		return nil, fmt.Errorf("persist: %s: find the last segment: %w", o.Dir, err)
	}
	if err := errors.Join(s.readLive(), s.readFold()); err != nil {
		db.Close()
		return nil, err
	}
	if s.last != maxSeq {
		s.next = max(s.next, s.last)
	}
	s.next++
	if !o.ReadOnly {
		removeTemp(fs, o.Dir)
	}
	return s, nil
}

// readLive reads the live segments' range (metaLive), if recorded.
func (s *Store) readLive() error {
	v, closer, err := s.db.Get(metaLive)
	if errors.Is(err, pebble.ErrNotFound) {
		return nil
	}
	if err != nil {
		return fmt.Errorf("persist: %s: read live segments: %w", s.path, err)
	}
	defer closer.Close()
	a, b, ok := strings.Cut(string(v), " ")
	first, err1 := strconv.ParseUint(a, 10, 64)
	last, err2 := strconv.ParseUint(b, 10, 64)
	if !ok || err1 != nil || err2 != nil || first > last+1 {
		return fmt.Errorf("%s: live segments %q: %w", s.path, v, ErrCorrupt)
	}
	s.first, s.last = first, last
	return nil
}

// FoldState is where the snapshots' folding stands (Snapshotter), kept
// with each snapshot so that a restart goes on with it: without it, a
// server restarted more often than it folds would never fold, and its
// store would grow with every snapshot.
type FoldState struct {
	Since  int64  // entries written since the last fold ended
	Start  uint64 // the first segment of the fold under way; 0 if none is
	Next   int    // the first shard that fold has not dumped yet
	Shards int    // the engine's shard count, which the fold's steps follow
}

// readFold reads the fold's state (metaFold), if recorded.
func (s *Store) readFold() error {
	v, closer, err := s.db.Get(metaFold)
	if errors.Is(err, pebble.ErrNotFound) {
		return nil
	}
	if err != nil {
		return fmt.Errorf("persist: %s: read fold state: %w", s.path, err)
	}
	defer closer.Close()
	f := &s.fold
	if n, err := fmt.Sscanf(string(v), "%d %d %d %d", &f.Since, &f.Start, &f.Next, &f.Shards); n != 4 || err != nil {
		return fmt.Errorf("%s: fold state %q: %w", s.path, v, ErrCorrupt)
	}
	return nil
}

// Fold is where folding stood at the last snapshot.
func (s *Store) Fold() FoldState { return s.fold }

// removeTemp removes the tables of segments a crash left unfinished.
func removeTemp(fs vfs.FS, dir string) {
	names, _ := fs.List(dir)
	for _, n := range names {
		if strings.HasSuffix(n, tmpSuffix) {
			_ = fs.Remove(fs.PathJoin(dir, n))
		}
	}
}

// lastSegment returns the highest sequence number of a segment in db,
// 0 if there is none.
func lastSegment(db *pebble.DB) (uint64, error) {
	it, err := db.NewIter(&pebble.IterOptions{LowerBound: []byte{segPrefix}, UpperBound: dataEnd})
	if err != nil {
		return 0, err
	}
	defer it.Close()
	if !it.Last() {
		return 0, it.Error()
	}
	if k := it.Key(); len(k) == segKeyLen {
		return binary.BigEndian.Uint64(k[1:9]), nil
	}
	return 0, fmt.Errorf("segment key %q: %w", it.Key(), ErrCorrupt)
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
	s.db, s.closed, s.format, s.next = n.db, false, n.format, max(s.next, n.next)
	s.first, s.last, s.fold, s.table = n.first, n.last, n.fold, n.table
	s.spare = nil // the old database's
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

// Load decodes every live record and passes it to fn, in the order they
// were written: a version 1 store's records, then each live segment's
// entries. A key may come several times, a deletion among them; its last
// record holds. A chunk that fails its checksum, or a record that does
// not decode, stops the load with an error naming the path and where.
//
// A store with RL.LOG's deltas (version 4 records) needs LoadDeltas:
// Load stops at the first one with an error.
func (s *Store) Load(fn func(engine.Record)) error { return s.LoadDeltas(fn, nil) }

// LoadDeltas is Load, passing each RL.LOG delta to delta, in its place
// among the records: its key and its record (version 4), which delta
// applies on top of the key's entry before it (engine.RestoreDelta). An
// error from delta stops the load. Neither slice is retained.
func (s *Store) LoadDeltas(fn func(engine.Record), delta func(key, rec []byte) error) error {
	lower, upper := dataStart, dataEnd
	if s.first > 0 {
		lower = segKey(nil, s.first, 0)
	}
	if s.last != maxSeq {
		upper = segKey(nil, s.last+1, 0)
	}
	it, err := s.db.NewIter(&pebble.IterOptions{LowerBound: lower, UpperBound: upper})
	if err != nil {
		return fmt.Errorf("persist: %s: %w", s.path, err)
	}
	defer it.Close()
	for it.First(); it.Valid(); it.Next() {
		v, err := it.ValueAndErr()
		if err != nil {
			return fmt.Errorf("persist: %s: read %q: %w", s.path, it.Key(), err)
		}
		if k := it.Key(); k[0] == keyPrefix {
			key := string(k[1:])
			r, err := DecodeRecord(key, v)
			if err != nil {
				return fmt.Errorf("%s: record %q: %w", s.path, key, err)
			}
			fn(r)
			continue
		}
		if err := loadChunk(it.Key(), v, fn, delta); err != nil {
			return fmt.Errorf("%s: %w", s.path, err)
		}
	}
	if err := it.Error(); err != nil {
		return fmt.Errorf("persist: %s: %w", s.path, err)
	}
	return nil
}

// loadChunk checks a segment chunk's checksum and passes fn each of its
// records, in order. The checksum covers the chunk's key, so a chunk
// found under another key is refused too.
func loadChunk(key, v []byte, fn func(engine.Record), delta func(key, rec []byte) error) error {
	if len(key) != segKeyLen {
		return fmt.Errorf("segment key %q: %w", key, ErrCorrupt)
	}
	where := fmt.Sprintf("segment %d chunk %d", binary.BigEndian.Uint64(key[1:9]), binary.BigEndian.Uint32(key[9:]))
	if len(v) < 4 {
		return fmt.Errorf("%s: %w", where, ErrCorrupt)
	}
	body := v[4:]
	if crc32.Update(crc32.Checksum(key, crcTable), crcTable, body) != binary.LittleEndian.Uint32(v) {
		return fmt.Errorf("%s: %w", where, ErrChecksum)
	}
	for len(body) > 0 {
		k, rec, rest, ok := NextEntry(body)
		if !ok {
			return fmt.Errorf("%s: entry: %w", where, ErrCorrupt)
		}
		if len(rec) > 0 && rec[0] == RecordVersionDelta && delta != nil {
			if len(rec) < 2 || engine.Kind(rec[1]) != engine.KindLog {
				return fmt.Errorf("%s: record %q: %w: a delta of kind %v", where, k, ErrCorrupt, rec[1:min(2, len(rec))])
			}
			if err := delta(k, rec); err != nil {
				return fmt.Errorf("%s: record %q: %w", where, k, err)
			}
			body = rest
			continue
		}
		r, err := DecodeRecord(string(k), rec)
		if err != nil {
			return fmt.Errorf("%s: record %q: %w", where, k, err)
		}
		fn(r)
		body = rest
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
// now, and logs progress every second for large stores (entries read,
// rate, time left). It returns the keys e holds afterwards and the
// entries dropped because they had expired at now. A key has an entry in
// each live segment that changed it, so entries are not keys: a key whose
// three entries all expired counts three times in expired, and a deletion
// counts in neither. The load fills e inside Engine.Fill, sized for the
// last snapshot's keys.
func LoadEngine(st *Store, e *engine.Engine, now int64, log *slog.Logger) (held, expired int, err error) {
	total := st.KeysHint()
	start := time.Now()
	next := start.Add(progressEvery)
	entries := 0
	count := func() {
		if entries++; entries%65536 == 0 {
			e.FreeRetired() // the sweep, which frees them, starts after the load
		}
		if entries%4096 == 0 && log != nil && time.Now().After(next) {
			next = time.Now().Add(progressEvery)
			el := time.Since(start)
			rate := float64(entries) / el.Seconds()
			left := "unknown"
			if total > entries {
				left = time.Duration(float64(total-entries) / rate * float64(time.Second)).Round(time.Second).String()
			}
			log.Info("loading", "entries", entries, "of_about", total, "entries_per_sec", int(rate), "time_left", left)
		}
	}
	restore := func(r engine.Record) {
		at := now
		if r.Kind == engine.KindLog {
			// Kept until the load's end, expired or not: a later delta
			// may extend it past now.
			at = math.MinInt64
		}
		e.Restore(r, at)
		if r.Kind != engine.KindNone && now >= r.Deadline {
			expired++
		}
		count()
	}
	delta := func(key, rec []byte) error {
		deadline, held, err := e.RestoreDelta(key, rec[2:])
		if err != nil {
			return fmt.Errorf("%w: %w", ErrCorrupt, err)
		}
		if held && now >= deadline {
			expired++
		}
		count()
		return nil
	}
	e.Fill(total, func() { err = st.LoadDeltas(restore, delta) })
	if e.Store().Kinds()[engine.KindLog] > 0 { // some may be expired, kept for deltas
		e.DropExpired(now)
	}
	e.FreeRetired()
	return e.Store().Len(), expired, err
}

// Batch is one snapshot: its entries, written as one segment of chunks,
// and the store's meta. A small segment is written in the Pebble batch
// with the meta; a large one (ingestMin) into a table of its own, which
// Commit ingests before it commits the meta. Either way the segment is
// live only once the meta that names it is committed (metaLive).
type Batch struct {
	s     *Store
	b     *pebble.Batch   // the meta, and a small segment's chunks
	w     *sstable.Writer // a large segment's chunks, or nil
	path  string          // w's file
	val   []byte          // a chunk's value, for w
	seq   uint64          // the segment's sequence number
	first uint64          // the first segment live once this one is
	fold  FoldState       // where folding stands once this batch is committed
	chunk uint32          // the next chunk's index
	open  []byte          // entries not yet in a chunk
	n     int             // entries
	err   error           // the first error setting a chunk
	key   []byte
}

// NewBatch starts a snapshot.
func (s *Store) NewBatch() *Batch { return s.NewBatchSized(0) }

// NewBatchSized starts a snapshot expected to take about size bytes: a
// batch grows by doubling, copying what it holds each time, which for a
// snapshot of tens of MB (RL.LOG keys at their limit) cost a tenth of
// the server's CPU. From ingestMin on, the segment goes to a table of
// its own instead.
func (s *Store) NewBatchSized(size int) *Batch {
	b := &Batch{s: s, b: s.spare, seq: s.next, first: s.first}
	s.spare = nil
	s.next++
	if size >= ingestMin {
		b.path = s.fs.PathJoin(s.path, strconv.FormatUint(b.seq, 10)+tmpSuffix)
		if f, err := s.fs.Create(b.path, vfs.WriteCategoryUnspecified); err == nil {
			b.w = sstable.NewWriter(objstorageprovider.NewFileWritable(f), s.table)
			size = 0 // the Pebble batch holds the meta only
		} else {
			b.path = "" // written in the batch after all
		}
	}
	if b.b == nil {
		b.b = s.db.NewBatchWithSize(size, pebble.WithMaxRetainedSizeBytes(maxSpareBatch))
	}
	return b
}

// DeleteAll drops every record written before the batch: a FLUSHALL
// before the records that follow, or a snapshot of every key.
func (b *Batch) DeleteAll() { b.DeleteBefore(b.seq) }

// DeleteBefore drops every record written before segment seq: a version
// 1 store's and every older segment's. They stop being live when the
// batch commits, and are removed after.
func (b *Batch) DeleteBefore(seq uint64) { b.first = max(b.first, seq) }

// Seq is the batch's segment sequence number.
func (b *Batch) Seq() uint64 { return b.seq }

// Put adds r's entry (a deletion when r.Kind is KindNone), its record
// encoded by AppendRecord.
func (b *Batch) Put(r engine.Record) error {
	b.open = AppendEntry(b.open, r)
	b.n++
	if len(b.open) >= chunkSize {
		b.setChunk(b.open, nil)
		b.open = b.open[:0]
	}
	return b.err
}

// Append adds entries, whole entries as this package appends them
// (AppendStateEntry: an encoded feed's changes), and returns how many.
func (b *Batch) Append(entries []byte) int {
	if b.w != nil {
		return b.appendTable(entries)
	}
	n, from := 0, 0
	for at := 0; at < len(entries); {
		at = EntryEnd(entries, at)
		n++
		if len(b.open)+at-from >= chunkSize {
			b.setChunk(b.open, entries[from:at])
			b.open, from = b.open[:0], at
		}
	}
	b.open = append(b.open, entries[from:]...)
	b.n += n
	return n
}

// appendTable is Append for a segment written as a table. Each chunk's
// bytes are copied into its value first, and walked for the entries'
// ends after, in the cache. Walked first, as Append does, a segment of
// tens of MB costs a cache miss an entry (a long RL.LOG record is
// hundreds of bytes): 1.8% of the server's CPU at RL.LOG's heaviest
// case. The chunks are Append's, byte for byte.
func (b *Batch) appendTable(entries []byte) int {
	n := 0
	for from := 0; from < len(entries); {
		end := from + chunkSize - len(b.open) // an entry ending at or past it closes the chunk
		if end > len(entries) {               // not a chunk's worth: kept, as Append keeps it
			b.open = append(b.open, entries[from:]...)
			for at := from; at < len(entries); n++ {
				at = EntryEnd(entries, at)
			}
			break
		}
		b.val = append(append(append(b.val[:0], 0, 0, 0, 0), b.open...), entries[from:end]...)
		b.open = b.open[:0]
		at := from
		for at < end {
			at = EntryEnd(entries, at)
			n++
		}
		b.val = append(b.val, entries[end:at]...) // the entry across end
		b.setTableChunk()
		from = at
	}
	b.n += n
	return n
}

// setChunk writes the next chunk, x and y's entries after their
// checksum: straight into the Pebble batch, or into the table.
func (b *Batch) setChunk(x, y []byte) {
	if b.w != nil {
		b.val = append(append(append(b.val[:0], 0, 0, 0, 0), x...), y...)
		b.setTableChunk()
		return
	}
	b.key = segKey(b.key, b.seq, b.chunk)
	b.chunk++
	op := b.b.SetDeferred(len(b.key), 4+len(x)+len(y))
	copy(op.Key, b.key)
	copy(op.Value[4:], x)
	copy(op.Value[4+len(x):], y)
	binary.LittleEndian.PutUint32(op.Value, crc32.Update(crc32.Checksum(b.key, crcTable), crcTable, op.Value[4:]))
	if err := op.Finish(); err != nil && b.err == nil {
		b.err = err
	}
}

// setTableChunk writes b.val, four bytes for the checksum and then
// entries, as the table's next chunk.
func (b *Batch) setTableChunk() {
	b.key = segKey(b.key, b.seq, b.chunk)
	b.chunk++
	binary.LittleEndian.PutUint32(b.val, crc32.Update(crc32.Checksum(b.key, crcTable), crcTable, b.val[4:]))
	if err := b.w.Set(b.key, b.val); err != nil && b.err == nil {
		b.err = err
	}
}

// Len is the number of entries in the batch.
func (b *Batch) Len() int { return b.n }

// Close discards an uncommitted batch.
func (b *Batch) Close() {
	b.b.Close()
	b.dropTable()
}

// dropTable closes and removes the segment's table, if one is written
// and not ingested.
func (b *Batch) dropTable() {
	if b.w != nil {
		_ = b.w.Close()
		b.w = nil
	}
	if b.path != "" {
		_ = b.s.fs.Remove(b.path)
		b.path = ""
	}
}

// SetFold stores, with the batch, where folding stands once it is
// committed.
func (b *Batch) SetFold(f FoldState) { b.fold = f }

// SetPosition stores the replication position with the batch, or, if
// ok is false, removes the stored one.
func (b *Batch) SetPosition(p Position, ok bool) error {
	if !ok {
		return b.b.Delete(metaRepl, nil)
	}
	return b.b.Set(metaRepl, []byte(p.ReplID+" "+strconv.FormatInt(p.Offset, 10)), nil)
}

// Commit writes the batch with the clock mark and the number of keys
// held (for load progress), and syncs it: a large segment's table is
// ingested first, then the meta that makes it live is committed. A
// version 1 or 2 store becomes version 3 with it: its records stay, and
// load before the segments. The segments the batch drops (DeleteBefore) are
// removed once it is committed; a failure to remove them is logged, and
// the next fold's removal covers them.
func (s *Store) Commit(b *Batch, highWater int64, keys int) error {
	committed := false
	defer func() { // also when Pebble panics (pebbleLogger.Fatalf)
		if !committed {
			b.Close()
			return
		}
		b.b.Reset() // a batch too large to keep lets go of its buffer here
		s.spare = b.b
	}()
	if len(b.open) > 0 {
		b.setChunk(b.open, nil)
		b.open = b.open[:0]
	}
	if b.err != nil {
		return fmt.Errorf("persist: %s: %w", s.path, b.err)
	}
	if b.w != nil {
		err := b.w.Close()
		b.w = nil
		if err != nil {
			return fmt.Errorf("persist: %s: write segment %d: %w", s.path, b.seq, err)
		}
		if b.chunk > 0 {
			if err := s.db.Ingest(context.Background(), []string{b.path}); err != nil {
				return fmt.Errorf("persist: %s: ingest segment %d: %w", s.path, b.seq, err)
			}
			b.path = "" // Pebble's now, and removed from here
		}
	}
	if s.format != FormatVersion {
		if err := b.b.Set(metaFormat, []byte(strconv.Itoa(FormatVersion)), nil); err != nil {
			return err
		}
	}
	if err := b.b.Set(metaClock, []byte(strconv.FormatInt(highWater, 10)), nil); err != nil {
		return err
	}
	if err := b.b.Set(metaKeys, []byte(strconv.Itoa(keys)), nil); err != nil {
		return err
	}
	live := strconv.FormatUint(b.first, 10) + " " + strconv.FormatUint(b.seq, 10)
	if err := b.b.Set(metaLive, []byte(live), nil); err != nil {
		return err
	}
	f := b.fold
	if err := b.b.Set(metaFold, fmt.Appendf(nil, "%d %d %d %d", f.Since, f.Start, f.Next, f.Shards), nil); err != nil {
		return err
	}
	if err := b.b.Commit(pebble.Sync); err != nil {
		return fmt.Errorf("persist: %s: commit: %w", s.path, err)
	}
	committed = true
	b.dropTable() // an empty table, not ingested
	s.format = FormatVersion
	dropped := b.first > s.first
	s.first, s.last, s.fold = b.first, b.seq, b.fold
	if dropped {
		span := pebble.KeyRange{Start: dataStart, End: segKey(nil, s.first, 0)}
		if err := s.db.Excise(context.Background(), span); err != nil && s.opts.Logger != nil {
			s.opts.Logger.Warn("persist: removing dropped segments failed; the next fold retries", "dir", s.path, "err", err)
		}
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

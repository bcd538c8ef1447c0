package engine

import "math"

// A Feed is one reader's view of the engine's effects: every key written
// or deleted since that reader last looked, as absolute records. Each
// reader (persistence, replication) has its own Feed and so its own
// position: what one takes, the others still see.
//
// A reader's changes are kept per shard as a set, not a history: a key
// written many times is reported once, with its state when read, so a
// reader's cost follows the keys that changed, not the requests. Each
// record carries one dirty bit per feed in its header (record.go), and
// each shard lists, per feed, the hash tags of the records it marked and
// the keys it deleted. Once one in feedScanShare of a shard's keys (a
// quarter) is listed, the read will pass over all the shard's records
// for their bits (in the order they lie, or through the key table when
// they are long: walkLocked), so the shard stops listing until then
// (feedShard.scan).
//
// A feed made with NewEncodedFeed (replication) keeps the first change of
// a key between two reads instead of listing it: the state as the write
// stored it, handed to the feed's Encoder while the write holds it in the
// cache, into a buffer of its shard, so that a key changed once costs no
// second visit to its record and no encoding.
// The key's later changes before the read are listed, as above, and read
// back after what was kept, so a hot key costs one encoding and one
// visit a read, and each key's changes arrive in order. A shard whose
// buffer reaches the feed's bound lists all its further writes until the
// read, and a record larger than maxEncoded is always listed. A deletion
// is always kept, whatever the bound: it is small, and a write listed
// after it is read as the key stands at the read.
//
// Feeds are created before serving. An engine without feeds (a server in
// memory only) tracks nothing and pays nothing.
type Feed struct {
	e   *Engine
	i   int  // index into each shard's feeds
	bit byte // this feed's dirty bit in a record header
	// enc is an encoded feed's Encoder (each shard holds a copy for its
	// writes); nil for a set feed.
	enc Encoder
	// sink keeps prefetchTags's loads from being optimized away.
	sink uint64
	// saved is how many bytes the deltas of the last Append or
	// AppendDump saved against whole records (WriteDeltas).
	saved int
}

// feedPrefetch is how many listed tags takeLocked brings into the cache
// at a time, ahead of reading their records.
const feedPrefetch = 16

// maxEncoded is the size above which an encoded feed lists a change
// instead of keeping it: a large record (a long RL.LOG) is encoded once a
// read, not once when kept and again when listed.
const maxEncoded = 256

// maxFeeds is the number of dirty bits a record header has room for.
const maxFeeds = 4

// feedBits are the header bits that mark a record dirty, one per feed.
var feedBits = [maxFeeds]byte{0x08, 0x20, 0x40, 0x80}

// hdrDirtyAll is every feed's dirty bit.
const hdrDirtyAll = 0x08 | 0x20 | 0x40 | 0x80

// feedShard is one feed's changes in one shard, guarded by the shard's
// lock: the tags of the records it marked, the keys deleted and whether
// the shard was flushed (how many changes it holds is the shard's
// pending count at the feed's index). A tag, not an offset, names a dirty
// record: records move (compaction, a rewrite that outgrows its slack)
// but stay in their tag's probe run.
type feedShard struct {
	bit     byte
	dirty   []uint32
	deleted []string
	flushed bool
	// scan is set once dirty lists enough of the shard's keys that the
	// read will scan the shard's records for their dirty bits instead of
	// looking the tags up (takeLocked): from then until the read a write
	// only sets its record's bit. Appending to dirty is a store into a
	// line the other event loop may hold; a busy shard's writes skip it.
	scan  bool
	muted bool // Mute: nothing is listed
	// An encoded feed's kept changes, encoded as they were made and in
	// that order: its deletions, all of them (a deletion is small and its
	// key at hand; an encoded feed lists none), and its writes until out
	// holds max bytes, all older than any write listed in dirty; then
	// writes are listed until the next read. A listed write is read as
	// the key stands then, so it follows the deletions before it.
	// kept remembers the tags of the records kept since the read, one per
	// slot: a record whose tag is there is listed. A tag overwritten by
	// another is forgotten, and its record kept again at its next change:
	// that costs an encoding, not order.
	enc   Encoder
	out   []byte
	max   int
	kept  *[keptSlots]uint32
	state []byte // a listed record's state, re-encoded for enc
	// deltas: a listed RL.LOG record is written as a delta when it can
	// be (WriteDeltas). since is the shard's latest decision time at the
	// last read, or noDelta: the next read writes every record whole.
	deltas bool
	since  int64
}

// noDelta is feedShard.since when the next read must write every record
// whole.
const noDelta = math.MinInt64

// keptSlots is the size of an encoded feed's table of kept tags, per
// shard: a pump's worth of one shard's keys under load.
const keptSlots = 64

// An Encoder appends one change to dst and returns the extended slice:
// key now holds state, a live record of kind in the engine's own layout
// (record.go: from the deadline on, without the slack; DecodeState reads
// it), or, when kind is KindNone and state is empty, key is deleted. It
// runs under a shard's lock and must not call into the engine. key and
// state are borrowed for the call: a kept change is the bytes the write
// just stored, copied while they are in the cache.
type Encoder func(dst, key []byte, kind Kind, state []byte) []byte

// NewFeed registers a new reader of the engine's changes, positioned now:
// it will report what changes from here on (a reader that needs the
// current state takes it with Dump). Call it before serving, at most four
// times per engine.
func (e *Engine) NewFeed() *Feed {
	i := len(e.feeds)
	if i == maxFeeds {
		panic("engine: more than four change feeds")
	}
	f := &Feed{e: e, i: i, bit: feedBits[i]}
	e.feeds = append(e.feeds, f)
	for _, s := range e.shards {
		s.mu.Lock()
		s.feeds = append(s.feeds, feedShard{bit: f.bit})
		s.feedBits |= f.bit
		s.mu.Unlock()
	}
	return f
}

// NewEncodedFeed registers a feed read with Append whose first write of
// each key between two reads is encoded by enc as it is made (Feed), up to
// max bytes a shard, and every deletion; the rest are listed as by NewFeed
// and encoded when Append runs. The same rules as NewFeed apply.
func (e *Engine) NewEncodedFeed(enc Encoder, max int) *Feed {
	f := e.NewFeed()
	f.enc = enc
	for _, s := range e.shards {
		s.mu.Lock()
		fs := &s.feeds[f.i]
		fs.enc, fs.max, fs.kept = enc, max, new([keptSlots]uint32)
		s.mu.Unlock()
	}
	return f
}

// WriteDeltas makes an encoded feed write an RL.LOG record that changed
// since the last read as a delta when that is much smaller: what the
// record gained since then, on top of what the last read wrote for it
// (appendLogDelta, log.go). Its receiver must hold what the feed wrote
// before and apply deltas in order: a snapshot's store, whose load does
// (RestoreDelta). The first read after WriteDeltas, a dump, and the read
// after a state stored from outside the shard's decisions (Restore,
// Apply, a flush, ResetTime) write records whole. Call it before serving.
func (f *Feed) WriteDeltas() {
	if f.enc == nil {
		panic("engine: WriteDeltas on a feed without an Encoder")
	}
	for _, s := range f.e.shards {
		s.mu.Lock()
		fs := &s.feeds[f.i]
		fs.deltas, fs.since = true, noDelta
		s.mu.Unlock()
	}
}

// Saved reports how many bytes the deltas of the last Append or
// AppendDump saved against writing those records whole (WriteDeltas).
// Call it from the goroutine that reads the feed.
func (f *Feed) Saved() int { return f.saved }

// wholeNextLocked makes every feed's next read of s write its records
// whole: a state stored from outside the shard's decisions need not
// extend what the last read wrote for its key.
func (s *shard) wholeNextLocked() {
	for i := range s.feeds {
		s.feeds[i].since = noDelta
	}
}

// Next passes fn every change since the previous call, shard by shard
// (each shard locked only while its changes are collected): a deletion
// record for each key removed, then the current record of each key
// written. flushed reports that some shard was flushed (FLUSHALL) since
// the previous call: the receiver must drop everything it holds before
// applying the records. The records own their memory.
func (f *Feed) Next(fn func(Record)) (flushed bool) {
	if f.enc != nil {
		panic("engine: Next on an encoded feed (Append reads it)")
	}
	f.e.cut.Lock()
	defer f.e.cut.Unlock()
	var recs []Record
	deleted := func(k string) { recs = append(recs, Record{Key: k}) }
	written := func(p parsed) { recs = append(recs, recordOf(p)) }
	for i, s := range f.e.shards {
		if betweenShards != nil && i > 0 {
			betweenShards()
		}
		recs = recs[:0]
		s.mu.Lock()
		flushed = f.takeLocked(s, deleted, written) || flushed
		s.mu.Unlock()
		for _, r := range recs {
			fn(r)
		}
	}
	return flushed
}

// Append appends to dst every change of an encoded feed (NewEncodedFeed)
// since the previous call, shard by shard, each shard locked only while
// its changes are copied: the changes kept as they were made, then those
// listed (each deleted key, then the current record of each key
// written). flushed reports that some shard was flushed (FLUSHALL) since
// the previous call: the receiver must drop everything it holds before
// applying what follows.
func (f *Feed) Append(dst []byte) (out []byte, flushed bool) {
	return f.AppendDump(dst, 0, 0, 0)
}

// AppendDump is Append, except that each shard numbered from from to
// to-1 (of Engine.Shards) appends, after its kept changes and listed
// deletions, the record of every key live at now (or at the shard's
// latest decision time, if earlier) instead of its listed writes, which
// it drops: the dump holds them, and the feed reports what changes
// after it. A key it holds expired, not yet swept, is dumped as a
// deletion: a receiver may hold an older state of it that would outlive
// it (a log decided under a shorter window since). A receiver may hold
// a key from an earlier read that the dump does not name: the deletions
// tell it. Every shard is read under the engine's cut, so what one call
// appends is a consistent cut: a write over several shards is wholly in
// it or wholly after it.
func (f *Feed) AppendDump(dst []byte, now int64, from, to int) (out []byte, flushed bool) {
	if f.enc == nil {
		panic("engine: Append on a feed without an Encoder (Next reads it)")
	}
	f.e.cut.Lock()
	defer f.e.cut.Unlock()
	var fs *feedShard
	deleted := func(k string) { dst = fs.appendDeleted(dst, []byte(k)) }
	f.saved = 0
	written := func(p parsed) {
		var saved int
		dst, saved = fs.appendWritten(dst, p)
		f.saved += saved
	}
	for i, s := range f.e.shards {
		if betweenShards != nil && i > 0 {
			betweenShards()
		}
		s.mu.Lock()
		fs = &s.feeds[f.i]
		if len(fs.out) > 0 { // else nothing was kept: no tag to forget
			dst = append(dst, fs.out...) // (deletions among them: a dump would not name the keys)
			fs.out = fs.out[:0]
			clear(fs.kept[:])
		}
		if i < from || i >= to {
			flushed = f.takeLocked(s, deleted, written) || flushed
		} else {
			flushed = f.takeLocked(s, deleted, nil) || flushed
			fs.since = noDelta // a dump is whole
			// Live at now and at every later decision: a record the dump
			// passes over as expired must not be found held by a
			// decision read before now and taken after (decisions are
			// at the shard's latest time or later).
			at := min(now, s.latest)
			s.recordsLocked(func(p parsed, _ int) {
				if p.e.alive(at) {
					written(p)
				} else { // expired, not yet swept: the receiver may hold an older state
					dst = fs.appendDeleted(dst, p.key)
				}
			})
		}
		if fs.deltas {
			// Every decision read so far was at or before latest, and
			// every later one is at or after it (decisionTimeLocked).
			fs.since = s.latest
		}
		s.mu.Unlock()
	}
	return dst, flushed
}

// takeLocked empties the feed's list in shard s, clearing its dirty bits,
// and passes each deleted key to deleted and each written record, parsed
// in place, to written (both may be nil: the changes are dropped). It
// reports whether the shard was flushed. s.mu must be held.
func (f *Feed) takeLocked(s *shard, deleted func(string), written func(parsed)) (flushed bool) {
	fs := &s.feeds[f.i]
	flushed = fs.flushed
	if deleted != nil {
		for _, k := range fs.deleted {
			deleted(k)
		}
	}
	if fs.scan || s.scansLocked(len(fs.dirty)) {
		f.scanLocked(s, written)
	} else {
		f.probeLocked(s, fs.dirty, written)
	}
	s.pending[f.i].Store(0)
	fs.deleted, fs.dirty, fs.flushed, fs.scan = nil, fs.dirty[:0], false, false
	return flushed
}

// scansLocked reports whether a feed's read of s passes over all its
// records rather than looking up listed tags, one per listed record:
// when at least one in feedScanShare of the shard's keys is listed.
func (s *shard) scansLocked(listed int) bool {
	return listed > 0 && listed*s.opt.feedScanShare >= s.count
}

// scanLocked passes written each record listed in s, reading the
// shard's records in the order they lie: when many of its keys are
// listed, that costs less than a probe, and a cache miss, per tag. A
// shard of long records is walked through its key table instead
// (walkLocked).
func (f *Feed) scanLocked(s *shard, written func(parsed)) {
	if s.count > 0 && len(s.data)-s.garbage >= walkMinBytes*s.count {
		f.walkLocked(s, written)
		return
	}
	for off := 0; off < len(s.data); {
		p := parseRecord(s.data, off)
		if p.hdr&(hdrDead|f.bit) == f.bit {
			s.data[off] &^= f.bit
			if written != nil {
				written(p)
			}
		}
		off = p.end
	}
}

// walkMinBytes is the live records' size per key (the region less its
// garbage) from which a scan walks the key table rather than the region.
// In the region, where a record starts is known from the end of the one
// before, its slack count, which follows a long log's runs: a cache miss
// per record, each waiting for the last. Through the table only records'
// heads are read (parseHead), a batch at a time so that their misses
// overlap. Short records lie several to a cache line, in order, which the
// region's walk reads best.
const walkMinBytes = 160

// walkLocked passes written each record listed in s, found through the
// key tables (both, while entries move), their heads loaded a batch at a
// time.
func (f *Feed) walkLocked(s *shard, written func(parsed)) {
	var offs [feedPrefetch]int
	for _, t := range [2][]uint64{s.slots, s.old} {
		for i := 0; i < len(t); {
			n := 0
			for ; i < len(t) && n < len(offs); i++ {
				if slot := t[i]; slot != 0 && slot != moved {
					offs[n] = slotOff(slot)
					n++
				}
			}
			for _, off := range offs[:n] {
				f.sink += uint64(s.data[off])
			}
			for _, off := range offs[:n] {
				f.takeAtLocked(s, off, written)
			}
		}
	}
}

// takeAtLocked passes written the record at off, found through a key
// table, if it carries the feed's dirty bit, and clears the bit.
func (f *Feed) takeAtLocked(s *shard, off int, written func(parsed)) {
	if s.data[off]&f.bit != 0 {
		s.data[off] &^= f.bit
		if written != nil {
			written(parseHead(s.data, off))
		}
	}
}

// probeLocked passes written each record listed in s under one of tags,
// found through the key tables.
func (f *Feed) probeLocked(s *shard, tags []uint32, written func(parsed)) {
	large := max(len(s.slots), len(s.old)) >= prefetchMinSlots
	for i, tag := range tags {
		if large && i%feedPrefetch == 0 {
			f.sink += s.prefetchTags(tags[i:min(i+feedPrefetch, len(tags))])
		}
		// Every record of the tag's probe runs (in both tables while
		// entries move) with this feed's dirty bit: the listed record
		// (unless it went, or was reported already) and any other of
		// the same tag, whose report is early but harmless.
		for _, t := range [2][]uint64{s.slots, s.old} {
			if len(t) == 0 {
				continue
			}
			for p := home(tag, len(t)); t[p] != 0; p = next(p, len(t)) {
				if slotTag(t[p]) != tag || t[p] == moved {
					continue
				}
				f.takeAtLocked(s, slotOff(t[p]), written)
			}
		}
	}
}

// Mute stops (on) or resumes (off) the feed. Muting drops what it has
// listed; a muted feed lists nothing and costs writes nothing; resumed,
// it reports what changes from then on. A replica mutes its replication
// feed: what it applies is its primary's stream, already in its backlog.
func (f *Feed) Mute(on bool) {
	for _, s := range f.e.shards {
		s.mu.Lock()
		fs := &s.feeds[f.i]
		if on && !fs.muted {
			f.takeLocked(s, nil, nil)
			fs.out = nil
			if fs.kept != nil {
				clear(fs.kept[:])
			}
		}
		fs.muted = on
		s.feedBits = 0
		for _, o := range s.feeds {
			if !o.muted {
				s.feedBits |= o.bit
			}
		}
		s.mu.Unlock()
	}
}

// Pending counts the changes Next or Append would report now (in a set,
// a key changed several times counts once; deletions count each). It
// takes no lock, so it may be called while shards are locked (INFO inside
// EXEC).
func (f *Feed) Pending() int {
	var n int64
	for _, s := range f.e.shards {
		n += s.pending[f.i].Load()
	}
	return int(n)
}

// markDirtyLocked records that the record at off (hash tag tag) changed,
// for every feed whose dirty bit it does not carry yet. rec is the record
// as appendRecord built it, up to its slack: an encoded feed that keeps
// the change copies its state from there.
func (s *shard) markDirtyLocked(off int, tag uint32, rec []byte) {
	if s.feedBits == 0 || s.quiet {
		return
	}
	h := s.data[off]
	if h&s.feedBits == s.feedBits {
		return // listed by every feed that listens (a key written again)
	}
	for i := range s.feeds {
		fs := &s.feeds[i]
		if h&fs.bit != 0 || fs.muted {
			continue // listed already, by the same tag
		}
		s.pending[i].Add(1)
		if fs.enc != nil && len(fs.out) < fs.max && fs.kept[tag%keptSlots] != tag {
			at := len(fs.out)
			key, kind, state := recordParts(rec)
			if fs.out = fs.enc(fs.out, key, kind, state); len(fs.out)-at <= maxEncoded {
				fs.kept[tag%keptSlots] = tag // a second change before the read is listed
				continue
			}
			fs.out = fs.out[:at] // too large to keep: listed
		}
		if !fs.scan {
			fs.dirty = append(fs.dirty, tag)
			fs.scan = s.scansLocked(len(fs.dirty))
		}
		h |= fs.bit
	}
	s.data[off] = h
}

// deletedLocked records for every feed that the record p is removed: its
// write, if listed, is superseded by the deletion, and the deletion is
// listed unless it is not ours (a Restore).
func (s *shard) deletedLocked(p parsed) {
	for i := range s.feeds {
		fs := &s.feeds[i]
		if fs.muted {
			continue
		}
		if s.quiet {
			if p.hdr&fs.bit != 0 {
				s.pending[i].Add(-1) // its write is gone, and the deletion is not ours
			}
			continue
		}
		if p.hdr&fs.bit == 0 {
			s.pending[i].Add(1) // else it takes the place of its write's count
		}
		if fs.enc != nil {
			fs.out = fs.appendDeleted(fs.out, p.key)
			continue
		}
		fs.deleted = append(fs.deleted, string(p.key))
	}
}

// appendWritten appends the listed record p, encoded by the feed's
// Encoder from its state as the write stored it, or as a delta
// (WriteDeltas), and returns the bytes a delta saved over the whole
// state (0 for a record written whole).
func (fs *feedShard) appendWritten(dst []byte, p parsed) ([]byte, int) {
	kind := Kind(p.hdr & hdrKind)
	if kind == KindLog && fs.deltas && fs.since != noDelta {
		if st, saved, ok := appendLogDelta(fs.state[:0], p.e, p.runs, fs.since); ok {
			fs.state = st
			return fs.enc(dst, p.key, kind|KindDelta, st), saved
		}
	}
	fs.state = appendState(fs.state[:0], kind, p.e, p.runs)
	return fs.enc(dst, p.key, kind, fs.state), 0
}

// appendDeleted appends key's deletion, encoded by the feed's Encoder.
func (fs *feedShard) appendDeleted(dst, key []byte) []byte {
	return fs.enc(dst, key, KindNone, nil)
}

// flushedLocked drops every feed's listed changes in favour of a flush.
func (s *shard) flushedLocked() {
	for i := range s.feeds {
		fs := &s.feeds[i]
		if fs.muted {
			continue
		}
		s.pending[i].Store(0)
		fs.dirty, fs.deleted, fs.out, fs.flushed, fs.scan = fs.dirty[:0], nil, fs.out[:0], true, false
		fs.since = noDelta
		if fs.kept != nil {
			clear(fs.kept[:])
		}
	}
}

// betweenShards, if set (tests only), runs in Next and Append between the
// shards they read.
var betweenShards func()

// prefetchTags loads the home slots of tags in one pass and the records
// they point to in a second, so that the cache misses of a feed's read
// overlap instead of following one another (Prefetch does the same for a
// request's keys). It changes nothing; its result is derived from the
// loads. s.mu must be held.
func (s *shard) prefetchTags(tags []uint32) uint64 {
	sink := uint64(0)
	for _, tag := range tags {
		sink += s.loadHome(tag)
	}
	for _, tag := range tags {
		sink += s.loadRecord(tag)
	}
	return sink
}

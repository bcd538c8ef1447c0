package replication

import (
	"encoding/binary"
	"errors"
	"fmt"

	"github.com/rlserver/rlserver/engine"
	"github.com/rlserver/rlserver/persist"
)

// The stream a primary sends its replicas, and every node keeps in its
// backlog, is a sequence of frames (docs/replication.md, "The stream"):
//
//	kind u8 | body length uvarint | body
//
// Every body starts with the sender's clock reading (varint, Unix ns), so
// a replica always knows the primary's time. The kinds:
//
//	'h' heartbeat:  clock
//	'r' records:    clock | (key length uvarint | key | record length uvarint | record)...
//	'm' records, more to come: as 'r'; the frames of one pump are one unit,
//	                'm' frames ended by an 'r', which a replica applies
//	                together or not at all
//	'f' flush:      clock (FLUSHALL: drop every key, then go on)
//	's' sync start: clock (a full sync's records follow, then 'e')
//	'e' sync end:   clock
//
// A record is persistence's codec: a key's whole state, or its deletion,
// never a command, in persist's entries (persist.AppendEntry). A full sync
// and a moved slot send persist.AppendRecord's; the pump sends the
// engine's own layout, as the write stored it (persist.AppendStateEntry,
// persist.RecordVersionState). Applying one
// twice is harmless.
// Offsets count the bytes of the stream; a full sync's frames ('s', the
// records between, 'e') travel outside it and count nothing.
const (
	frameHeartbeat = 'h'
	frameRecords   = 'r'
	frameMore      = 'm'
	frameFlush     = 'f'
	frameSyncStart = 's'
	frameSyncEnd   = 'e'
)

// maxFrame bounds a frame's body, so a corrupt length cannot make a
// replica allocate without bound. A records frame is cut well below it.
const maxFrame = 64 << 20

// recordsFrameCut is the body size at which a records frame is closed
// and the next begun.
const recordsFrameCut = 64 << 10

// errFrame: a frame that does not decode (the link is dropped).
var errFrame = errors.New("replication: malformed frame")

// errRefused: a unit of the stream holds a record this replica cannot
// apply, so none of the unit is applied; the link is dropped and tried
// again from the cut before the unit, backing off as after a failed sync.
var errRefused = errors.New("replication: unit refused")

// frameWriter builds frames in a buffer.
type frameWriter struct {
	buf   []byte
	start int // where the open frame's kind byte is, -1 if none
}

// open begins a frame of kind with clock now. Bodies are built after a
// 5-byte gap for the length, closed by close.
func (f *frameWriter) open(kind byte, now int64) {
	f.start = len(f.buf)
	f.buf = append(f.buf, kind, 0, 0, 0, 0, 0)
	f.buf = binary.AppendVarint(f.buf, now)
}

// close writes the open frame's length, moving its body up to the
// length's real size.
func (f *frameWriter) close() {
	if f.start < 0 {
		return
	}
	bodyAt := f.start + 6
	n := len(f.buf) - bodyAt
	var l [binary.MaxVarintLen64]byte
	k := binary.PutUvarint(l[:], uint64(n))
	copy(f.buf[f.start+1:], l[:k])
	copy(f.buf[f.start+1+k:], f.buf[bodyAt:])
	f.buf = f.buf[:f.start+1+k+n]
	f.start = -1
}

// frame appends a frame of kind with clock now and no more body.
func (f *frameWriter) frame(kind byte, now int64) {
	f.open(kind, now)
	f.close()
}

// record adds r to the open records frame, opening a new one (at now)
// when the open one is full or none is open.
func (f *frameWriter) record(r engine.Record, now int64) {
	if f.start < 0 || len(f.buf)-f.start > recordsFrameCut {
		f.close()
		f.open(frameRecords, now)
	}
	f.buf = persist.AppendEntry(f.buf, r)
}

// entries adds records frames (at now) holding the entries in body (each
// made by persist.AppendEntry or persist.AppendStateEntry): as many whole entries per
// frame as fit under recordsFrameCut (at least one). They are one unit:
// every frame but the last is an 'm', so a replica applies all of them or
// none (a write that spanned shards is in one pump, Engine's consistent
// cut).
func (f *frameWriter) entries(body []byte, now int64) {
	f.close()
	for len(body) > 0 {
		n := len(body)
		if n > recordsFrameCut {
			n = persist.EntryEnd(body, 0) // at least one entry
			for n < len(body) {
				e := persist.EntryEnd(body, n)
				if e > recordsFrameCut {
					break
				}
				n = e
			}
		}
		kind := byte(frameRecords)
		if n < len(body) {
			kind = frameMore
		}
		f.open(kind, now)
		f.buf = append(f.buf, body[:n]...)
		f.close()
		body = body[n:]
	}
}

// frame is one decoded frame: its kind, the sender's clock, and, for a
// records frame, the encoded records.
type frame struct {
	kind byte
	now  int64
	body []byte // after the clock
}

// parseFrame decodes the frame at the start of b. It returns the frame and
// its size, or size 0 if b does not hold a whole frame yet.
func parseFrame(b []byte) (frame, int, error) {
	if len(b) < 2 {
		return frame{}, 0, nil
	}
	n, k := binary.Uvarint(b[1:])
	switch {
	case k == 0:
		return frame{}, 0, nil
	case k < 0 || n > maxFrame:
		return frame{}, 0, errFrame
	}
	end := 1 + k + int(n)
	if len(b) < end {
		return frame{}, 0, nil
	}
	body := b[1+k : end]
	now, j := binary.Varint(body)
	if j <= 0 {
		return frame{}, 0, errFrame
	}
	switch b[0] {
	case frameHeartbeat, frameRecords, frameMore, frameFlush, frameSyncStart, frameSyncEnd:
	default:
		return frame{}, 0, fmt.Errorf("%w: kind %q", errFrame, b[0])
	}
	return frame{kind: b[0], now: now, body: body[j:]}, end, nil
}

// records decodes a records frame's body, passing each record to fn.
func (f frame) records(fn func(engine.Record) error) error { return f.recordsInto(nil, fn) }

// recordsInto is records with the keys prefetched into e (entriesInto).
func (f frame) recordsInto(e *engine.Engine, fn func(engine.Record) error) error {
	return f.entriesInto(e, func(key, rec []byte) error {
		r, err := persist.DecodeRecord(string(key), rec)
		if err != nil {
			return fmt.Errorf("replication: record of %q: %w", key, err)
		}
		return fn(r)
	})
}

// applyTo applies a records frame's records to e at now, in order
// (persist.ApplyRecord: a state of words alone is stored with no Record
// built), their keys prefetched. On a record that does not decode it
// stops with records' error; those before it stay applied (a replica
// verifies a unit first).
func (f frame) applyTo(e *engine.Engine, now int64) error {
	_, err := f.applyChecked(e, now, nil)
	return err
}

// applyChecked is applyTo for a frame whose records check found checked,
// in order: a record's state of words alone is stored as its check
// parsed it, not parsed again (persist.ApplyChecked). A record past the
// end of checked is applied as applyTo applies it. It returns what is
// left of checked after the frame's records, for the unit's next frame.
func (f frame) applyChecked(e *engine.Engine, now int64, checked []engine.Checked) ([]engine.Checked, error) {
	err := f.entriesInto(e, func(key, rec []byte) error {
		var c engine.Checked
		if len(checked) > 0 {
			c, checked = checked[0], checked[1:]
		}
		if err := persist.ApplyChecked(e, key, rec, c, now); err != nil {
			return fmt.Errorf("replication: record of %q: %w", key, err)
		}
		return nil
	})
	return checked, err
}

// verify returns how many records the frame holds and the error applyTo
// would stop at on them, applying nothing (persist.CheckRecord); a frame
// without records holds none. A replica verifies every frame of a unit
// before it applies any, so a unit is applied whole or not at all even
// when its primary sent a record this replica cannot take (a corrupt
// state, or a later version's), and a full sync's frames before it
// installs any.
func (f frame) verify() (n int, err error) {
	_, n, err = f.check(nil, false)
	return n, err
}

// check is verify that, if keep, appends to checked what the check of
// each record found, in order (engine.Checked), for applyChecked.
func (f frame) check(checked []engine.Checked, keep bool) ([]engine.Checked, int, error) {
	if f.kind != frameRecords && f.kind != frameMore {
		return checked, 0, nil
	}
	n := 0
	err := f.entriesInto(nil, func(key, rec []byte) error {
		var c *engine.Checked
		if keep {
			checked = append(checked, engine.Checked{})
			c = &checked[len(checked)-1]
		}
		if err := persist.CheckRecord(key, rec, c); err != nil {
			return fmt.Errorf("replication: record of %q: %w", key, err)
		}
		n++
		return nil
	})
	return checked, n, err
}

// entriesInto passes fn each entry of a records frame's body, its key and
// its record's bytes (valid during the call), after bringing the keys of
// the next engine.PrefetchMax entries into the CPU cache
// (Engine.Prefetch). A replica applies its primary's changes in the
// primary's order, which is random in its own table, so on a large
// keyspace each record's lookup missed the cache on its slot and then on
// its record, one record after another. With e nil nothing is prefetched.
func (f frame) entriesInto(e *engine.Engine, fn func(key, rec []byte) error) error {
	var keys [engine.PrefetchMax][]byte
	due := 0 // the entries from b on whose keys are prefetched
	for b := f.body; len(b) > 0; due-- {
		if e != nil && due <= 0 {
			for rest := b; due < len(keys); due++ {
				key, _, r, ok := persist.NextEntry(rest)
				if !ok {
					break // the entry below fails if it is b
				}
				keys[due], rest = key, r
			}
			e.Prefetch(keys[:due])
		}
		key, rec, rest, ok := persist.NextEntry(b)
		if !ok {
			return errFrame
		}
		b = rest
		if err := fn(key, rec); err != nil {
			return err
		}
	}
	return nil
}

// EncodeRecords returns records frames holding recs, after a heartbeat
// frame that carries the clock reading now even when recs is empty: how a
// slot's limits travel to the shard that takes the slot over
// (docs/cluster.md, "Moving slots").
func EncodeRecords(now int64, recs []engine.Record) []byte {
	f := frameWriter{start: -1}
	f.frame(frameHeartbeat, now)
	for _, r := range recs {
		f.record(r, now)
	}
	f.close()
	return f.buf
}

// DecodeRecords reads what EncodeRecords wrote: it returns the sender's
// clock reading (the latest frame's) and passes each record to fn.
func DecodeRecords(b []byte, fn func(engine.Record) error) (now int64, err error) {
	for len(b) > 0 {
		f, n, err := parseFrame(b)
		switch {
		case err != nil:
			return 0, err
		case n == 0:
			return 0, errFrame
		case f.kind != frameHeartbeat && f.kind != frameRecords:
			return 0, fmt.Errorf("%w: %q among records", errFrame, f.kind)
		}
		now = max(now, f.now)
		if f.kind == frameRecords {
			if err := f.records(fn); err != nil {
				return 0, err
			}
		}
		b = b[n:]
	}
	return now, nil
}

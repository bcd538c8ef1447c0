package persist

import (
	"encoding/binary"
	"errors"
	"fmt"
	"hash/crc32"

	"github.com/rlserver/rlserver/engine"
	"github.com/rlserver/rlserver/internal/zigzag"
)

// The formats of an encoded record. A record with a log is written in
// version 2, one without in version 1; both are read, and any other is
// refused.
const (
	RecordVersion    = 1 // the log's entries as zigzag varints
	RecordVersionLog = 2 // the log's entries as deltas (appendLog)
	// RecordVersionState is the engine's own layout of a state
	// (AppendStateRecord): what replication's stream carries for a change
	// as the write made it, and what snapshots store. It has no checksum
	// (a snapshot's chunk has one). It changes with the engine's layout,
	// which a change must give a new version, keeping this one's decoder
	// for the stores that hold it (engine's TestStateRecordsArePinned).
	RecordVersionState = 3
	// RecordVersionDelta is an RL.LOG's delta in a snapshot's segment:
	//
	//	version u8 (4) | kind u8 (3) | delta
	//
	// the delta as engine.RestoreDelta reads it: what the record gained
	// since the key's entry before it in the store, which it needs. Only
	// a load reads it (Store.LoadDeltas); replication never carries one.
	RecordVersionDelta = 4
)

// Codec errors. Decode wraps them with what it was decoding.
var (
	ErrChecksum = errors.New("persist: checksum mismatch")
	ErrVersion  = errors.New("persist: unknown record format version")
	ErrCorrupt  = errors.New("persist: malformed record")
)

var crcTable = crc32.MakeTable(crc32.Castagnoli)

// AppendRecord encodes r's state (not its key) onto dst:
//
//	version u8 | kind u8 | deadline, A, B, C as zigzag varints |
//	log length uvarint | log entries | CRC-32C u32
//
// The log's entries are zigzag varints in version 1, deltas (appendLog)
// in version 2, which a record with a log is written in.
//
// The checksum covers the key as well as everything before it, so a
// record moved to another key is detected too.
func AppendRecord(dst []byte, r engine.Record) []byte {
	start := len(dst)
	version := byte(RecordVersion)
	if len(r.Log) > 0 {
		version = RecordVersionLog
	}
	dst = append(dst, version, byte(r.Kind))
	dst = binary.AppendVarint(dst, r.Deadline)
	dst = binary.AppendVarint(dst, r.A)
	dst = binary.AppendVarint(dst, r.B)
	dst = binary.AppendVarint(dst, r.C)
	dst = binary.AppendUvarint(dst, uint64(len(r.Log)))
	dst = appendLog(dst, r.Deadline, r.Log)
	sum := crc32.Update(crc32.Checksum([]byte(r.Key), crcTable), crcTable, dst[start:])
	return binary.LittleEndian.AppendUint32(dst, sum)
}

// AppendStateRecord encodes a record in version 3 onto dst, from a state
// in the engine's own layout, as an engine.Encoder is given it:
//
//	version u8 (3) | kind u8 | state
//
// (kind KindNone and no state: a deletion). engine.DecodeState reads it.
func AppendStateRecord(dst []byte, kind engine.Kind, state []byte) []byte {
	dst = append(dst, RecordVersionState, byte(kind))
	return append(dst, state...)
}

// ApplyRecord applies the record b of key to e at now as
// e.Apply(DecodeRecord(key, b)) would, with DecodeRecord's errors (and
// nothing applied on one). A version 3 record goes to engine.ApplyState,
// which builds no Record for a state of words alone: a replica's apply
// allocates nothing for most of its stream. Neither key nor b is retained.
func ApplyRecord(e *engine.Engine, key, b []byte, now int64) error {
	return ApplyChecked(e, key, b, engine.Checked{}, now)
}

// CheckRecord returns the error ApplyRecord would return for the record
// b of key, applying nothing: a version 3 record is checked by
// engine.CheckState (no allocation), any other decoded by DecodeRecord.
// Neither key nor b is retained. If c is not nil it is set as
// engine.CheckState sets it (zero for a record of another version), for
// ApplyChecked.
func CheckRecord(key, b []byte, c *engine.Checked) error {
	if len(b) >= 2 && b[0] == RecordVersionState {
		if err := engine.CheckState(engine.Kind(b[1]), b[2:], c); err != nil {
			return fmt.Errorf("%w: %w", ErrCorrupt, err)
		}
		return nil
	}
	if c != nil {
		*c = engine.Checked{}
	}
	_, err := DecodeRecord(string(key), b)
	return err
}

// ApplyChecked is ApplyRecord for a record whose CheckRecord filled c
// (engine.ApplyChecked; the zero Checked for one it did not check).
func ApplyChecked(e *engine.Engine, key, b []byte, c engine.Checked, now int64) error {
	if len(b) >= 2 && b[0] == RecordVersionState {
		if _, err := e.ApplyChecked(key, engine.Kind(b[1]), b[2:], c, now); err != nil {
			return fmt.Errorf("%w: %w", ErrCorrupt, err)
		}
		return nil
	}
	r, err := DecodeRecord(string(key), b)
	if err != nil {
		return err
	}
	e.Apply(r, now)
	return nil
}

// DecodeRecord decodes a record for key from b (which it does not retain).
func DecodeRecord(key string, b []byte) (engine.Record, error) {
	if len(b) >= 2 && b[0] == RecordVersionState {
		r, err := engine.DecodeState(key, engine.Kind(b[1]), b[2:])
		if err != nil {
			return r, fmt.Errorf("%w: %w", ErrCorrupt, err)
		}
		return r, nil
	}
	r := engine.Record{Key: key}
	if len(b) >= 1 && b[0] == RecordVersionDelta {
		return r, fmt.Errorf("%w %d: a delta, which only a load reads", ErrVersion, b[0])
	}
	if len(b) >= 1 && b[0] != RecordVersion && b[0] != RecordVersionLog {
		// Checked before the checksum: a later format need not carry
		// one (versions 3 and 4 do not), and a downgrade must say what
		// it met, not report a mismatch.
		return r, fmt.Errorf("%w %d", ErrVersion, b[0])
	}
	if len(b) < 2+4 {
		return r, ErrCorrupt
	}
	body, tail := b[:len(b)-4], b[len(b)-4:]
	if crc32.Update(crc32.Checksum([]byte(key), crcTable), crcTable, body) != binary.LittleEndian.Uint32(tail) {
		return r, ErrChecksum
	}
	version := body[0]
	r.Kind = engine.Kind(body[1])
	if r.Kind != engine.KindNone && !r.Kind.Known() { // KindNone: a deletion (replication's stream)
		return r, fmt.Errorf("%w: kind %d", ErrCorrupt, body[1])
	}
	p := body[2:]
	next := func() (int64, bool) {
		v, n := binary.Varint(p)
		if n <= 0 {
			return 0, false
		}
		p = p[n:]
		return v, true
	}
	var ok1, ok2, ok3, ok4 bool
	r.Deadline, ok1 = next()
	r.A, ok2 = next()
	r.B, ok3 = next()
	r.C, ok4 = next()
	if !(ok1 && ok2 && ok3 && ok4) {
		return r, ErrCorrupt
	}
	n, k := binary.Uvarint(p)
	if k <= 0 || n > uint64(len(p)) {
		return r, ErrCorrupt
	}
	p = p[k:]
	if n > 0 {
		r.Log = make([]int64, n)
		prev := r.Deadline // version 2's reference time
		for i := range r.Log {
			var ok bool
			if version == RecordVersion {
				r.Log[i], ok = next()
			} else {
				r.Log[i], prev, p, ok = logEntry(p, prev)
			}
			if !ok {
				return r, ErrCorrupt
			}
		}
	}
	if len(p) != 0 {
		return r, ErrCorrupt
	}
	return r, nil
}

// A version 2 log writes each entry v as the shortest of
//
//	uvarint(zz(v - prev) << 2 | 0)   v a time (v >= 0), near the one before
//	uvarint(zz(^v - prev) << 2 | 1)  v the head -(t+1) of a pair, t near it
//	uvarint(zz(v) << 2 | 2)          v a small number (a pair's count)
//	uvarint(3), varint(v)            anything else
//
// where prev is the last time written (logNext), the deadline before
// the first. A log's times sit close together (an RL.LOG's within its
// window), so a time takes 4-5 bytes instead of a zigzag varint's 9, and
// the numbers between them (a pair's count) a byte. Any []int64
// round-trips, with wrapping arithmetic.
const (
	logDelta   = 0
	logPair    = 1
	logPlain   = 2
	logEscape  = 3
	logTagBits = 2
)

// appendLog appends log's entries as version 2 writes them, the first
// relative to the deadline dl.
func appendLog(dst []byte, dl int64, log []int64) []byte {
	prev := dl
	for _, v := range log {
		x, tag := zigzag.Encode(v), uint64(logPlain)
		if v >= 0 {
			if d := zigzag.Encode(v - prev); d < x {
				x, tag = d, logDelta
			}
		} else if d := zigzag.Encode(^v - prev); d < x {
			x, tag = d, logPair
		}
		if x < 1<<(64-logTagBits) {
			dst = binary.AppendUvarint(dst, x<<logTagBits|tag)
		} else {
			tag = logEscape
			dst = binary.AppendUvarint(dst, logEscape)
			dst = binary.AppendVarint(dst, v)
		}
		prev = logNext(prev, v, tag)
	}
	return dst
}

// logEntry decodes one entry of a version 2 log from the start of p,
// prev as appendLog had it. It returns the entry, prev for the next
// entry (logNext) and the rest of p.
func logEntry(p []byte, prev int64) (v, next int64, rest []byte, ok bool) {
	u, n := binary.Uvarint(p)
	if n <= 0 {
		return 0, 0, p, false
	}
	p = p[n:]
	x, tag := u>>logTagBits, u&(1<<logTagBits-1)
	switch tag {
	case logDelta:
		v = prev + zigzag.Decode(x)
	case logPair:
		v = ^(prev + zigzag.Decode(x))
	case logPlain:
		v = zigzag.Decode(x)
	default:
		if x != 0 {
			return 0, 0, p, false // an escape is the tag alone
		}
		if v, n = binary.Varint(p); n <= 0 {
			return 0, 0, p, false
		}
		p = p[n:]
	}
	return v, logNext(prev, v, tag), p, true
}

// logNext is prev after the entry v written with tag: the time it
// carries (v, or t for a pair's head -(t+1)) if it was written as a time
// or is as large as one, else prev unchanged (a count, say, between two
// times that sit close together).
func logNext(prev, v int64, tag uint64) int64 {
	t := v
	if v < 0 {
		t = ^v
	}
	if tag == logDelta || tag == logPair || t >= logTimeLike {
		return t
	}
	return prev
}

// logTimeLike is the least value a plainly written entry must reach to
// become the next entries' reference: about 13 days in Unix ns, far above
// a count and far below any clock reading.
const logTimeLike = 1 << 50

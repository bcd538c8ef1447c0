package engine

import (
	"encoding/binary"

	"github.com/rlserver/rlserver/internal/zigzag"
)

// A key's state is one variable-length record in its shard's data region:
//
//	header byte | uvarint key length | key | deadline (8 bytes LE) | body | uvarint n | n slack bytes
//
// The header holds the kind (low 3 bits, hdrKind), the dead bit (a record
// replaced or removed, garbage until the region is compacted) and one
// dirty bit per change feed (changed since that feed last read it;
// feedBits in feed.go):
//
//	bit  7      6      5      4     3      2..0
//	     feed3  feed2  feed1  dead  feed0  kind
//
// The body is the algorithm's state in varints, times as differences from the deadline, which they sit close
// to, so a typical record is its key plus 11-21 bytes. Each algorithm
// encodes its own body (its Algorithm's encode and decode, in its file):
//
//	CL.THROTTLE  zz(deadline - TAT)
//	RL.FIXED     dur(deadline - window start) | count
//	RL.SLIDE     dur(deadline - window start) | current count | previous count
//	RL.BUCKET    rate | zz(lo(D)) | zz(hi(D) - sign(lo(D)))  where D = deadline*rate - TAT (128-bit)
//	RL.LOG       units held | dur(deadline - oldest run's time) | ticket code | byte length of the runs | runs
//	lease        zz(deadline - last token) | leases | byte length of the runs | runs
//
// RL.LOG's runs are described in log.go, a lease key's in lease.go. An
// RL.BUCKET or RL.FIXED key with reservations in line has a section after
// its body (uvarint length | section), flagged by bit 63 of the stored
// deadline (deadlines are below 2^63); reserve.go describes it.
// Every encoding is total (any words round-trip exactly, with wrapping
// arithmetic), so a restored record is held as it came.
//
// The slack lets a record's state change size in place: a record written
// anew is given an eighth of its size (at least 24 bytes) as slack, so an RL.LOG that grows by
// a run, or a count that gains a varint byte, is rewritten where it is
// most of the time instead of leaving its old copy as garbage.
const (
	hdrKind = 0x07
	hdrDead = 0x10
)

// entry is a record's decoded state: deadline is the first Unix ns at
// which the key no longer exists (alive iff now < deadline); w is the
// state in its storage form, which kind's algorithm reads (an RL.LOG's
// runs stay in the record).
type entry struct {
	deadline int64
	w        words
	kind     Kind
}

func (e *entry) alive(now int64) bool { return now < e.deadline }

// A time difference that is usually a round number of seconds (a window,
// a deadline less its newest admission) is stored as m * unit, unit the
// largest of 1 ns, 1 µs, 1 ms, 1 s that divides it: zz(m) in a varint
// whose first byte holds the unit's code in its low two bits,
//
//	bit  7     6..2            1..0
//	     more  zz(m) low bits  code     then, if more, uvarint(zz(m) >> 5)
//
// so a one-day window takes 3 bytes instead of 7, a one-second window 1
// instead of 5. Every value round-trips (m * unit is the value itself),
// and the bytes continue as a varint's do, so a run of them can be walked
// backwards (varintStart).
var durUnit = [4]int64{1, 1e3, 1e6, 1e9}

// appendDur appends the time difference v in ns.
func appendDur(dst []byte, v int64) []byte {
	var x uint64
	var code byte
	switch {
	case v%1e9 == 0:
		x, code = zigzag.Encode(v/1e9), 3
	case v%1e6 == 0:
		x, code = zigzag.Encode(v/1e6), 2
	case v%1e3 == 0:
		x, code = zigzag.Encode(v/1e3), 1
	default:
		x = zigzag.Encode(v)
	}
	first := code | byte(x&0x1f)<<2
	if x < 0x20 {
		return append(dst, first)
	}
	return binary.AppendUvarint(append(dst, first|0x80), x>>5)
}

// durAt decodes the time difference appendDur wrote at b[i] and returns
// it with the offset past it.
func durAt(b []byte, i int) (int64, int) {
	c := b[i]
	x := uint64(c>>2) & 0x1f
	if c < 0x80 {
		return zigzag.Decode(x) * durUnit[c&3], i + 1
	}
	rest, j := uvarint(b, i+1)
	return zigzag.Decode(x|rest<<5) * durUnit[c&3], j
}

// uvarint decodes a varint the encoder wrote (never malformed: the region
// is written only by appendRecord and fillSlack). One-byte values, the
// common case, take the inlined fast path.
func uvarint(b []byte, i int) (uint64, int) {
	if c := b[i]; c < 0x80 {
		return uint64(c), i + 1
	}
	return uvarintSlow(b, i)
}

func uvarintSlow(b []byte, i int) (uint64, int) {
	var v uint64
	for shift := uint(0); ; shift += 7 {
		c := b[i]
		i++
		v |= uint64(c&0x7f) << shift
		if c < 0x80 {
			return v, i
		}
	}
}

// appendRecord encodes a live record up to its slack (hdr carries the
// kind and dirty bits); withSlack completes it. runs is RL.LOG's encoded
// log (log.go; ignored for other kinds).
func appendRecord(dst []byte, hdr byte, key []byte, e entry, runs []byte) []byte {
	dst = append(dst, hdr)
	dst = binary.AppendUvarint(dst, uint64(len(key)))
	dst = append(dst, key...)
	return appendState(dst, Kind(hdr&hdrKind), e, runs)
}

// appendState encodes the state of a live record of kind, from its
// deadline up to its slack: what follows the key in appendRecord's
// layout, and what an encoded feed's Encoder is given.
func appendState(dst []byte, kind Kind, e entry, runs []byte) []byte {
	a := algorithmOf(kind)
	if a.hasRuns || len(runs) == 0 {
		dst = binary.LittleEndian.AppendUint64(dst, uint64(e.deadline))
		return a.encode(dst, uint64(e.deadline), e.w, runs)
	}
	// A words kind's runs are its section (reserve.go), after the body.
	dst = binary.LittleEndian.AppendUint64(dst, uint64(e.deadline)|pendingBit)
	dst = a.encode(dst, uint64(e.deadline), e.w, nil)
	dst = binary.AppendUvarint(dst, uint64(len(runs)))
	return append(dst, runs...)
}

// parsed is a record located in a data region.
type parsed struct {
	hdr  byte
	key  []byte
	e    entry
	runs []byte // RL.LOG's encoded log
	tail int    // offset of the slack count, just past the state
	end  int    // offset just past the record
}

// parseRecord decodes the record at off.
func parseRecord(b []byte, off int) parsed {
	p := parseHead(b, off)
	p.end = recordEnd(b, p.tail)
	return p
}

// parseHead is parseRecord but for the record's end (p.end is 0): it
// reads nothing past the state, as a lookup does not, so a long log's
// slack count stays unread. A read that reaches records through the key
// table, not one after another, needs no end.
func parseHead(b []byte, off int) parsed {
	var p parsed
	p.hdr = b[off]
	kl, i := uvarint(b, off+1)
	p.key = b[i : i+int(kl) : i+int(kl)]
	var runs int
	p.e, runs, p.tail = decodeState(b, i+int(kl), Kind(p.hdr&hdrKind))
	if runs != 0 {
		n, j := uvarint(b, runs)
		p.runs = b[j : j+int(n) : j+int(n)]
	}
	return p
}

// recordParts returns the key, kind and state (appendState's bytes) of
// rec, a record as appendRecord built it, up to its slack.
func recordParts(rec []byte) (key []byte, kind Kind, state []byte) {
	kl, i := uvarint(rec, 1)
	return rec[i : i+int(kl)], Kind(rec[0] & hdrKind), rec[i+int(kl):]
}

// decodeState decodes a record's state from its deadline at i on. It
// returns the offset of the runs' length for a kind with runs (0
// otherwise) and the record's tail: the offset just past the state, where
// its slack count is (recordEnd). It is the lookup's hot path: small
// results, in registers. It reads nothing past the state: a long RL.LOG's
// slack count lies a cache line or more from its head, and a decision
// that stores nothing (most refusals) need not wait for that line.
func decodeState(b []byte, i int, kind Kind) (e entry, runs, tail int) {
	dl := binary.LittleEndian.Uint64(b[i:])
	sec := dl & pendingBit
	dl &^= pendingBit
	e = entry{deadline: int64(dl), kind: kind}
	e.w, runs, i = algorithmOf(kind).decode(b, i+8, dl)
	if sec != 0 { // a words kind's section (reserve.go), read as its runs
		runs = i
		n, j := uvarint(b, i)
		i = j + int(n)
	}
	return e, runs, i
}

// recordEnd returns the offset just past the record whose tail (decodeState)
// is at tail: past its slack count and slack. A state without its slack
// (appendState's bytes alone, as a stream carries them) ends at its tail.
func recordEnd(b []byte, tail int) int {
	if tail == len(b) {
		return tail // no slack: never in a data region, where every record has its count
	}
	u, i := uvarint(b, tail)
	return i + int(u)
}

// withSlack completes a record from appendRecord with n slack bytes.
func withSlack(rec []byte, n int) []byte {
	rec = binary.AppendUvarint(rec, uint64(n))
	for range n {
		rec = append(rec, 0)
	}
	return rec
}

// fillSlack completes a record from appendRecord so that it spans exactly
// size bytes, if it fits: the slack count is written as a varint padded
// with continuation bytes to whatever width makes the sum exact (the
// decoder reads non-minimal varints as any other). The slack bytes
// themselves are not appended: they are never read, so a rewrite in place
// copies only the record's live bytes, however much slack it has.
func fillSlack(rec []byte, size int) ([]byte, bool) {
	room := size - len(rec)
	if room < 1 {
		return rec, false
	}
	w := 1
	for w < binary.MaxVarintLen64 && uint64(room-w) >= 1<<(7*w) {
		w++
	}
	n := uint64(room - w)
	for i := 1; i < w; i++ {
		rec = append(rec, byte(n)|0x80)
		n >>= 7
	}
	rec = append(rec, byte(n))
	return rec, true
}

package persist

import (
	"encoding/binary"
	"errors"
	"fmt"
	"hash/crc32"

	"github.com/rlserver/rlserver/engine"
)

// RecordVersion is the format of an encoded record; a decoder refuses
// any other.
const RecordVersion = 1

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
//	log length uvarint | log entries as zigzag varints | CRC-32C u32
//
// The checksum covers the key as well as everything before it, so a
// record moved to another key is detected too.
func AppendRecord(dst []byte, r engine.Record) []byte {
	return AppendState(dst, []byte(r.Key), &r)
}

// AppendState is AppendRecord for the record r of key (r.Key is not
// read): a caller holding the key as bytes, borrowed, encodes without
// copying it (replication's stream).
func AppendState(dst, key []byte, r *engine.Record) []byte {
	start := len(dst)
	dst = append(dst, RecordVersion, byte(r.Kind))
	dst = binary.AppendVarint(dst, r.Deadline)
	dst = binary.AppendVarint(dst, r.A)
	dst = binary.AppendVarint(dst, r.B)
	dst = binary.AppendVarint(dst, r.C)
	dst = binary.AppendUvarint(dst, uint64(len(r.Log)))
	for _, v := range r.Log {
		dst = binary.AppendVarint(dst, v)
	}
	sum := crc32.Update(crc32.Checksum(key, crcTable), crcTable, dst[start:])
	return binary.LittleEndian.AppendUint32(dst, sum)
}

// DecodeRecord decodes a record for key from b (which it does not retain).
func DecodeRecord(key string, b []byte) (engine.Record, error) {
	r := engine.Record{Key: key}
	if len(b) < 2+4 {
		return r, ErrCorrupt
	}
	body, tail := b[:len(b)-4], b[len(b)-4:]
	if crc32.Update(crc32.Checksum([]byte(key), crcTable), crcTable, body) != binary.LittleEndian.Uint32(tail) {
		return r, ErrChecksum
	}
	if body[0] != RecordVersion {
		return r, fmt.Errorf("%w %d", ErrVersion, body[0])
	}
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
		for i := range r.Log {
			v, ok := next()
			if !ok {
				return r, ErrCorrupt
			}
			r.Log[i] = v
		}
	}
	if len(p) != 0 {
		return r, ErrCorrupt
	}
	return r, nil
}

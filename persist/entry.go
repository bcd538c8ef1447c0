package persist

import (
	"encoding/binary"

	"github.com/rlserver/rlserver/engine"
)

// An entry is a key and its record, as a snapshot's segment stores them
// and replication's records frames carry them:
//
//	key length uvarint | key | record length uvarint | record
//
// A run of entries is applied in order: a key's last entry holds.

// AppendEntry appends r's entry, its record encoded by AppendRecord.
func AppendEntry(dst []byte, r engine.Record) []byte {
	dst = binary.AppendUvarint(dst, uint64(len(r.Key)))
	dst = append(dst, r.Key...)
	at := len(dst)
	dst = append(dst, 0) // the record's length, a byte if it fits
	dst = AppendRecord(dst, r)
	if n := len(dst) - at - 1; n < 0x80 {
		dst[at] = byte(n)
	} else {
		rec := append([]byte(nil), dst[at+1:]...)
		dst = binary.AppendUvarint(dst[:at], uint64(n))
		dst = append(dst, rec...)
	}
	return dst
}

// AppendStateEntry is AppendEntry for a change as an encoded feed gives
// it (engine.Encoder): the record is the state in the engine's layout,
// in version 3 (AppendStateRecord), copied, not encoded again.
//
// A kind with engine.KindDelta set is an RL.LOG's delta (a snapshot's
// feed writes them: engine.Feed.WriteDeltas), stored in version 4.
func AppendStateEntry(dst, key []byte, kind engine.Kind, state []byte) []byte {
	dst = binary.AppendUvarint(dst, uint64(len(key)))
	dst = append(dst, key...)
	dst = binary.AppendUvarint(dst, uint64(2+len(state)))
	if kind&engine.KindDelta != 0 {
		dst = append(dst, RecordVersionDelta, byte(kind&^engine.KindDelta))
		return append(dst, state...)
	}
	return AppendStateRecord(dst, kind, state)
}

// EntryEnd returns where the entry that starts at from in b ends. b
// holds whole entries, as this package appended them: it is not checked.
func EntryEnd(b []byte, from int) int {
	n, k := binary.Uvarint(b[from:]) // the key
	from += k + int(n)
	n, k = binary.Uvarint(b[from:]) // the record
	return from + k + int(n)
}

// NextEntry splits the first entry off b: its key, its encoded record
// and what follows. ok is false if b does not start with a whole entry.
// The slices alias b.
func NextEntry(b []byte) (key, rec, rest []byte, ok bool) {
	kl, k := binary.Uvarint(b)
	if k <= 0 || kl > uint64(len(b)-k) {
		return nil, nil, b, false
	}
	key, b = b[k:k+int(kl)], b[k+int(kl):]
	rl, k := binary.Uvarint(b)
	if k <= 0 || rl > uint64(len(b)-k) {
		return nil, nil, b, false
	}
	return key, b[k : k+int(rl)], b[k+int(rl):], true
}

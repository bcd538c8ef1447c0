package engine

import "encoding/binary"

// CL.THROTTLE's keys: redis-cell's GCRA (gcra.go decides) stored as one
// theoretical arrival time, with redis-cell's key expiry (the key lives
// through the whole of its last millisecond, as Redis expires it), and
// readable and writable with GET and SET as the Redis string redis-cell
// keeps.

// throttleState is a CL.THROTTLE key's state. The zero value is fresh.
type throttleState struct {
	tat uint64 // theoretical arrival time, Unix ns (redis-cell's u64)
}

func throttleOf(w words) throttleState { return throttleState{tat: uint64(w.a)} }
func (s throttleState) words() words   { return words{a: int64(s.tat)} }

var throttleAlgorithm = Algorithm{
	Kind: KindThrottle, Name: "throttle",
	// Body: zz(deadline - tat).
	encode: func(dst []byte, dl uint64, w words, _ []byte) []byte {
		return binary.AppendUvarint(dst, zz(int64(dl-throttleOf(w).tat)))
	},
	decode: func(b []byte, i int, dl uint64) (words, int, int) {
		u, i := uvarint(b, i)
		return throttleState{tat: dl - uint64(unzz(u))}.words(), 0, i
	},
	// Redis's expire_ms - now_ms: the deadline is the end of Redis's last
	// live millisecond.
	lifeMs: func(e entry, now int64) int64 { return ceilDiv(e.deadline-now, 1_000_000) - 1 },
}

// Throttle runs CL.THROTTLE for quantity q on key at now and stores the
// outcome. Errors: ErrWrongType (nothing changed), ErrExpire (the TAT was
// stored without expiry, as redis-cell on Redis 7 leaves it).
func (st Store) Throttle(key []byte, g GCRA, q, now int64) (ThrottleResult, error) {
	s, h := st.e.shardOf(key)
	st.lock(s)
	defer st.unlock(s)
	now = s.decisionTimeLocked(now)
	off, cur, end, ok := s.lookupLocked(h, key, now)
	var tat uint64
	if ok {
		if cur.kind != KindThrottle {
			return ThrottleResult{}, ErrWrongType
		}
		tat = throttleOf(cur.w).tat
	}
	d, err := g.Decide(tat, ok, now, q)
	if d.Write && !st.dry {
		s.putLocked(off, end, h, key, entry{kind: KindThrottle, w: throttleState{d.NewTAT}.words(), deadline: throttleDeadline(now, d.TTLMs)}, nil)
	}
	return d.Result, err
}

// throttleDeadline turns a Redis relative TTL in ms into a deadline in ns:
// Redis expires a key when its ms clock is strictly past now_ms + ttl, so
// the key lives through the whole of that last millisecond. ttl -1 and
// below mean no expiry.
func throttleDeadline(now, ttlMs int64) int64 {
	if ttlMs < 0 {
		return never
	}
	return RedisDeadline(now/1_000_000 + ttlMs)
}

// GetThrottle returns the TAT stored at a CL.THROTTLE key. found is false
// for a missing key; ErrWrongType for an RL.* key.
func (st Store) GetThrottle(key []byte, now int64) (tat uint64, found bool, err error) {
	s, h := st.e.shardOf(key)
	st.lock(s)
	defer st.unlock(s)
	_, cur, _, ok := s.lookupLocked(h, key, now)
	if !ok {
		return 0, false, nil
	}
	if cur.kind != KindThrottle {
		return 0, true, ErrWrongType
	}
	return throttleOf(cur.w).tat, true, nil
}

// SetCondition restricts SetThrottle (SET's NX and XX).
type SetCondition uint8

// SET conditions.
const (
	SetAlways SetCondition = iota
	SetIfMissing
	SetIfExists
)

// SetThrottle stores tat at key as a CL.THROTTLE key (SET), replacing any
// value of any kind. deadline is an absolute ns deadline (0 = no expiry);
// keepTTL keeps the key's current deadline. It reports whether the value
// was written (NX/XX may refuse).
func (st Store) SetThrottle(key []byte, tat uint64, deadline int64, keepTTL bool, cond SetCondition, now int64) bool {
	s, h := st.e.shardOf(key)
	st.lock(s)
	defer st.unlock(s)
	now = s.decisionTimeLocked(now)
	off, cur, end, ok := s.lookupLocked(h, key, now)
	if (cond == SetIfMissing && ok) || (cond == SetIfExists && !ok) {
		return false
	}
	if deadline == 0 {
		deadline = never
	}
	e := entry{kind: KindThrottle, w: throttleState{tat}.words(), deadline: deadline}
	if ok && keepTTL {
		e.deadline = cur.deadline
	}
	s.putLocked(off, end, h, key, e, nil)
	return true
}

// RedisDeadline converts a Redis absolute expiry in ms (the key lives while
// the ms clock is <= expMs) to a deadline in ns.
func RedisDeadline(expMs int64) int64 {
	if expMs >= maxDeadline/1_000_000 {
		return maxDeadline
	}
	if expMs < 0 {
		return 1 // long past; never 0, which SetThrottle reads as "no expiry"
	}
	return (expMs + 1) * 1_000_000
}

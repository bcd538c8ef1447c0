package engine

import (
	"encoding/binary"
	"math"

	"github.com/rlserver/rlserver/internal/zigzag"
)

// CL.THROTTLE's keys: redis-cell's GCRA (gcra.go decides) stored as one
// theoretical arrival time, with redis-cell's key expiry (the key lives
// through the whole of its last millisecond, as Redis expires it), and
// readable and writable with GET and SET as the Redis string redis-cell
// keeps.

// throttleState is a CL.THROTTLE key's state. The zero value is fresh.
type throttleState struct {
	tat uint64 // theoretical arrival time, Unix ns (redis-cell's u64)
	// farMs is the key's Redis expiry, absolute Unix ms, when it lies
	// beyond the ns deadlines' range (from farFromMs on): the deadline is
	// then farDeadline and this is what PTTL and TTL count down to
	// (docs/cl-throttle.md §6.4). 0 otherwise, and in records written
	// before it existed, whose far expiry reads as farDeadline's.
	farMs int64
}

func throttleOf(w words) throttleState { return throttleState{tat: uint64(w.a), farMs: w.b} }
func (s throttleState) words() words   { return words{a: int64(s.tat), b: s.farMs} }

// A Redis expiry is a Unix time in ms up to 2^63-1 (about 292 million
// years); a deadline is a Unix time in ns, which ends in April 2262. A
// CL.THROTTLE key reaches past that with a period of a few centuries
// (cl-throttle.md §6.4), and SET's PXAT anywhere up to 2^63-1 ms. Such a
// key gets farDeadline, which no clock reading reaches, and keeps its
// Redis expiry in farMs.
const (
	// farDeadline marks a CL.THROTTLE deadline whose exact Redis expiry
	// is in farMs: the cap of every deadline (maxDeadline), so a record
	// from before farMs existed, capped the same way, reads as one
	// whose farMs is unknown (0).
	farDeadline = maxDeadline
	// farFromMs is the first Redis expiry in ms whose deadline,
	// (expMs+1) * 10^6 ns, would not be below farDeadline.
	farFromMs = farDeadline / 1_000_000
)

var throttleAlgorithm = Algorithm{
	Kind: KindThrottle, Name: "throttle",
	// Body: zz(deadline - tat), then farMs as a uvarint when the deadline
	// is farDeadline (only then: other keys pay no byte for it, and b is
	// 0 for them by construction).
	encode: func(dst []byte, dl uint64, w words, _ []byte) []byte {
		s := throttleOf(w)
		dst = binary.AppendUvarint(dst, zigzag.Encode(int64(dl-s.tat)))
		if dl == uint64(farDeadline) {
			dst = binary.AppendUvarint(dst, uint64(s.farMs))
		}
		return dst
	},
	decode: func(b []byte, i int, dl uint64) (words, int, int) {
		u, i := uvarint(b, i)
		s := throttleState{tat: dl - uint64(zigzag.Decode(u))}
		if dl == uint64(farDeadline) {
			var far uint64
			far, i = uvarint(b, i)
			s.farMs = int64(far)
		}
		return s.words(), 0, i
	},
	// Redis's expire_ms - now_ms (its PTTL, expire.c ttlGenericCommand):
	// the deadline is the end of Redis's last live millisecond, or, past
	// the ns range, farMs is the expiry itself.
	lifeMs: func(e entry, now int64) int64 {
		if far := throttleOf(e.w).farMs; e.deadline == farDeadline && far >= farFromMs {
			return far - now/1_000_000
		}
		return ceilDiv(e.deadline-now, 1_000_000) - 1
	},
}

// Throttle runs CL.THROTTLE for quantity q on key at now and stores the
// outcome. Errors: ErrWrongType (nothing changed), ErrExpire (the TAT was
// stored without expiry, as redis-cell on Redis 7 leaves it).
func (st Store) Throttle(key []byte, g GCRA, q, now int64) (ThrottleResult, error) {
	s, h := st.e.shardOf(key)
	st.lock(s)
	defer st.unlock(s)
	now = s.decisionTimeLocked(now)
	off, cur, tail, _, ok, stale := s.lookupKeepLocked(h, key, now)
	var tat uint64
	if ok {
		if cur.kind != KindThrottle {
			return ThrottleResult{}, ErrWrongType
		}
		tat = throttleOf(cur.w).tat
	}
	d, err := g.Decide(tat, ok, now, q)
	if d.Write && !ok && err == nil {
		if d.Write, off, tail, stale, err = st.newKeyAt(s, h, key, q == 0, off, tail, stale, now); err != nil {
			return ThrottleResult{}, err
		}
	}
	if d.Write && !st.dry {
		e := entry{kind: KindThrottle, deadline: never}
		if d.TTLMs >= 0 { // -1 and below: no expiry (§6.3)
			// Redis's RM_SetExpire adds the TTL to its ms clock (§6.4).
			// now is an int64 of ns and an allowed TTL at most DVT, an
			// int64 of ns: in ms both are below 2^53, so the sum cannot
			// overflow, however far past the ns range it lands.
			e = redisExpiry(now/1_000_000 + d.TTLMs)
		}
		e.w = throttleState{tat: d.NewTAT, farMs: e.w.b}.words()
		s.putLocked(off, tail, h, key, e, nil)
	} else {
		s.dropStaleIf(stale, h, key)
	}
	return d.Result, err
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

// NoExpiry is SetThrottle's expMs for a key without expiry.
const NoExpiry = math.MinInt64

// SetThrottle stores tat at key as a CL.THROTTLE key (SET), replacing any
// value of any kind. expMs is Redis's absolute expiry in Unix ms (the key
// lives while the ms clock is at most expMs), any int64 Redis accepts, or
// NoExpiry; keepTTL keeps the key's current expiry instead. It reports
// whether the value was written (NX/XX may refuse); a new key while the
// engine is full under noeviction is ErrOOM.
func (st Store) SetThrottle(key []byte, tat uint64, expMs int64, keepTTL bool, cond SetCondition, now int64) (bool, error) {
	s, h := st.e.shardOf(key)
	st.lock(s)
	defer st.unlock(s)
	now = s.decisionTimeLocked(now)
	off, cur, tail, ok := s.lookupLocked(h, key, now)
	if (cond == SetIfMissing && ok) || (cond == SetIfExists && !ok) {
		return false, nil
	}
	if !ok {
		if err := st.roomLocked(s, now); err != nil {
			return false, err
		}
	}
	e := entry{kind: KindThrottle, deadline: never}
	switch {
	case ok && keepTTL:
		e.deadline = cur.deadline
		if cur.kind == KindThrottle {
			e.w.b = throttleOf(cur.w).farMs
		}
	case expMs != NoExpiry:
		e = redisExpiry(expMs)
	}
	e.w = throttleState{tat: tat, farMs: e.w.b}.words()
	s.putLocked(off, tail, h, key, e, nil)
	return true, nil
}

// redisExpiry is a CL.THROTTLE entry (state to fill in) expiring as Redis
// expires a key whose expiry is expMs, absolute Unix ms: at the end of that
// millisecond, the deadline (expMs+1) * 10^6 ns. Past the ns range the
// deadline is farDeadline and the state's farMs (word b) holds expMs.
func redisExpiry(expMs int64) entry {
	switch {
	case expMs >= farFromMs:
		return entry{kind: KindThrottle, deadline: farDeadline, w: throttleState{farMs: expMs}.words()}
	case expMs < 0:
		return entry{kind: KindThrottle, deadline: 1} // long past
	}
	return entry{kind: KindThrottle, deadline: (expMs + 1) * 1_000_000}
}

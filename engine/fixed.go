package engine

import (
	"encoding/binary"

	"github.com/rlserver/rlserver/internal/sat"
)

// RL.FIXED, the fixed window counter: the count of the window that now
// falls in (windows start at multiples of the window length since the
// Unix epoch). Cheap and easy to explain, but a burst on each side of a
// boundary passes twice the limit in a rolling window.

// fixedState is an RL.FIXED key's state. The zero value is fresh.
type fixedState struct {
	start int64 // start of the window count belongs to, Unix ns
	count int64 // units admitted in that window
	// next is the units reserved in the window after it (reserve.go);
	// only a key with reservations has any, kept in its section.
	next int64
}

func fixedOf(w words) fixedState  { return fixedState{start: w.a, count: w.b, next: w.c} }
func (s fixedState) words() words { return words{a: s.start, b: s.count, c: s.next} }

var fixedAlgorithm = Algorithm{
	Kind: KindFixed, Name: "fixed",
	// Body: dur(deadline - start) | count (appendDur: the window, a
	// round number). next lives in the section of a
	// key with reservations (reserve.go).
	encode: func(dst []byte, dl uint64, w words, _ []byte) []byte {
		s := fixedOf(w)
		dst = appendDur(dst, int64(dl-uint64(s.start)))
		return binary.AppendUvarint(dst, uint64(s.count))
	},
	decode: func(b []byte, i int, dl uint64) (words, int, int) {
		var s fixedState
		d, i := durAt(b, i)
		s.start = int64(dl - uint64(d))
		u, i := uvarint(b, i)
		s.count = int64(u)
		return s.words(), 0, i
	},
	decide: fixedWords,
}

// fixedWords is fixedDecide over the state's words.
func fixedWords(p Params, w words, now int64) (words, Result) {
	next, r := fixedDecide(p, fixedOf(w), now)
	return next.words(), r
}

// fixedDecide decides an RL.FIXED request. The count carries over only
// while now is in that same window under the current window length, so
// changing the window length starts afresh unless the old start is also
// the new one. It does not know of reservations: a key with some is
// decided by fixedLine (reserve.go).
func fixedDecide(p Params, s fixedState, now int64) (fixedState, Result) {
	start := now - now%p.Window
	count := int64(0)
	if s.start == start {
		count = s.count
	}
	end := sat.Add(start, p.Window)
	r := Result{Limit: p.Limit, RetryAfter: -1}
	if fitsUnder(count, p.Cost, p.Limit) {
		if p.Cost > 0 {
			count += p.Cost
			s = fixedState{start: start, count: count}
		}
	} else {
		r.Limited = true
		if p.Cost <= p.Limit {
			r.RetryAfter = end - now
		}
	}
	r.Remaining = max(p.Limit-count, 0)
	if count > 0 {
		r.ResetAfter = end - now
	}
	return s, r
}

// fixedRoll is a state's counts seen from the window starting at start:
// the same window (its counts), the one after it (its next count becomes
// the count), or later (none).
func fixedRoll(s fixedState, start, window int64) (count, next int64) {
	switch s.start {
	case start:
		return s.count, s.next
	case start - window:
		return s.next, 0
	}
	return 0, 0
}

// fixedReply is the reply for the rolled state s (s.start the window of
// now) as the plain command gives it after its decision: what is left now
// (nothing while units wait in line for the next window) and when the key
// is fresh.
func fixedReply(p Params, s fixedState, now int64) Result {
	r := Result{Limit: p.Limit, RetryAfter: -1}
	end := sat.Add(s.start, p.Window)
	switch {
	case s.next > 0:
		r.ResetAfter = sat.Add(end, p.Window) - now
	case s.count > 0:
		r.Remaining = max(p.Limit-s.count, 0)
		r.ResetAfter = end - now
	default:
		r.Remaining = p.Limit
	}
	return r
}

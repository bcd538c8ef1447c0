package commands

import (
	"fmt"
	"unicode/utf8"

	"github.com/rlserver/rlserver/engine"
)

// cmdThrottle is CL.THROTTLE key max_burst count period [quantity], checked
// in redis-cell's order (docs/cl-throttle.md §2.1): UTF-8 of every argument,
// argument count, integers left to right, zero rate; then the decision.
func cmdThrottle(x *Ctx) {
	for _, a := range x.Args[1:] {
		if utf8.Valid(a) { // the common case, 8 ASCII bytes at a time
			continue
		}
		if msg, bad := utf8Error(a); bad {
			x.Error(ErrCellUTF8(msg))
			return
		}
	}
	if len(x.Args) != 5 && len(x.Args) != 6 {
		x.Error(ErrCellUsage)
		return
	}
	var n [4]int64
	n[3] = 1
	for i, a := range x.Args[2:] {
		v, ok := parseInt64(a)
		if !ok {
			x.Error(ErrCellParse(a))
			return
		}
		n[i] = v
	}
	g, err := engine.NewGCRA(n[0], n[1], n[2])
	if err != nil {
		x.Error(err)
		return
	}
	r, err := x.Store.Throttle(x.Args[1], g, n[3], x.Now)
	if err != nil {
		x.Error(err)
		return
	}
	x.Decide(Decision{Kind: engine.KindThrottle, Limited: r.Limited, Peek: n[3] == 0})
	writeLimitReply(x.W, r.Limited, r.Limit, r.Remaining, r.RetryAfter, r.ResetAfter)
}

// writeLimitReply writes the five-integer reply shared by CL.THROTTLE and
// the RL.* commands.
func writeLimitReply(w Writer, limited bool, limit, remaining, retry, reset int64) {
	w.Array(5)
	writeLimitFields(w, limited, limit, remaining, retry, reset)
}

// writeLimitFields writes a limiter reply's five integers, without the
// array around them.
func writeLimitFields(w Writer, limited bool, limit, remaining, retry, reset int64) {
	if limited {
		w.Int(1)
	} else {
		w.Int(0)
	}
	w.Int(limit)
	w.Int(remaining)
	w.Int(retry)
	w.Int(reset)
}

// utf8Error validates b as Rust's String::from_utf8 does and returns its
// error text ("invalid utf-8 sequence of n bytes from index i" or
// "incomplete utf-8 byte sequence from index i"). redis-cell aborts the
// whole Redis process on such arguments (§8); rlserver answers with the
// error Rust would have produced instead.
func utf8Error(b []byte) (string, bool) {
	for i := 0; i < len(b); {
		first := b[i]
		if first < 0x80 {
			i++
			continue
		}
		start := i
		next := func() (byte, bool) {
			i++
			if i >= len(b) {
				return 0, false
			}
			return b[i], true
		}
		bad := func(n int) (string, bool) {
			return fmt.Sprintf("invalid utf-8 sequence of %d bytes from index %d", n, start), true
		}
		incomplete := func() (string, bool) {
			return fmt.Sprintf("incomplete utf-8 byte sequence from index %d", start), true
		}
		cont := func(c byte) bool { return c >= 0x80 && c <= 0xBF }
		switch {
		case first >= 0xC2 && first <= 0xDF:
			c, ok := next()
			if !ok {
				return incomplete()
			}
			if !cont(c) {
				return bad(1)
			}
		case first >= 0xE0 && first <= 0xEF:
			c, ok := next()
			if !ok {
				return incomplete()
			}
			okSecond := (first == 0xE0 && c >= 0xA0 && c <= 0xBF) ||
				(first >= 0xE1 && first <= 0xEC && cont(c)) ||
				(first == 0xED && c >= 0x80 && c <= 0x9F) ||
				(first >= 0xEE && cont(c))
			if !okSecond {
				return bad(1)
			}
			if c, ok = next(); !ok {
				return incomplete()
			} else if !cont(c) {
				return bad(2)
			}
		case first >= 0xF0 && first <= 0xF4:
			c, ok := next()
			if !ok {
				return incomplete()
			}
			okSecond := (first == 0xF0 && c >= 0x90 && c <= 0xBF) ||
				(first >= 0xF1 && first <= 0xF3 && cont(c)) ||
				(first == 0xF4 && c >= 0x80 && c <= 0x8F)
			if !okSecond {
				return bad(1)
			}
			if c, ok = next(); !ok {
				return incomplete()
			} else if !cont(c) {
				return bad(2)
			}
			if c, ok = next(); !ok {
				return incomplete()
			} else if !cont(c) {
				return bad(3)
			}
		default:
			return bad(1)
		}
		i++
	}
	return "", false
}

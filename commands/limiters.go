package commands

import (
	"github.com/rlserver/rlserver/clock"
	"github.com/rlserver/rlserver/engine"
	"github.com/rlserver/rlserver/internal/ascii"
)

// limiter returns the handler of an RL.* command: RL.FIXED, RL.LOG and
// RL.SLIDE take key limit window [COST n]; RL.BUCKET takes key capacity
// rate period [COST n]; RL.ACQUIRE takes key limit lease [COST n] and
// adds the lease's token to its reply. RL.BUCKET, RL.LOG and RL.FIXED
// also take RESERVE maxwait (docs/reservations.md), which adds the wait
// and the ticket to the reply.
func limiter(kind engine.Kind) func(*Ctx) {
	return func(x *Ctx) {
		p, wait, reserve, err := parseLimitArgs(kind, x.Args)
		if err != nil {
			x.Error(err)
			return
		}
		var r engine.Result
		if reserve {
			r, err = x.Store.Reserve(kind, x.Args[1], p, wait, x.Now)
		} else {
			r, err = x.Store.Limit(kind, x.Args[1], p, x.Now)
		}
		if err != nil {
			x.Error(err)
			return
		}
		x.Decide(Decision{Kind: kind, Limited: r.Limited, Peek: p.Cost == 0})
		if kind == engine.KindLease {
			writeLeaseReply(x.W, r)
			return
		}
		if reserve {
			writeReserveReply(x.W, r)
			return
		}
		retry, reset := r.Millis()
		writeLimitReply(x.W, r.Limited, r.Limit, r.Remaining, retry, reset)
	}
}

// parseLimitArgs parses an RL.* limiter's arguments; reserve reports a
// RESERVE option, wait its maxwait in ns (0: the plain command).
func parseLimitArgs(kind engine.Kind, args [][]byte) (p engine.Params, wait int64, reserve bool, err error) {
	p = engine.Params{Cost: 1}
	var ok bool
	if p.Limit, ok = parseInt64(args[2]); !ok {
		return p, 0, false, ErrNotInteger
	}
	if p.Limit < 0 {
		return p, 0, false, ErrNotPositive
	}
	rest := args[3:]
	if kind == engine.KindBucket {
		if p.Rate, ok = parseInt64(args[3]); !ok {
			return p, 0, false, ErrNotInteger
		}
		if p.Rate <= 0 {
			return p, 0, false, ErrNotPositive
		}
		rest = args[4:]
	}
	w, err := clock.ParsePeriod(rest[0])
	if err != nil {
		return p, 0, false, ErrPeriod(rest[0])
	}
	p.Window = w
	rest = rest[1:]
	for len(rest) > 0 {
		if len(rest) < 2 {
			return p, 0, false, ErrSyntax
		}
		switch {
		case ascii.EqualFold(rest[0], "COST"):
			if p.Cost, ok = parseInt64(rest[1]); !ok {
				return p, 0, false, ErrNotInteger
			}
			if p.Cost < 0 {
				return p, 0, false, ErrNotPositive
			}
		case ascii.EqualFold(rest[0], "RESERVE") && kind != engine.KindLease:
			if kind == engine.KindSlide {
				return p, 0, false, ErrSlideReserve
			}
			if wait, err = parseMaxWait(rest[1]); err != nil {
				return p, 0, false, err
			}
			reserve = true
		default:
			return p, 0, false, ErrSyntax
		}
		rest = rest[2:]
	}
	return p, wait, reserve, nil
}

// parseMaxWait parses RESERVE's maxwait: an RL.* duration, or 0 (the
// plain command).
func parseMaxWait(b []byte) (int64, error) {
	if string(b) == "0" {
		return 0, nil
	}
	w, err := clock.ParsePeriod(b)
	if err != nil {
		return 0, ErrMaxWait(b)
	}
	return w, nil
}

// writeReserveReply writes a reservation's reply: the five limiter
// integers, the wait in ms (rounded up: act after it; -1 when refused)
// and the ticket (nil when none).
func writeReserveReply(w Writer, r engine.Result) {
	retry, reset := r.Millis()
	w.Array(7)
	writeLimitFields(w, r.Limited, r.Limit, r.Remaining, retry, reset)
	writeWaitTicket(w, r.Limited, r.Wait, r.Token)
}

// writeWaitTicket writes a reservation reply's last two elements (RL.*
// and RL.ALL): the wait in ms, rounded up (act after it), -1 when
// refused; the ticket, nil when none.
func writeWaitTicket(w Writer, limited bool, wait, ticket int64) {
	if limited {
		w.Int(-1)
	} else {
		w.Int(engine.CeilMs(wait))
	}
	if ticket == 0 {
		w.Null()
	} else {
		w.Int(ticket)
	}
}

// cmdCancel is RL.CANCEL key ticket: the units a reservation gives back.
func cmdCancel(x *Ctx) {
	t, ok := parseInt64(x.Args[2])
	if !ok {
		x.Error(ErrNotInteger)
		return
	}
	n, err := x.Store.Cancel(x.Args[1], t, x.Now)
	if err != nil {
		x.Error(err)
		return
	}
	x.W.Int(n)
}

// limiterPeek reports whether an RL.* call asks for cost 0: its last COST
// (the one that counts) is 0. Other arguments are checked when it runs.
func limiterPeek(args [][]byte) bool {
	for i := len(args) - 2; i >= 2; i-- {
		if ascii.EqualFold(args[i], "COST") {
			v, ok := parseInt64(args[i+1])
			return ok && v == 0
		}
	}
	return false
}

// throttlePeek reports whether a CL.THROTTLE call asks for quantity 0.
func throttlePeek(args [][]byte) bool {
	if len(args) != 6 {
		return false
	}
	v, ok := parseInt64(args[5])
	return ok && v == 0
}

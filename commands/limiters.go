package commands

import (
	"strings"

	"github.com/rlserver/rlserver/clock"
	"github.com/rlserver/rlserver/engine"
)

// limiter returns the handler of an RL.* command: RL.FIXED, RL.LOG and
// RL.SLIDE take key limit window [COST n]; RL.BUCKET takes key capacity
// rate period [COST n]; RL.ACQUIRE takes key limit lease [COST n] and
// adds the lease's token to its reply.
func limiter(kind engine.Kind) func(*Ctx) {
	return func(x *Ctx) {
		p, err := parseLimitArgs(kind, x.Args)
		if err != nil {
			x.Error(err)
			return
		}
		r, err := x.Store.Limit(kind, x.Args[1], p, x.Now)
		if err != nil {
			x.Error(err)
			return
		}
		x.Decide(Decision{Kind: kind, Limited: r.Limited, Peek: p.Cost == 0})
		if kind == engine.KindLease {
			writeLeaseReply(x.W, r)
			return
		}
		retry, reset := r.Millis()
		writeLimitReply(x.W, r.Limited, r.Limit, r.Remaining, retry, reset)
	}
}

func parseLimitArgs(kind engine.Kind, args [][]byte) (engine.Params, error) {
	p := engine.Params{Cost: 1}
	var ok bool
	if p.Limit, ok = parseInt64(args[2]); !ok {
		return p, ErrNotInteger
	}
	if p.Limit < 0 {
		return p, ErrNotPositive
	}
	rest := args[3:]
	if kind == engine.KindBucket {
		if p.Rate, ok = parseInt64(args[3]); !ok {
			return p, ErrNotInteger
		}
		if p.Rate <= 0 {
			return p, ErrNotPositive
		}
		rest = args[4:]
	}
	w, err := clock.ParsePeriod(rest[0])
	if err != nil {
		return p, ErrPeriod(rest[0])
	}
	p.Window = w
	rest = rest[1:]
	for len(rest) > 0 {
		if len(rest) < 2 || !strings.EqualFold(string(rest[0]), "COST") {
			return p, ErrSyntax
		}
		if p.Cost, ok = parseInt64(rest[1]); !ok {
			return p, ErrNotInteger
		}
		if p.Cost < 0 {
			return p, ErrNotPositive
		}
		rest = rest[2:]
	}
	return p, nil
}

// limiterPeek reports whether an RL.* call asks for cost 0: its last COST
// (the one that counts) is 0. Other arguments are checked when it runs.
func limiterPeek(args [][]byte) bool {
	for i := len(args) - 2; i >= 2; i-- {
		if strings.EqualFold(string(args[i]), "COST") {
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

package commands

import (
	"github.com/rlserver/rlserver/clock"
	"github.com/rlserver/rlserver/engine"
	"github.com/rlserver/rlserver/internal/ascii"
)

// Concurrency limits: leases on the server clock, with fencing tokens
// (docs/leases.md; the engine's rules are in engine/lease.go).
//
//	RL.ACQUIRE key limit lease [COST n]  -> [limited, limit, remaining, retry_after_ms, reset_after_ms, token]
//	RL.RELEASE key token|ANY             -> 1 released, 0 unknown or already ended
//	RL.RENEW   key token lease           -> ms left, -2 if the lease is gone
//	RL.LEASES  key                       -> [[token, ms_left, cost]...], in token order

// writeLeaseReply writes an acquisition's reply: an RL.* reply and the
// token, nil when none was issued (refused, or cost 0). RL.ACQUIRE is an
// RL.* limiter (limiter, with RL.FIXED's arguments, the lease's term in
// the window's place) that replies so.
func writeLeaseReply(w Writer, r engine.Result) {
	retry, reset := r.Millis()
	w.Array(6)
	writeLimitFields(w, r.Limited, r.Limit, r.Remaining, retry, reset)
	if r.Token == 0 {
		w.Null()
	} else {
		w.Int(r.Token)
	}
}

// cmdRelease is RL.RELEASE key token|ANY.
func cmdRelease(x *Ctx) {
	token, ok := parseInt64(x.Args[2])
	anyLease := !ok && ascii.EqualFold(x.Args[2], "ANY")
	if !ok && !anyLease {
		x.Error(ErrNotInteger)
		return
	}
	released, err := x.Store.Release(x.Args[1], token, anyLease, x.Now)
	if err != nil {
		x.Error(err)
		return
	}
	if released {
		x.W.Int(1)
	} else {
		x.W.Int(0)
	}
}

// cmdRenew is RL.RENEW key token lease.
func cmdRenew(x *Ctx) {
	token, ok := parseInt64(x.Args[2])
	if !ok {
		x.Error(ErrNotInteger)
		return
	}
	term, err := clock.ParsePeriod(x.Args[3])
	if err != nil {
		x.Error(ErrPeriod(x.Args[3]))
		return
	}
	left, ok, err := x.Store.Renew(x.Args[1], token, term, x.Now)
	switch {
	case err != nil:
		x.Error(err)
	case !ok:
		x.W.Int(-2)
	default:
		x.W.Int(engine.CeilMs(left))
	}
}

// cmdLeases is RL.LEASES key.
func cmdLeases(x *Ctx) {
	ls, err := x.Store.Leases(x.Args[1], x.Now, nil)
	if err != nil {
		x.Error(err)
		return
	}
	x.W.Array(len(ls))
	for _, l := range ls {
		x.W.Array(3)
		x.W.Int(l.Token)
		x.W.Int(engine.CeilMs(l.Left))
		x.W.Int(l.Cost)
	}
}

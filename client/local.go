package client

import (
	"context"
	"sync"
	"time"

	"github.com/rlserver/rlserver/engine"
)

// Local decides in this process with rlserver's own engine: the same
// algorithms and the same answers as rlserver's, for one process's
// requests only. httplimit falls back to it while rlserver cannot be
// reached, so an API is never unprotected. Expired keys are swept on
// the way, once a second at most. Safe for concurrent use.
type Local struct {
	e   *engine.Engine
	now func() int64 // Unix ns

	mu    sync.Mutex
	swept int64 // when expired keys were last swept

	sleep func(context.Context, time.Duration) error // Wait's; nil: a timer
}

// NewLocal returns an empty in-process limiter on the wall clock.
func NewLocal() *Local {
	return &Local{e: engine.New(16), now: func() int64 { return time.Now().UnixNano() }}
}

var kinds = [...]engine.Kind{GCRA: engine.KindThrottle, Fixed: engine.KindFixed, Log: engine.KindLog, Slide: engine.KindSlide, Bucket: engine.KindBucket, Concurrency: engine.KindLease}

// Allow is Limiter.Allow, decided here.
func (l *Local) Allow(_ context.Context, key string, p Policy, cost int64) (Result, error) {
	if _, _, err := p.args(key, cost); err != nil {
		return Result{}, err
	}
	now := l.now()
	l.sweep(now)
	st := l.e.Store()
	if p.Algorithm == GCRA {
		g, err := engine.NewGCRA(p.Limit-1, p.Rate, int64(p.Period/time.Second))
		if err != nil {
			return Result{}, err
		}
		r, err := st.Throttle([]byte(key), g, cost, now)
		if err != nil {
			return Result{}, err
		}
		return fromReply(r.Limited, r.Limit, r.Remaining, r.RetryAfter, r.ResetAfter, time.Second), nil
	}
	r, err := st.Limit(kinds[p.Algorithm], []byte(key), engine.Params{Limit: p.Limit, Window: int64(p.Period), Rate: p.Rate, Cost: cost}, now)
	if err != nil {
		return Result{}, err
	}
	retry, reset := r.Millis()
	res := fromReply(r.Limited, r.Limit, r.Remaining, retry, reset, time.Millisecond)
	res.Token = r.Token
	return res, nil
}

// Peek is Allow with cost 0.
func (l *Local) Peek(ctx context.Context, key string, p Policy) (Result, error) {
	return l.Allow(ctx, key, p, 0)
}

// sweep drops expired keys, at most once a second.
func (l *Local) sweep(now int64) {
	l.mu.Lock()
	due := now-l.swept >= int64(time.Second)
	if due {
		l.swept = now
	}
	l.mu.Unlock()
	if due {
		l.e.Sweep(now)
	}
}

// fromReply is a limiter's reply as a Result: times in unit, a retry of
// -1 (admitted) as 0.
func fromReply(limited bool, limit, remaining, retry, reset int64, unit time.Duration) Result {
	r := Result{Allowed: !limited, Limit: limit, Remaining: remaining, ResetAfter: time.Duration(reset) * unit}
	if retry > 0 {
		r.RetryAfter = time.Duration(retry) * unit
	}
	return r
}

// NewLocalAt is NewLocal on the clock now (Unix ns), for tests.
func NewLocalAt(now func() int64) *Local {
	return &Local{e: engine.New(16), now: now}
}

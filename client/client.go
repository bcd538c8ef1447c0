// Package client is a typed Go client for rlserver's limiters, on
// go-redis: a Policy says which limiter and how much, and Allow asks
// rlserver whether a request may pass (docs/algorithms.md,
// docs/cl-throttle.md). It takes any redis.UniversalClient, so a single
// node, a Sentinel failover client and a cluster client all work.
//
//	lim := client.New(rdb)
//	res, err := lim.Allow(ctx, "user:42", client.Policy{Algorithm: client.Slide, Limit: 5, Period: time.Minute}, 1)
//	if err == nil && !res.Allowed { /* 429, retry after res.RetryAfter */ }
package client

import (
	"context"
	"errors"
	"fmt"
	"strconv"
	"time"

	"github.com/redis/go-redis/v9"
)

// Algorithm is one of rlserver's limiters.
type Algorithm int

const (
	// GCRA is CL.THROTTLE, redis-cell's generic cell rate algorithm:
	// Limit requests at once, refilled at Rate per Period.
	GCRA Algorithm = iota
	// Fixed is RL.FIXED: Limit per fixed window of Period.
	Fixed
	// Log is RL.LOG: Limit per sliding window of Period, exact.
	Log
	// Slide is RL.SLIDE: Limit per sliding window of Period, weighted
	// over two fixed windows.
	Slide
	// Bucket is RL.BUCKET: a token bucket of capacity Limit, refilled at
	// Rate per Period.
	Bucket
	// Concurrency is RL.ACQUIRE: at most Limit requests in flight, each
	// holding a lease that ends Period after it was taken unless
	// released or renewed first (Acquire, Release, Renew, Hold).
	Concurrency
)

var names = [...]string{"CL.THROTTLE", "RL.FIXED", "RL.LOG", "RL.SLIDE", "RL.BUCKET", "RL.ACQUIRE"}

// String is the algorithm's command.
func (a Algorithm) String() string {
	if a < 0 || int(a) >= len(names) {
		return "Algorithm(" + strconv.Itoa(int(a)) + ")"
	}
	return names[a]
}

// Policy is a limit: which algorithm, how many, per how long.
type Policy struct {
	Algorithm Algorithm
	// Limit is how many requests a key may make in a window (Fixed, Log,
	// Slide), or at once (GCRA's burst, Bucket's capacity), or have in
	// flight (Concurrency).
	Limit int64
	// Rate is how many are refilled per Period (GCRA, Bucket).
	Rate int64
	// Period is the window, or the refill period, or a lease's term.
	// CL.THROTTLE takes whole seconds; RL.* whole milliseconds.
	Period time.Duration
}

// Result is rlserver's answer.
type Result struct {
	Allowed   bool
	Limit     int64 // the policy's limit as rlserver reports it
	Remaining int64 // requests of cost 1 that would pass now, one after the other
	// RetryAfter is how long until a request refused now would pass (0
	// when allowed); ResetAfter how long until the key is back to its
	// full allowance.
	RetryAfter, ResetAfter time.Duration
	// Token is the fencing token of the lease a Concurrency limit gave
	// (0 if none): release or renew with it, and hand it to a resource
	// that refuses a holder whose token is below one it has seen.
	Token int64
	// Wait is how long a reservation granted (Reserve) waits before it
	// may act, rounded up to a ms (0: now); Ticket gives it back before
	// then (Cancel), 0 when it acts now.
	Wait   time.Duration
	Ticket int64
}

// ErrPolicy: a policy rlserver cannot take.
var ErrPolicy = errors.New("client: invalid policy")

// ErrReply: rlserver's reply is not a limiter's five integers.
var ErrReply = errors.New("client: unexpected reply")

// Limiter asks rlserver for decisions. Safe for concurrent use.
type Limiter struct {
	rdb   redis.UniversalClient
	sleep func(context.Context, time.Duration) error // Wait's; nil: a timer
}

// New returns a Limiter on rdb.
func New(rdb redis.UniversalClient) *Limiter { return &Limiter{rdb: rdb} }

// Allow asks whether a request of cost units under policy p may pass for
// key, and spends them if so.
func (l *Limiter) Allow(ctx context.Context, key string, p Policy, cost int64) (Result, error) {
	args, unit, err := p.args(key, cost)
	if err != nil {
		return Result{}, err
	}
	v, err := l.rdb.Do(ctx, args...).Slice()
	if err != nil {
		return Result{}, err
	}
	return parse(v, unit)
}

// Peek is Allow with cost 0: the key's state, changing nothing.
func (l *Limiter) Peek(ctx context.Context, key string, p Policy) (Result, error) {
	return l.Allow(ctx, key, p, 0)
}

// args builds the command, and the unit of its times.
func (p Policy) args(key string, cost int64) ([]any, time.Duration, error) {
	switch {
	case p.Limit < 0 || cost < 0 || p.Period <= 0:
		return nil, 0, fmt.Errorf("%w: limit %d, cost %d, period %v", ErrPolicy, p.Limit, cost, p.Period)
	case (p.Algorithm == GCRA || p.Algorithm == Bucket) && p.Rate < 1:
		return nil, 0, fmt.Errorf("%w: %v needs a rate of at least 1", ErrPolicy, p.Algorithm)
	}
	switch p.Algorithm {
	case GCRA:
		if p.Period%time.Second != 0 || p.Limit < 1 {
			return nil, 0, fmt.Errorf("%w: CL.THROTTLE takes whole seconds and a limit of at least 1", ErrPolicy)
		}
		// max_burst is the burst beyond the first request.
		return []any{"CL.THROTTLE", key, p.Limit - 1, p.Rate, int64(p.Period / time.Second), cost}, time.Second, nil
	case Fixed, Log, Slide, Concurrency:
		return []any{names[p.Algorithm], key, p.Limit, window(p.Period), "COST", cost}, time.Millisecond, nil
	case Bucket:
		return []any{"RL.BUCKET", key, p.Limit, p.Rate, window(p.Period), "COST", cost}, time.Millisecond, nil
	}
	return nil, 0, fmt.Errorf("%w: %v", ErrPolicy, p.Algorithm)
}

// window is a period as RL.* takes it: whole seconds as a number (no
// formatting), anything else in milliseconds.
func window(d time.Duration) any {
	if d%time.Second == 0 {
		return int64(d / time.Second)
	}
	return strconv.FormatInt(int64(d/time.Millisecond), 10) + "ms"
}

// parse reads [limited, limit, remaining, retry_after, reset_after] in
// unit, and a lease's token after them (an integer or nil), without
// allocating.
func parse(v []any, unit time.Duration) (Result, error) {
	if len(v) != 5 && len(v) != 6 {
		return Result{}, fmt.Errorf("%w: %d elements", ErrReply, len(v))
	}
	var token int64
	if len(v) == 6 {
		if t, ok := v[5].(int64); ok {
			token = t
		} else if v[5] != nil {
			return Result{}, fmt.Errorf("%w: token is %T", ErrReply, v[5])
		}
		v = v[:5]
	}
	var n [5]int64
	for i, e := range v {
		x, ok := e.(int64)
		if !ok {
			return Result{}, fmt.Errorf("%w: element %d is %T", ErrReply, i, e)
		}
		n[i] = x
	}
	r := fromReply(n[0] != 0, n[1], n[2], n[3], n[4], unit)
	r.Token = token
	return r, nil
}

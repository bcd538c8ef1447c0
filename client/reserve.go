package client

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/rlserver/rlserver/engine"
)

// Reservations: a Bucket, Log or Fixed policy's request that may wait its
// turn instead of being refused (RESERVE; docs/reservations.md). rlserver
// grants it a time to act, first come first served, and charges it then:
// the limit holds however many wait. Wait reserves and sleeps; a caller
// that gives up (its context ends) gives the reservation back.
//
//	if err := lim.Wait(ctx, "crawler:example.com", client.Policy{Algorithm: client.Bucket, Limit: 1, Rate: 2, Period: time.Second}, 1); err != nil {
//		return err // the context ended, or its deadline comes before our turn
//	}
//	fetch()

// Reserver is what Wait needs: Limiter and Local both are.
type Reserver interface {
	Reserve(ctx context.Context, key string, p Policy, cost int64, maxWait time.Duration) (Result, error)
	Cancel(ctx context.Context, key string, ticket int64) (int64, error)
}

// ErrTooLong: Wait's turn would come after its context's deadline, or
// never (a cost above the limit). Nothing was reserved.
var ErrTooLong = errors.New("client: the wait would pass the deadline")

// maxReserve is the longest wait RESERVE takes (3650 days).
const maxReserve = 3650 * 24 * time.Hour

// Reserve asks for cost units of key under p (Bucket, Log or Fixed),
// waiting up to maxWait (whole ms; 0: the plain command). Granted,
// Result.Allowed is true, Result.Wait says how long until the request
// may act (0: now) and Result.Ticket gives it back before then (Cancel).
// Refused, Result.RetryAfter says when the same call would be granted (0:
// never).
func (l *Limiter) Reserve(ctx context.Context, key string, p Policy, cost int64, maxWait time.Duration) (Result, error) {
	args, unit, err := p.reserveArgs(key, cost, maxWait)
	if err != nil {
		return Result{}, err
	}
	v, err := l.rdb.Do(ctx, args...).Slice()
	if err != nil {
		return Result{}, err
	}
	return parseReserve(v, unit)
}

// Cancel gives back key's reservation ticket (RL.CANCEL) and returns the
// units given back: 0 once it has acted, was given back already, or for
// a ticket that is not one.
func (l *Limiter) Cancel(ctx context.Context, key string, ticket int64) (int64, error) {
	return l.rdb.Do(ctx, "RL.CANCEL", key, ticket).Int64()
}

// Wait reserves n units of key under p and sleeps until they may be
// used; it waits at most until ctx's deadline (a turn after it is
// ErrTooLong, at once). If ctx ends while sleeping, the reservation is
// given back and ctx's error returned. A fixed window reserves in its
// next window at most: past that, ErrTooLong too.
func (l *Limiter) Wait(ctx context.Context, key string, p Policy, n int64) error {
	return wait(ctx, l, l.sleep, key, p, n)
}

// WithSleep makes Wait sleep with fn instead of a timer (tests on a
// manual clock) and returns l.
func (l *Limiter) WithSleep(fn func(ctx context.Context, d time.Duration) error) *Limiter {
	l.sleep = fn
	return l
}

// Reserve is Limiter.Reserve, decided here.
func (l *Local) Reserve(_ context.Context, key string, p Policy, cost int64, maxWait time.Duration) (Result, error) {
	if _, _, err := p.reserveArgs(key, cost, maxWait); err != nil {
		return Result{}, err
	}
	now := l.now()
	l.sweep(now)
	ep := engine.Params{Limit: p.Limit, Window: int64(p.Period), Rate: p.Rate, Cost: cost}
	r, err := l.e.Store().Reserve(kinds[p.Algorithm], []byte(key), ep, int64(min(maxWait, maxReserve).Truncate(time.Millisecond)), now)
	if err != nil {
		return Result{}, err
	}
	retry, reset := r.Millis()
	res := fromReply(r.Limited, r.Limit, r.Remaining, retry, reset, time.Millisecond)
	if !r.Limited {
		res.Wait, res.Ticket = time.Duration(engine.CeilMs(r.Wait))*time.Millisecond, r.Token
	}
	return res, nil
}

// Cancel is Limiter.Cancel, decided here.
func (l *Local) Cancel(_ context.Context, key string, ticket int64) (int64, error) {
	return l.e.Store().Cancel([]byte(key), ticket, l.now())
}

// Wait is Limiter.Wait, decided here.
func (l *Local) Wait(ctx context.Context, key string, p Policy, n int64) error {
	return wait(ctx, l, l.sleep, key, p, n)
}

// WithSleep is Limiter.WithSleep.
func (l *Local) WithSleep(fn func(ctx context.Context, d time.Duration) error) *Local {
	l.sleep = fn
	return l
}

// wait is Wait on r, sleeping with sleep (nil: a timer).
func wait(ctx context.Context, r Reserver, sleep func(context.Context, time.Duration) error, key string, p Policy, n int64) error {
	if err := ctx.Err(); err != nil {
		return err
	}
	maxWait := maxReserve
	if dl, ok := ctx.Deadline(); ok {
		maxWait = min(maxWait, time.Until(dl))
	}
	res, err := r.Reserve(ctx, key, p, n, max(maxWait, 0))
	if err != nil {
		return err
	}
	if !res.Allowed {
		return fmt.Errorf("%w: %d of %s under %v", ErrTooLong, n, key, p.Algorithm)
	}
	if res.Wait == 0 {
		return nil
	}
	if sleep == nil {
		sleep = sleepTimer
	}
	if err := sleep(ctx, res.Wait); err != nil {
		if res.Ticket != 0 {
			cctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), 5*time.Second)
			r.Cancel(cctx, key, res.Ticket) // not given back: it acts, unused
			cancel()
		}
		return err
	}
	return nil
}

// sleepTimer sleeps d, or until ctx ends (its error).
func sleepTimer(ctx context.Context, d time.Duration) error {
	t := time.NewTimer(d)
	defer t.Stop()
	select {
	case <-t.C:
		return nil
	case <-ctx.Done():
		return ctx.Err()
	}
}

// reserveArgs builds a reservation's command.
func (p Policy) reserveArgs(key string, cost int64, maxWait time.Duration) ([]any, time.Duration, error) {
	if p.Algorithm != Bucket && p.Algorithm != Log && p.Algorithm != Fixed {
		return nil, 0, fmt.Errorf("%w: %v takes no reservations (Bucket, Log or Fixed do)", ErrPolicy, p.Algorithm)
	}
	if maxWait < 0 {
		return nil, 0, fmt.Errorf("%w: a wait of %v", ErrPolicy, maxWait)
	}
	args, unit, err := p.args(key, cost)
	if err != nil {
		return nil, 0, err
	}
	w := any(int64(0))
	if maxWait = min(maxWait, maxReserve).Truncate(time.Millisecond); maxWait > 0 {
		w = window(maxWait)
	}
	return append(args, "RESERVE", w), unit, nil
}

// parseReserve reads a reservation's reply: a limiter's five integers,
// the wait in ms (-1: refused) and the ticket (nil: none).
func parseReserve(v []any, unit time.Duration) (Result, error) {
	if len(v) != 7 {
		return Result{}, fmt.Errorf("%w: %d elements", ErrReply, len(v))
	}
	r, err := parse(v[:5], unit)
	if err != nil {
		return r, err
	}
	ms, ok := v[5].(int64)
	if !ok {
		return r, fmt.Errorf("%w: wait is %T", ErrReply, v[5])
	}
	if r.Allowed {
		r.Wait = time.Duration(ms) * time.Millisecond
	}
	switch t := v[6].(type) {
	case int64:
		r.Ticket = t
	case nil:
	default:
		return r, fmt.Errorf("%w: ticket is %T", ErrReply, v[6])
	}
	return r, nil
}

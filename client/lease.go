package client

import (
	"context"
	"errors"
	"fmt"
	"sync"
	"time"
)

// Leases: a Concurrency policy's Allow acquires a lease (RL.ACQUIRE);
// the holder releases it when its work ends, or renews it while the work
// runs longer than the term. A holder that dies without releasing frees
// its slot when the lease ends, on rlserver's clock (docs/leases.md).
//
//	res, err := lim.Acquire(ctx, "db:tenant42", 20, 30*time.Second, 1)
//	if err != nil || !res.Allowed { /* 429 */ }
//	h := lim.Hold(ctx, "db:tenant42", res.Token, 30*time.Second)
//	defer h.Release(context.Background())

// Leaser is what Hold needs: Limiter and Local both are.
type Leaser interface {
	Release(ctx context.Context, key string, token int64) (bool, error)
	Renew(ctx context.Context, key string, token int64, term time.Duration) (left time.Duration, ok bool, err error)
}

// Acquire takes a lease of key (RL.ACQUIRE): at most limit units in
// flight, this one of cost units, ending term from now unless released
// or renewed first. It is Allow with a Concurrency policy: Result.Allowed
// says whether it was taken, Result.Token is its fencing token.
func (l *Limiter) Acquire(ctx context.Context, key string, limit int64, term time.Duration, cost int64) (Result, error) {
	return l.Allow(ctx, key, Policy{Algorithm: Concurrency, Limit: limit, Period: term}, cost)
}

// Acquire is Limiter.Acquire, decided here.
func (l *Local) Acquire(ctx context.Context, key string, limit int64, term time.Duration, cost int64) (Result, error) {
	return l.Allow(ctx, key, Policy{Algorithm: Concurrency, Limit: limit, Period: term}, cost)
}

// Release ends key's lease with token before its term (RL.RELEASE), and
// reports whether it was still held (false: released before, or ended).
func (l *Limiter) Release(ctx context.Context, key string, token int64) (bool, error) {
	n, err := l.rdb.Do(ctx, "RL.RELEASE", key, token).Int64()
	return n == 1, err
}

// Renew makes key's lease with token end term from now (RL.RENEW), and
// returns the time it has left; ok is false if it had already ended (its
// holder lost it: the slot may be someone else's now).
func (l *Limiter) Renew(ctx context.Context, key string, token int64, term time.Duration) (time.Duration, bool, error) {
	if term < time.Millisecond {
		return 0, false, fmt.Errorf("%w: a term of %v", ErrPolicy, term)
	}
	ms, err := l.rdb.Do(ctx, "RL.RENEW", key, token, window(term)).Int64()
	if err != nil || ms < 0 {
		return 0, false, err
	}
	return time.Duration(ms) * time.Millisecond, true, nil
}

// Release is Limiter.Release, decided here.
func (l *Local) Release(_ context.Context, key string, token int64) (bool, error) {
	return l.e.Store().Release([]byte(key), token, false, l.now())
}

// Renew is Limiter.Renew, decided here.
func (l *Local) Renew(_ context.Context, key string, token int64, term time.Duration) (time.Duration, bool, error) {
	left, ok, err := l.e.Store().Renew([]byte(key), token, int64(term), l.now())
	return time.Duration(left), ok, err
}

// ErrLost: a lease Hold kept had ended before a renewal reached it.
var ErrLost = errors.New("client: lease lost")

// Held is a lease that Hold keeps alive. Safe for concurrent use.
type Held struct {
	lost chan struct{}
	stop chan struct{}
	done chan struct{}
	once sync.Once
	rel  func(context.Context) (bool, error)
	err  error // why it was lost (ErrLost or the last renewal's error)
}

// Hold renews key's lease with token every third of term, so that it
// lives while the work does, until Release, ctx's end, or a renewal that
// finds it gone (Lost is then closed). A renewal that fails (rlserver
// unreachable) is tried again at the next third: the lease still has two
// thirds of its term.
func Hold(ctx context.Context, lr Leaser, key string, token int64, term time.Duration) *Held {
	h := &Held{lost: make(chan struct{}), stop: make(chan struct{}), done: make(chan struct{}),
		rel: func(ctx context.Context) (bool, error) { return lr.Release(ctx, key, token) }}
	go func() {
		defer close(h.done)
		t := time.NewTicker(max(term/3, time.Millisecond))
		defer t.Stop()
		for {
			select {
			case <-ctx.Done():
				return
			case <-h.stop:
				return
			case <-t.C:
			}
			_, ok, err := lr.Renew(ctx, key, token, term)
			if err == nil && !ok {
				h.err = ErrLost
				close(h.lost)
				return
			}
		}
	}()
	return h
}

// Hold is the package's Hold on l.
func (l *Limiter) Hold(ctx context.Context, key string, token int64, term time.Duration) *Held {
	return Hold(ctx, l, key, token, term)
}

// Lost is closed when a renewal found the lease ended: the work should
// stop, as another holder may have the slot.
func (h *Held) Lost() <-chan struct{} { return h.lost }

// Err is ErrLost once Lost is closed, else nil.
func (h *Held) Err() error {
	select {
	case <-h.lost:
		return h.err
	default:
		return nil
	}
}

// Release stops the renewals and releases the lease (once; later calls
// do nothing), reporting whether it was still held.
func (h *Held) Release(ctx context.Context) (released bool, err error) {
	h.once.Do(func() {
		close(h.stop)
		<-h.done
		released, err = h.rel(ctx)
	})
	return released, err
}

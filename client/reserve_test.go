package client_test

import (
	"context"
	"errors"
	"fmt"
	"math/rand/v2"
	"slices"
	"strconv"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/rlserver/rlserver/client"
	"github.com/rlserver/rlserver/internal/rltest"
	"github.com/stretchr/testify/require"
)

// act is a unit of work done at a time (Unix ns).
type act struct{ at, cost int64 }

// overRate returns a description of the first window in which acts (any
// order) exceed p, "" if none: a bucket passes at most Limit + Rate per
// Period of elapsed time in any closed interval, a log at most Limit in
// any window (t - Period, t], a fixed window at most Limit in each
// window [k*Period, (k+1)*Period). It knows nothing of rlserver.
func overRate(p client.Policy, acts []act) string {
	acts = slices.Clone(acts)
	slices.SortFunc(acts, func(a, b act) int { return int(a.at - b.at) })
	per := int64(p.Period)
	for i := range acts {
		sum := int64(0)
		for j := i; j < len(acts); j++ {
			sum += acts[j].cost
			a, b := acts[i].at, acts[j].at
			var bound int64
			switch p.Algorithm {
			case client.Bucket:
				bound = p.Limit + (b-a)*p.Rate/per
			case client.Log:
				if b-a >= per {
					bound = 1 << 62 // not one window
				} else {
					bound = p.Limit
				}
			case client.Fixed:
				if a/per != b/per {
					bound = 1 << 62
				} else {
					bound = p.Limit
				}
			}
			if sum > bound {
				return fmt.Sprintf("%d units in [%d, %d], at most %d", sum, a, b, bound)
			}
		}
	}
	return ""
}

// TestWaitNeverExceedsTheRate: 200 goroutines at once call Wait, three
// times over (the clock moved between), on rlserver and on a Local, for
// a bucket, a log and a fixed window. Every call returns, and the times the calls were told to act
// at, logged by the test, never exceed the rate in any window. The clock
// stands still during a burst and sleeping takes no time: what is checked
// is the schedule granted.
func TestWaitNeverExceedsTheRate(t *testing.T) {
	require.NotEmpty(t, overRate(client.Policy{Algorithm: client.Bucket, Limit: 2, Rate: 1, Period: time.Second},
		[]act{{0, 1}, {0, 1}, {int64(time.Second) - 1, 1}}), "the check finds a schedule over the rate")
	policies := []client.Policy{
		{Algorithm: client.Bucket, Limit: 5, Rate: 10, Period: time.Second},
		{Algorithm: client.Log, Limit: 7, Period: 300 * time.Millisecond},
		// A fixed window reserves in its next window at most: 200 callers
		// fit the two, and a burst comes two windows after the last.
		{Algorithm: client.Fixed, Limit: 100, Period: 400 * time.Millisecond},
	}
	for _, where := range []string{"rlserver", "local"} {
		for _, p := range policies {
			t.Run(where+"/"+p.Algorithm.String(), func(t *testing.T) {
				var now atomic.Int64
				now.Store(rltest.StartNs)
				var mu sync.Mutex
				var acts []act
				var costNow int64 // the act time of a call that waits 0 is now; its cost:
				sleep := func(ctx context.Context, d time.Duration) error {
					mu.Lock()
					acts = append(acts, act{now.Load() + int64(d), costNow})
					mu.Unlock()
					return nil
				}
				var w interface {
					Wait(context.Context, string, client.Policy, int64) error
				}
				var advance func(d time.Duration)
				if where == "rlserver" {
					lim, c, _ := newLimiter(t)
					w = lim.WithSleep(sleep)
					advance = func(d time.Duration) {
						require.Equal(t, "+OK", c.Do("DEBUG", "CLOCK", "ADVANCE", strconv.FormatInt(int64(d), 10)+"ns"))
						now.Add(int64(d))
					}
				} else {
					w = client.NewLocalAt(now.Load).WithSleep(sleep)
					advance = func(d time.Duration) { now.Add(int64(d)) }
				}
				// A call that acts now does not sleep: count it with a
				// peek of how many units were granted, at the end of the
				// burst (all acts of a burst at now are before the rest).
				total := int64(0)
				for burst := range 3 {
					advance(time.Duration(800+rand.IntN(500)) * time.Millisecond)
					mu.Lock()
					before := len(acts)
					mu.Unlock()
					var wg sync.WaitGroup
					errs := make(chan error, 200)
					for range 200 {
						wg.Go(func() {
							if err := w.Wait(context.Background(), "k", p, 1); err != nil {
								errs <- err
							}
						})
					}
					wg.Wait()
					close(errs)
					for err := range errs {
						t.Fatalf("burst %d: %v", burst, err)
					}
					mu.Lock()
					for i := before; i < len(acts); i++ {
						acts[i].cost = 1
					}
					for n := len(acts) - before; n < 200; n++ { // acted at once
						acts = append(acts, act{now.Load(), 1})
					}
					mu.Unlock()
					total += 200
				}
				require.Len(t, acts, int(total))
				require.Empty(t, overRate(p, acts), "%v", p)
			})
		}
	}
}

// TestWaitGivesBackOnCancel: a Wait whose context ends while it sleeps
// gives its reservation back; one whose deadline comes before its turn
// reserves nothing and says so at once.
func TestWaitGivesBackOnCancel(t *testing.T) {
	lim, _, _ := newLimiter(t)
	p := client.Policy{Algorithm: client.Bucket, Limit: 1, Rate: 1, Period: time.Second}
	ctx := context.Background()
	res, err := lim.Allow(ctx, "k", p, 1)
	require.NoError(t, err)
	require.True(t, res.Allowed)

	// Empty: the next unit comes in 1 s. A Wait that is cancelled while
	// it sleeps gives it back, so a call still finds it 1 s away (2 s had
	// the reservation stayed).
	cctx, cancel := context.WithCancel(ctx)
	slept := time.Duration(0)
	lim.WithSleep(func(ctx context.Context, d time.Duration) error {
		slept = d
		cancel()
		<-ctx.Done()
		return ctx.Err()
	})
	require.ErrorIs(t, lim.Wait(cctx, "k", p, 1), context.Canceled)
	require.Equal(t, time.Second, slept)
	res, err = lim.Allow(ctx, "k", p, 1)
	require.NoError(t, err)
	require.Equal(t, time.Second, res.RetryAfter, "the reservation was given back")

	// A deadline before the turn: refused at once, nothing reserved.
	dctx, dcancel := context.WithTimeout(ctx, 100*time.Millisecond)
	defer dcancel()
	lim.WithSleep(func(context.Context, time.Duration) error { t.Fatal("slept"); return nil })
	require.ErrorIs(t, lim.Wait(dctx, "k", p, 1), client.ErrTooLong)
	res, err = lim.Allow(ctx, "k", p, 1)
	require.NoError(t, err)
	require.Equal(t, time.Second, res.RetryAfter, "nothing reserved")

	// A policy that takes no reservations.
	err = lim.Wait(ctx, "s", client.Policy{Algorithm: client.Slide, Limit: 1, Period: time.Second}, 1)
	require.True(t, errors.Is(err, client.ErrPolicy), "%v", err)
}

// TestReserveAndCancel: Reserve's reply as a Result, and Cancel, on
// rlserver and on a Local (the same answers).
func TestReserveAndCancel(t *testing.T) {
	lim, _, _ := newLimiter(t)
	local := client.NewLocalAt(func() int64 { return rltest.StartNs })
	p := client.Policy{Algorithm: client.Bucket, Limit: 1, Rate: 1, Period: time.Second}
	ctx := context.Background()
	for _, r := range []interface {
		client.Reserver
	}{lim, local} {
		res, err := r.Reserve(ctx, "n", p, 1, 4*time.Second)
		require.NoError(t, err)
		require.Equal(t, client.Result{Allowed: true, Limit: 1, ResetAfter: time.Second}, res)
		for i := 1; i <= 4; i++ {
			res, err = r.Reserve(ctx, "n", p, 1, 4*time.Second)
			require.NoError(t, err)
			require.Equal(t, client.Result{Allowed: true, Limit: 1, ResetAfter: time.Duration(i+1) * time.Second,
				Wait: time.Duration(i) * time.Second, Ticket: rltest.StartNs + int64(i)*1e9}, res)
		}
		res, err = r.Reserve(ctx, "n", p, 1, 4*time.Second)
		require.NoError(t, err)
		require.Equal(t, client.Result{Allowed: false, Limit: 1, RetryAfter: time.Second, ResetAfter: 5 * time.Second}, res)
		n, err := r.Cancel(ctx, "n", rltest.StartNs+4e9)
		require.NoError(t, err)
		require.Equal(t, int64(1), n)
		n, err = r.Cancel(ctx, "n", rltest.StartNs+4e9)
		require.NoError(t, err)
		require.Zero(t, n)
	}
}

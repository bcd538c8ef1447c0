package client_test

import (
	"context"
	"fmt"
	"strconv"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"
	"github.com/rlserver/rlserver/client"
	"github.com/rlserver/rlserver/internal/rltest"
	"github.com/rlserver/rlserver/internal/testserver"
	"github.com/stretchr/testify/require"
)

// TestLeasesNeverOverAdmit: 500 goroutines contend for 20 slots, each
// until it has held one once: the first 20 holders keep theirs until all
// 20 are taken (so the slots do fill), the others hold for a moment and
// release. An independent counter of the holders in this process never
// passes 20, every slot is given back, and rlserver's lease count agrees.
func TestLeasesNeverOverAdmit(t *testing.T) {
	s := testserver.Start(t)
	rdb := redis.NewClient(&redis.Options{Addr: s.Addr.String(), PoolSize: 100})
	t.Cleanup(func() { rdb.Close() })
	lim := client.New(rdb)
	p := client.Policy{Algorithm: client.Concurrency, Limit: 20, Period: time.Minute} // the manual clock: no lease ends by itself
	var holding, most, refused atomic.Int64
	full := make(chan struct{})
	var fullOnce sync.Once
	var wg sync.WaitGroup
	errs := make(chan error, 500)
	for range 500 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			ctx := context.Background()
			for {
				r, err := lim.Allow(ctx, "pool", p, 1)
				if err != nil {
					errs <- err
					return
				}
				if !r.Allowed {
					refused.Add(1)
					time.Sleep(100 * time.Microsecond) // a back-off, not a wait for state
					continue
				}
				n := holding.Add(1)
				for m := most.Load(); n > m && !most.CompareAndSwap(m, n); m = most.Load() {
				}
				if n == 20 {
					fullOnce.Do(func() { close(full) })
				}
				select {
				case <-full:
				case <-time.After(time.Minute):
					errs <- fmt.Errorf("20 slots never held at once (%d)", holding.Load())
				}
				time.Sleep(50 * time.Microsecond) // the work: others contend meanwhile
				holding.Add(-1)
				if ok, err := lim.Release(ctx, "pool", r.Token); err != nil || !ok {
					errs <- fmt.Errorf("release %d: %v %v", r.Token, ok, err)
				}
				return
			}
		}()
	}
	wg.Wait()
	close(errs)
	for err := range errs {
		t.Fatal(err)
	}
	t.Logf("500 admitted, %d refused on the way, at most %d at once", refused.Load(), most.Load())
	require.Equal(t, int64(20), most.Load(), "at most 20 holders at once, and 20 at some point")
	c := rltest.Dial(t, s.Addr.String())
	require.Equal(t, "[]", c.Do("RL.LEASES", "pool"), "every slot given back")
	require.Equal(t, "0", c.Do("EXISTS", "pool"))
	stats := rltest.InfoFields(rltest.InfoText(t, c, "rlserver"))["leases"]
	require.Equal(t, "acquired=500,released=500,renewed=0,expired=0", stats)
}

// TestKilledHolderFreesItsSlotAtTheLeaseEnd: a holder that dies holding
// a slot (it never releases) keeps it until its lease ends, exactly: 1 ms
// before the end the slot is still taken, at the end it is free; the
// expiry is counted.
func TestKilledHolderFreesItsSlotAtTheLeaseEnd(t *testing.T) {
	lim, c, _ := newLimiter(t)
	ctx := context.Background()
	p := client.Policy{Algorithm: client.Concurrency, Limit: 1, Period: 10 * time.Second}
	r, err := lim.Acquire(ctx, "job", 1, 10*time.Second, 1)
	require.NoError(t, err)
	require.True(t, r.Allowed)
	require.Equal(t, rltest.StartNs+1, r.Token)
	// The holder is gone. Another waits as the reply says.
	r2, err := lim.Allow(ctx, "job", p, 1)
	require.NoError(t, err)
	require.False(t, r2.Allowed)
	require.Equal(t, 10*time.Second, r2.RetryAfter)
	require.Equal(t, "+OK", c.Do("DEBUG", "CLOCK", "ADVANCE", "9999ms"))
	r2, err = lim.Allow(ctx, "job", p, 1)
	require.NoError(t, err)
	require.False(t, r2.Allowed, "1 ms before the lease ends")
	require.Equal(t, time.Millisecond, r2.RetryAfter)
	require.Equal(t, "+OK", c.Do("DEBUG", "CLOCK", "ADVANCE", "1ms"))
	r2, err = lim.Allow(ctx, "job", p, 1)
	require.NoError(t, err)
	require.True(t, r2.Allowed, "at the lease's end")
	require.Greater(t, r2.Token, r.Token)
	ok, err := lim.Release(ctx, "job", r.Token)
	require.NoError(t, err)
	require.False(t, ok, "the dead holder's lease is gone")
	require.Equal(t, "acquired=2,released=0,renewed=0,expired=1", rltest.Info(t, c, "rlserver")["leases"])
}

// fakeRenewer counts renewals, and loses the lease on the nth.
type fakeRenewer struct {
	renewals atomic.Int64
	loseAt   int64
	released atomic.Bool
}

func (f *fakeRenewer) Release(context.Context, string, int64) (bool, error) {
	f.released.Store(true)
	return true, nil
}

func (f *fakeRenewer) Renew(_ context.Context, _ string, _ int64, term time.Duration) (time.Duration, bool, error) {
	if f.renewals.Add(1) == f.loseAt {
		return 0, false, nil
	}
	return term, true, nil
}

// TestHold: Hold renews until released, and reports a lease found gone.
func TestHold(t *testing.T) {
	f := &fakeRenewer{loseAt: -1}
	h := client.Hold(context.Background(), f, "k", 1, 3*time.Millisecond)
	rltest.Eventually(t, 10*time.Second, "three renewals", func() bool { return f.renewals.Load() >= 3 })
	ok, err := h.Release(context.Background())
	require.NoError(t, err)
	require.True(t, ok)
	require.True(t, f.released.Load())
	require.NoError(t, h.Err())

	f = &fakeRenewer{loseAt: 2}
	h = client.Hold(context.Background(), f, "k", 1, 3*time.Millisecond)
	select {
	case <-h.Lost():
	case <-time.After(10 * time.Second):
		t.Fatal("a lost lease was not reported")
	}
	require.ErrorIs(t, h.Err(), client.ErrLost)
	require.Equal(t, int64(2), f.renewals.Load())
}

// TestHoldOnRlserver: a lease renewed by Hold outlives its term; released,
// its slot is free at once.
func TestHoldOnRlserver(t *testing.T) {
	lim, c, _ := newLimiter(t)
	ctx := context.Background()
	p := client.Policy{Algorithm: client.Concurrency, Limit: 1, Period: 30 * time.Millisecond}
	r, err := lim.Allow(ctx, "h", p, 1)
	require.NoError(t, err)
	require.True(t, r.Allowed)
	h := lim.Hold(ctx, "h", r.Token, p.Period)
	// The manual clock moves 10 ms at a time, 6 times the term in all;
	// each step waits for a renewal after it, so the lease lives on.
	for range 18 {
		require.Equal(t, "+OK", c.Do("DEBUG", "CLOCK", "ADVANCE", "10ms"))
		before := rltest.InfoText(t, c, "rlserver")
		rltest.Eventually(t, 10*time.Second, "a renewal", func() bool { return rltest.InfoText(t, c, "rlserver") != before })
		require.Equal(t, "[["+strconv.FormatInt(r.Token, 10)+" 30 1]]", c.Do("RL.LEASES", "h"))
	}
	ok, err := h.Release(ctx)
	require.NoError(t, err)
	require.True(t, ok)
	r, err = lim.Allow(ctx, "h", p, 1)
	require.NoError(t, err)
	require.True(t, r.Allowed)
}

package client_test

import (
	"context"
	"errors"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"
	"github.com/rlserver/rlserver/client"
	"github.com/rlserver/rlserver/internal/rltest"
	"github.com/rlserver/rlserver/internal/testserver"
	"github.com/stretchr/testify/require"
)

func newLimiter(t *testing.T) (*client.Limiter, *rltest.Conn, redis.UniversalClient) {
	t.Helper()
	s := testserver.Start(t)
	rdb := redis.NewClient(&redis.Options{Addr: s.Addr.String()})
	t.Cleanup(func() { rdb.Close() })
	return client.New(rdb), rltest.Dial(t, s.Addr.String()), rdb
}

// TestAllowEveryAlgorithm: each limiter through Allow and Peek, on the
// manual clock: what it admits, what it refuses, and the times in the
// reply as durations (CL.THROTTLE's seconds, RL.*'s milliseconds).
func TestAllowEveryAlgorithm(t *testing.T) {
	lim, c, _ := newLimiter(t)
	ctx := context.Background()
	for _, tc := range []struct {
		p                 client.Policy
		admitted          int
		retry, resetAfter time.Duration // of the first refusal
	}{
		{client.Policy{Algorithm: client.GCRA, Limit: 3, Rate: 3, Period: time.Minute}, 3, 20 * time.Second, time.Minute},
		{client.Policy{Algorithm: client.Fixed, Limit: 3, Period: 10 * time.Second}, 3, 10 * time.Second, 10 * time.Second},
		{client.Policy{Algorithm: client.Log, Limit: 3, Period: 1500 * time.Millisecond}, 3, 1500 * time.Millisecond, 1500 * time.Millisecond},
		{client.Policy{Algorithm: client.Slide, Limit: 3, Period: 10 * time.Second}, 3, 0, 0},
		{client.Policy{Algorithm: client.Bucket, Limit: 3, Rate: 1, Period: time.Second}, 3, time.Second, 3 * time.Second},
	} {
		key := "k:" + tc.p.Algorithm.String()
		peek, err := lim.Peek(ctx, key, tc.p)
		require.NoError(t, err)
		require.True(t, peek.Allowed)
		require.Equal(t, int64(3), peek.Limit, "%v", tc.p.Algorithm)
		require.Equal(t, int64(3), peek.Remaining, "%v: a peek spends nothing", tc.p.Algorithm)
		for i := range tc.admitted {
			r, err := lim.Allow(ctx, key, tc.p, 1)
			require.NoError(t, err)
			require.True(t, r.Allowed, "%v request %d", tc.p.Algorithm, i)
			require.Equal(t, int64(tc.admitted-1-i), r.Remaining)
			require.Zero(t, r.RetryAfter)
		}
		r, err := lim.Allow(ctx, key, tc.p, 1)
		require.NoError(t, err)
		require.False(t, r.Allowed, "%v: over the limit", tc.p.Algorithm)
		require.Zero(t, r.Remaining)
		if tc.retry > 0 { // the windowed ones depend on where the window starts
			require.Equal(t, tc.retry, r.RetryAfter, "%v", tc.p.Algorithm)
			require.Equal(t, tc.resetAfter, r.ResetAfter, "%v", tc.p.Algorithm)
		} else {
			require.Positive(t, r.RetryAfter, "%v", tc.p.Algorithm)
		}
	}
	// Time passes: the bucket refills one token a second.
	require.Equal(t, "+OK", c.Do("DEBUG", "CLOCK", "ADVANCE", "1000"))
	r, err := lim.Allow(ctx, "k:RL.BUCKET", client.Policy{Algorithm: client.Bucket, Limit: 3, Rate: 1, Period: time.Second}, 1)
	require.NoError(t, err)
	require.True(t, r.Allowed)
}

func TestAllowErrors(t *testing.T) {
	lim, _, _ := newLimiter(t)
	ctx := context.Background()
	for _, p := range []client.Policy{
		{Algorithm: client.GCRA, Limit: 5, Rate: 5, Period: 1500 * time.Millisecond}, // not whole seconds
		{Algorithm: client.GCRA, Limit: 5, Period: time.Second},                      // no rate
		{Algorithm: client.Bucket, Limit: 5, Period: time.Second},                    // no rate
		{Algorithm: client.Fixed, Limit: 5},                                          // no period
		{Algorithm: client.Fixed, Limit: -1, Period: time.Second},
		{Algorithm: client.Algorithm(9), Limit: 1, Period: time.Second},
	} {
		_, err := lim.Allow(ctx, "k", p, 1)
		require.ErrorIs(t, err, client.ErrPolicy, "%+v", p)
	}
	// rlserver's own refusals come back as they are.
	_, err := lim.Allow(ctx, "k", client.Policy{Algorithm: client.Fixed, Limit: 5, Period: 3651 * 24 * time.Hour}, 1)
	require.Error(t, err)
	require.False(t, errors.Is(err, client.ErrPolicy))
	_, err = lim.Allow(ctx, "k", client.Policy{Algorithm: client.Fixed, Limit: 5, Period: time.Second}, 1)
	require.NoError(t, err)
	_, err = lim.Allow(ctx, "k", client.Policy{Algorithm: client.Log, Limit: 5, Period: time.Second}, 1)
	require.ErrorContains(t, err, "WRONGTYPE")
}

// TestAllowAllocatesNoMoreThanGoRedis: Allow costs what the same command
// through go-redis's Do costs (its arguments boxed into a slice, its
// reply), and nothing more: the reply is read without allocating
// (TestParseAllocatesNothing).
func TestAllowAllocatesNoMoreThanGoRedis(t *testing.T) {
	rltest.Long(t, "allocation counts over many calls")
	lim, _, rdb := newLimiter(t)
	ctx := context.Background()
	p := client.Policy{Algorithm: client.Slide, Limit: 1 << 40, Period: time.Minute}
	viaAllow := testing.AllocsPerRun(200, func() { lim.Allow(ctx, "alloc", p, 1) })
	cmd, key := "RL.SLIDE", "alloc"
	viaDo := testing.AllocsPerRun(200, func() { rdb.Do(ctx, slideArgs(cmd, key, p.Limit, 60, 1)...).Slice() })
	require.LessOrEqual(t, viaAllow, viaDo, "Allow %v allocations, Do %v", viaAllow, viaDo)
}

// slideArgs builds a command's arguments as any wrapper of Do would: a
// slice of its own (a variadic call written out at the call site can
// cost the compiler less).
//
//go:noinline
func slideArgs(cmd, key string, limit, window, cost int64) []any {
	return []any{cmd, key, limit, window, "COST", cost}
}

// TestLocalAnswersAsRlserver: the in-process limiter gives the same
// replies as rlserver for the same requests at the same instants (the
// manual clock there, a fixed clock here).
func TestLocalAnswersAsRlserver(t *testing.T) {
	lim, c, _ := newLimiter(t)
	local := client.NewLocalAt(func() int64 { return rltest.StartNs })
	ctx := context.Background()
	for _, p := range []client.Policy{
		{Algorithm: client.GCRA, Limit: 3, Rate: 3, Period: time.Minute},
		{Algorithm: client.Fixed, Limit: 3, Period: 10 * time.Second},
		{Algorithm: client.Log, Limit: 3, Period: 1500 * time.Millisecond},
		{Algorithm: client.Slide, Limit: 3, Period: 10 * time.Second},
		{Algorithm: client.Bucket, Limit: 3, Rate: 1, Period: time.Second},
	} {
		for i := range 5 {
			key := "same:" + p.Algorithm.String()
			want, err := lim.Allow(ctx, key, p, 1)
			require.NoError(t, err)
			got, err := local.Allow(ctx, key, p, 1)
			require.NoError(t, err)
			require.Equal(t, want, got, "%v request %d", p.Algorithm, i)
		}
	}
	_ = c
}

// TestAllowAll: several limits of every algorithm through AllowAll, on
// rlserver and in process (Local), call after call on the manual clock:
// the two answer exactly the same, a refused call charges nothing (its
// other limits' answers are peeks), and a guard of cost 0 is never
// charged.
func TestAllowAll(t *testing.T) {
	lim, c, _ := newLimiter(t)
	local := client.NewLocalAt(func() int64 { return rltest.StartNs })
	ctx := context.Background()
	limits := []client.Limit{
		{Key: "{t}:u:s", Policy: client.Policy{Algorithm: client.Bucket, Limit: 5, Rate: 5, Period: time.Second}, Cost: 1},
		{Key: "{t}:u:d", Policy: client.Policy{Algorithm: client.Fixed, Limit: 3, Period: time.Hour}, Cost: 1},
		{Key: "{t}:u:g", Policy: client.Policy{Algorithm: client.GCRA, Limit: 10, Rate: 10, Period: time.Minute}, Cost: 1},
		{Key: "{t}:u:l", Policy: client.Policy{Algorithm: client.Log, Limit: 10, Period: time.Minute}, Cost: 2},
		{Key: "{t}", Policy: client.Policy{Algorithm: client.Slide, Limit: 100, Period: time.Minute}, Cost: 0},
	}
	var allowed int
	for i := range 5 {
		want, err := lim.AllowAll(ctx, limits)
		require.NoError(t, err)
		got, err := local.AllowAll(ctx, limits)
		require.NoError(t, err)
		require.Equal(t, want, got, "call %d", i)
		if want.Allowed {
			allowed++
			require.Equal(t, int64(3-allowed), want.Remaining, "call %d: the day's limit has the fewest calls left", i)
			require.Equal(t, 1, want.Index)
		} else {
			require.Equal(t, 1, want.Index, "call %d: the day's limit refuses", i)
			require.Equal(t, want.Each[1].RetryAfter, want.RetryAfter)
			require.True(t, want.Each[0].Allowed, "call %d: the bucket's peek", i)
		}
	}
	require.Equal(t, 3, allowed)
	require.Equal(t, "[0 5 2 -1 600]", c.Do("RL.BUCKET", "{t}:u:s", "5", "5", "1s", "COST", "0"), "charged by the three allowed calls only")
	require.Equal(t, "0", c.Do("EXISTS", "{t}"), "the guard was never charged")
	_, err := lim.AllowAll(ctx, nil)
	require.ErrorIs(t, err, client.ErrPolicy)
	_, err = local.AllowAll(ctx, []client.Limit{{Key: "x", Policy: client.Policy{Algorithm: client.Fixed, Limit: 1}}})
	require.ErrorIs(t, err, client.ErrPolicy)
}

package server_test

import (
	"context"
	"testing"
	"time"

	"github.com/redis/rueidis"
	"github.com/rlserver/rlserver/internal/rltest"
	"github.com/rlserver/rlserver/internal/testserver"
	"github.com/stretchr/testify/require"
)

// TestRueidisClientSideCaching: rueidis, with its defaults (RESP3 and
// client-side caching in OPTIN mode), connects, serves a read from its
// cache once it has it, and drops it when another connection changes the
// key: a SET, and a CL.THROTTLE that charges the key (GET reads its TAT).
func TestRueidisClientSideCaching(t *testing.T) {
	s := testserver.Start(t)
	c, err := rueidis.NewClient(rueidis.ClientOption{InitAddress: []string{s.Addr.String()}, DisableRetry: true})
	require.NoError(t, err)
	defer c.Close()
	ctx := context.Background()
	other := rltest.Dial(t, s.Addr.String())

	get := func() (string, bool) {
		t.Helper()
		r := c.DoCache(ctx, c.B().Get().Key("k").Cache(), time.Minute)
		v, err := r.ToString()
		require.NoError(t, err)
		return v, r.IsCacheHit()
	}
	// Each value: read from the server, then from the cache, until a
	// change from elsewhere drops it and the next read sees the change.
	for _, change := range [][]string{
		{"SET", "k", "123"},
		{"SET", "k", "456"},
		{"CL.THROTTLE", "k", "10", "1", "60"},
	} {
		require.NotEqual(t, "-", other.Do(change...)[:1], change)
		want := other.Do("GET", "k")
		var v string
		rltest.WaitFor(t, 10*time.Second, "rueidis to read "+want, func() (bool, string) {
			v, _ = get()
			return `"`+v+`"` == want, v
		})
		v, hit := get()
		require.True(t, hit, "%q: the second read from the cache", change)
		require.Equal(t, want, `"`+v+`"`)
	}
	n, err := c.Do(ctx, c.B().Arbitrary("CL.THROTTLE").Keys("u").Args("1", "1", "60").Build()).AsIntSlice()
	require.NoError(t, err)
	require.Equal(t, []int64{0, 2, 1, -1, 60}, n)
}

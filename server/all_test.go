package server_test

import (
	"context"
	"strconv"
	"sync"
	"sync/atomic"
	"testing"

	"github.com/redis/go-redis/v9"
	"github.com/rlserver/rlserver/internal/rltest"
	"github.com/rlserver/rlserver/internal/testserver"
	"github.com/rlserver/rlserver/server"
	"github.com/stretchr/testify/require"
)

// TestAllEndToEnd: RL.ALL over RESP2 and RESP3 with go-redis, inside
// MULTI/EXEC, under a user whose key patterns must cover every key, and
// as INFO, Prometheus, SLOWLOG and RL.TOP see it (each group its own decision;
// a rejected call counts only its rejecting group).
func TestAllEndToEnd(t *testing.T) {
	s := testserver.Start(t, func(o *server.Options) { o.Config.MetricsAddr = "127.0.0.1:0" })
	ctx := context.Background()
	for _, proto := range []int{2, 3} {
		rdb := redis.NewClient(&redis.Options{Addr: s.Addr.String(), Protocol: proto})
		t.Cleanup(func() { rdb.Close() })
		k := "p" + strconv.Itoa(proto)
		v, err := rdb.Do(ctx, "RL.ALL", k+":u", "FIXED", 1, "1m", "AND", k+":t", "BUCKET", 5, 1, "1s").Slice()
		require.NoError(t, err)
		require.Equal(t, []any{int64(0), int64(1), int64(0), int64(-1), int64(40000), int64(1),
			[]any{[]any{int64(0), int64(1), int64(0), int64(-1), int64(40000)}, []any{int64(0), int64(5), int64(4), int64(-1), int64(1000)}}}, v, "RESP%d", proto)
		v, err = rdb.Do(ctx, "RL.ALL", k+":u", "FIXED", 1, "1m", "AND", k+":t", "BUCKET", 5, 1, "1s").Slice()
		require.NoError(t, err)
		require.Equal(t, int64(1), v[0], "RESP%d: limited", proto)
		require.Equal(t, []any{int64(0), int64(5), int64(4), int64(-1), int64(1000)}, v[6].([]any)[1], "RESP%d: the bucket was not charged", proto)
	}

	c := rltest.Dial(t, s.Addr.String())
	// MULTI/EXEC: RL.ALL runs with the queue, at one clock reading.
	require.Equal(t, "+OK", c.Do("MULTI"))
	require.Equal(t, "+QUEUED", c.Do("RL.ALL", "m:a", "LOG", "2", "1s", "AND", "m:b", "LOG", "2", "1s"))
	require.Equal(t, "+QUEUED", c.Do("RL.ALL", "m:a", "LOG", "2", "1s", "AND", "m:b", "LOG", "1", "1s"))
	require.Equal(t, "[[0 2 1 -1 1000 1 [[0 2 1 -1 1000] [0 2 1 -1 1000]]] [1 1 0 1000 1000 2 [[0 2 1 -1 1000] [1 1 0 1000 1000]]]]", c.Do("EXEC"))

	// A user's key patterns apply to every key of the call.
	require.Equal(t, "+OK", c.Do("ACL", "SETUSER", "app", "on", ">pw", "~app:*", "+@ratelimit"))
	app := rltest.Dial(t, s.Addr.String())
	require.Equal(t, "+OK", app.Do("AUTH", "app", "pw"))
	require.Equal(t, "-NOPERM this user has no permissions to access one of the keys used as arguments",
		app.Do("RL.ALL", "app:1", "FIXED", "5", "1m", "AND", "other", "FIXED", "5", "1m"))
	require.Contains(t, app.Do("RL.ALL", "app:1", "FIXED", "5", "1m", "AND", "app:2", "FIXED", "5", "1m"), "[0 5 4 ")

	// Counting: every group of an admitted call is a decision of its own
	// algorithm; a rejected call counts its rejecting group, whose key
	// RL.TOP lists.
	require.Equal(t, "+OK", c.Do("CONFIG", "RESETSTAT"))
	require.Equal(t, "+OK", c.Do("CONFIG", "SET", "slowlog-log-slower-than", "0", "slowlog-max-len", "8"))
	for range 3 {
		c.Do("RL.ALL", "top:slide", "SLIDE", "100", "1m", "AND", "top:hot", "GCRA", "0", "1", "60", "AND", "top:guard", "FIXED", "1", "1m", "COST", "0")
	}
	require.Contains(t, c.Do("SLOWLOG", "GET", "1"), `["RL.ALL" "top:slide" "SLIDE" "100" "1m" "AND" "top:hot" `, "SLOWLOG: the call with its groups")
	info := rltest.InfoFields(rltest.InfoText(t, c, "rlserver"))
	require.Equal(t, "admitted=1,rejected=0,peek=0", info["decisions_slide"])
	require.Equal(t, "admitted=1,rejected=2,peek=0", info["decisions_gcra"])
	require.Equal(t, "admitted=0,rejected=0,peek=1", info["decisions_fixed"])
	require.Contains(t, c.Do("RL.TOP", "1"), `"top:hot" 2`)
	require.Contains(t, rltest.InfoText(t, c, "commandstats"), "cmdstat_rl.all:calls=3,")
	fams := scrape(t, s)
	require.Equal(t, 2.0, value(t, fams, "rlserver_decisions_total", "algorithm", "gcra", "result", "rejected"))
	require.Equal(t, 3.0, value(t, fams, "rlserver_commands_total", "command", "rl.all"))
}

// TestAllConcurrentCallers: 1,000 concurrent go-redis callers, each with
// its own limit of 10 a minute and one shared limit of 100 a minute,
// three calls each: exactly 100 are admitted, and the shared counter and
// every caller's own hold exactly what was admitted.
func TestAllConcurrentCallers(t *testing.T) {
	s := testserver.Start(t)
	rdb := redis.NewClient(&redis.Options{Addr: s.Addr.String(), PoolSize: 100})
	t.Cleanup(func() { rdb.Close() })
	ctx := context.Background()
	var admitted atomic.Int64
	perCaller := make([]int64, 1000)
	var wg sync.WaitGroup
	errs := make(chan error, 1000)
	for c := range 1000 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			own := "{t}:user:" + strconv.Itoa(c)
			for range 3 {
				v, err := rdb.Do(ctx, "RL.ALL", own, "FIXED", 10, "1m", "AND", "{t}:tenant", "FIXED", 100, "1m").Slice()
				if err != nil {
					errs <- err
					return
				}
				if v[0] == int64(0) {
					admitted.Add(1)
					perCaller[c]++
				}
			}
		}()
	}
	wg.Wait()
	close(errs)
	for err := range errs {
		require.NoError(t, err)
	}
	require.Equal(t, int64(100), admitted.Load())
	cn := rltest.Dial(t, s.Addr.String())
	require.Equal(t, "[0 100 0 -1 40000]", cn.Do("RL.FIXED", "{t}:tenant", "100", "1m", "COST", "0"))
	for c, n := range perCaller {
		want := "[0 10 " + strconv.FormatInt(10-n, 10) + " -1 "
		if n == 0 {
			want = "[0 10 10 -1 0]"
		}
		require.Contains(t, cn.Do("RL.FIXED", "{t}:user:"+strconv.Itoa(c), "10", "1m", "COST", "0"), want, "caller %d", c)
	}
}

package server_test

// Integration tests with real clients: go-redis (RESP2 and RESP3), redis-cli
// and redis-benchmark, against an in-process server on the manual clock.

import (
	"bufio"
	"context"
	"errors"
	"fmt"
	"net"
	"os/exec"
	"regexp"
	"runtime"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"
	"github.com/stretchr/testify/require"

	"github.com/rlserver/rlserver/internal/rltest"
	"github.com/rlserver/rlserver/internal/testserver"
	"github.com/rlserver/rlserver/server"
)

// testCtx is a context bounded so a hung server fails the test instead of
// hanging it.
func testCtx(t *testing.T, d time.Duration) context.Context {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), d)
	t.Cleanup(cancel)
	return ctx
}

// newClient returns a go-redis client for s, closed at test end.
func newClient(t *testing.T, s *server.Server, edit func(*redis.Options)) *redis.Client {
	t.Helper()
	o := &redis.Options{
		Addr:         s.Addr.String(),
		DialTimeout:  5 * time.Second,
		ReadTimeout:  20 * time.Second,
		WriteTimeout: 20 * time.Second,
		MaxRetries:   -1, // a failing command must fail, not be retried
	}
	if edit != nil {
		edit(o)
	}
	c := redis.NewClient(o)
	t.Cleanup(func() { c.Close() })
	return c
}

// ints converts a go-redis reply to []int64, failing on any other shape.
func ints(t *testing.T, v interface{}) []int64 {
	t.Helper()
	arr, ok := v.([]interface{})
	require.Truef(t, ok, "reply %#v is not an array", v)
	out := make([]int64, len(arr))
	for i, e := range arr {
		n, ok := e.(int64)
		require.Truef(t, ok, "element %d of %#v is %T, not int64", i, v, e)
		out[i] = n
	}
	return out
}

// redisErrText returns the text of the Redis error reply inside err
// (go-redis wraps handshake failures in its own messages).
func redisErrText(t *testing.T, err error) string {
	t.Helper()
	require.Error(t, err)
	var rerr redis.Error
	require.Truef(t, errors.As(err, &rerr), "%v (%T) is not a Redis error reply", err, err)
	return rerr.Error()
}

// helloField returns field name of a HELLO reply as go-redis renders it in
// RESP2 (flat array) or RESP3 (map).
func helloField(t *testing.T, v interface{}, name string) interface{} {
	t.Helper()
	switch r := v.(type) {
	case map[interface{}]interface{}:
		f, ok := r[name]
		require.Truef(t, ok, "HELLO reply %#v has no %q", v, name)
		return f
	case []interface{}:
		for i := 0; i+1 < len(r); i += 2 {
			if r[i] == name {
				return r[i+1]
			}
		}
	}
	t.Fatalf("HELLO reply %#v (%T) has no %q", v, v, name)
	return nil
}

// doer is what go-redis clients, connections and pipelines share for
// arbitrary commands.
type doer interface {
	Do(ctx context.Context, args ...interface{}) *redis.Cmd
}

func throttle(ctx context.Context, c doer, key string, burst, count, period int64) *redis.Cmd {
	return c.Do(ctx, "CL.THROTTLE", key, burst, count, period, 1)
}

func TestGoRedisClient(t *testing.T) {
	for _, proto := range []int{2, 3} {
		t.Run(fmt.Sprintf("RESP%d", proto), func(t *testing.T) {
			s := testserver.Start(t)
			ctx := testCtx(t, 60*time.Second)
			rdb := newClient(t, s, func(o *redis.Options) { o.Protocol = proto })

			require.Equal(t, "PONG", rdb.Ping(ctx).Val())

			// One sticky connection for the per-connection state.
			conn := rdb.Conn()
			t.Cleanup(func() { conn.Close() })

			// The handshake: HELLO <proto> negotiated the protocol (go-redis
			// silently falls back to RESP2 when HELLO fails, so check it) and
			// CLIENT SETINFO recorded the library (go-redis ignores its errors).
			hello, err := conn.Do(ctx, "HELLO").Result()
			require.NoError(t, err)
			require.EqualValues(t, proto, helloField(t, hello, "proto"))
			require.Equal(t, "redis", helloField(t, hello, "server"))
			info, err := conn.ClientInfo(ctx).Result()
			require.NoError(t, err, "go-redis must parse CLIENT INFO")
			require.Equal(t, proto, info.Resp, "resp= in CLIENT INFO")
			wantLib := fmt.Sprintf("go-redis(,%s)", strings.ReplaceAll(runtime.Version(), " ", "_"))
			require.Equal(t, wantLib, info.LibName)
			require.Equal(t, redis.Version(), info.LibVer)

			// CLIENT ID / SETNAME / GETNAME / LIST.
			id, err := conn.ClientID(ctx).Result()
			require.NoError(t, err)
			require.Positive(t, id)
			require.Equal(t, info.ID, id)
			require.Equal(t, "", conn.ClientGetName(ctx).Val())
			ok, err := conn.ClientSetName(ctx, "rl-test").Result()
			require.NoError(t, err)
			require.True(t, ok)
			require.Equal(t, "rl-test", conn.ClientGetName(ctx).Val())
			list, err := rdb.ClientList(ctx).Result()
			require.NoError(t, err)
			require.Contains(t, list, "lib-name=go-redis")
			var line string
			for _, l := range strings.Split(strings.TrimRight(list, "\n"), "\n") {
				if strings.HasPrefix(l, "id="+strconv.FormatInt(id, 10)+" ") {
					line = l
				}
			}
			require.NotEmptyf(t, line, "CLIENT LIST has no line for id %d:\n%s", id, list)
			require.Contains(t, line, " name=rl-test ")
			require.Contains(t, line, " lib-name="+wantLib)
			require.Contains(t, line, " lib-ver="+redis.Version())
			require.Contains(t, line, " resp="+strconv.Itoa(proto))

			// HELLO <proto> SETNAME, as go-redis sends for Options.ClientName.
			named := newClient(t, s, func(o *redis.Options) { o.Protocol = proto; o.ClientName = "named" })
			require.Equal(t, "named", named.ClientGetName(ctx).Val())
			c := rltest.Dial(t, s.Addr.String())
			hs := c.Do("HELLO", strconv.Itoa(proto), "SETNAME", "raw-name")
			require.Contains(t, hs, "proto")
			require.Equal(t, `"raw-name"`, c.Do("CLIENT", "GETNAME"))

			// CL.THROTTLE, integers in both protocols.
			v, err := throttle(ctx, rdb, "user123", 15, 30, 60).Result()
			require.NoError(t, err)
			require.Equal(t, []interface{}{int64(0), int64(16), int64(15), int64(-1), int64(2)}, v)
			v, err = throttle(ctx, rdb, "user123", 15, 30, 60).Result()
			require.NoError(t, err)
			require.Equal(t, []int64{0, 16, 14, -1, 4}, ints(t, v))

			// The key as redis-cell shows it: a string holding the TAT in ns.
			require.Equal(t, "1700000004000000000", rdb.Get(ctx, "user123").Val())
			require.Equal(t, 4*time.Second, rdb.PTTL(ctx, "user123").Val())
			require.Equal(t, 4*time.Second, rdb.TTL(ctx, "user123").Val())
			require.Equal(t, "string", rdb.Type(ctx, "user123").Val())
			require.Equal(t, int64(1), rdb.Exists(ctx, "user123", "nosuchkey").Val())
			require.Equal(t, int64(1), rdb.DBSize(ctx).Val())
			require.Equal(t, []interface{}{int64(0), int64(2), int64(1), int64(-1), int64(60)},
				throttle(ctx, rdb, "other", 1, 1, 60).Val())
			require.Equal(t, int64(2), rdb.Exists(ctx, "user123", "other").Val())
			require.Equal(t, int64(2), rdb.DBSize(ctx).Val())
			require.Equal(t, int64(1), rdb.Del(ctx, "user123", "nosuchkey").Val())
			require.Equal(t, int64(0), rdb.Exists(ctx, "user123").Val())
			require.Equal(t, redis.Nil, rdb.Get(ctx, "user123").Err())
			require.Equal(t, int64(1), rdb.DBSize(ctx).Val())
			require.Equal(t, "OK", rdb.FlushAll(ctx).Val())
			require.Equal(t, int64(0), rdb.DBSize(ctx).Val())
			require.Equal(t, int64(0), rdb.Exists(ctx, "other").Val())

			// TIME is the manual clock, and moves only with it.
			tm, err := rdb.Time(ctx).Result()
			require.NoError(t, err)
			require.Equal(t, time.Unix(1700000000, 0).UnixNano(), tm.UnixNano())
			require.NoError(t, rdb.Do(ctx, "DEBUG", "CLOCK", "ADVANCE", "1500ms").Err())
			tm, err = rdb.Time(ctx).Result()
			require.NoError(t, err)
			require.Equal(t, time.Unix(1700000001, 500_000_000).UnixNano(), tm.UnixNano())

			// INFO and CONFIG GET.
			infoTxt, err := rdb.Info(ctx).Result()
			require.NoError(t, err)
			require.Contains(t, infoTxt, "redis_version")
			infoTxt, err = rdb.Info(ctx, "server").Result()
			require.NoError(t, err)
			require.Contains(t, infoTxt, "redis_version:")
			cfg, err := rdb.ConfigGet(ctx, "maxclients").Result()
			require.NoError(t, err)
			require.Equal(t, map[string]string{"maxclients": "10000"}, cfg)

			// COMMAND, parsed by go-redis.
			cmds, err := rdb.Command(ctx).Result()
			require.NoError(t, err)
			ci := cmds["cl.throttle"]
			require.NotNil(t, ci, "COMMAND has no cl.throttle")
			require.Equal(t, "cl.throttle", ci.Name)
			require.Equal(t, int8(-1), ci.Arity)
			require.Contains(t, ci.Flags, "write")
			require.NotContains(t, ci.Flags, "readonly")
			require.NotContains(t, ci.Flags, "fast")
			require.NotContains(t, ci.Flags, "denyoom")
			require.False(t, ci.ReadOnly)
			require.Equal(t, int8(1), ci.FirstKeyPos)
			require.Equal(t, int8(1), ci.LastKeyPos)
			require.Equal(t, int8(1), ci.StepCount)
			get := cmds["get"]
			require.NotNil(t, get, "COMMAND has no get")
			require.True(t, get.ReadOnly, "get must be flagged readonly")
			require.Equal(t, int8(2), get.Arity)
			n, err := rdb.Do(ctx, "COMMAND", "COUNT").Int64()
			require.NoError(t, err)
			require.Equal(t, int64(len(cmds)), n, "COMMAND COUNT vs entries of COMMAND")

			// Unknown command, Redis's wording.
			err = rdb.Do(ctx, "nosuch", "a").Err()
			require.Error(t, err)
			require.Equal(t, "ERR unknown command 'nosuch', with args beginning with: 'a' ", err.Error())
			// ... and the connection pool still works afterwards.
			require.Equal(t, "PONG", rdb.Ping(ctx).Val())
		})
	}
}

func TestGoRedisPipeline(t *testing.T) {
	s := testserver.Start(t)
	ctx := testCtx(t, 60*time.Second)
	rdb := newClient(t, s, func(o *redis.Options) { o.Protocol = 3 })

	const n, limit, ei = 1000, 100, int64(3600)
	pipe := rdb.Pipeline()
	res := make([]*redis.Cmd, n)
	for i := range res {
		res[i] = pipe.Do(ctx, "CL.THROTTLE", "piped", limit-1, 1, ei, 1)
	}
	_, err := pipe.Exec(ctx)
	require.NoError(t, err)

	admitted := 0
	for i, c := range res {
		got := ints(t, c.Val())
		if i < limit {
			// Admitted in order, each taking one token at the same instant.
			require.Equalf(t, []int64{0, limit, int64(limit - 1 - i), -1, int64(i+1) * ei}, got, "reply %d", i)
		} else {
			require.Equalf(t, []int64{1, limit, 0, ei, limit * ei}, got, "reply %d", i)
		}
		if got[0] == 0 {
			admitted++
		}
	}
	require.Equal(t, limit, admitted)
	// One clock reading: the manual clock did not move, the TAT is exactly
	// limit emission intervals ahead of it.
	now, err := rdb.Do(ctx, "DEBUG", "CLOCK", "GET").Int64()
	require.NoError(t, err)
	require.Equal(t, rltest.StartNs, now)
	require.Equal(t, strconv.FormatInt(rltest.StartNs+limit*ei*1e9, 10), rdb.Get(ctx, "piped").Val())
}

func TestGoRedisTransactions(t *testing.T) {
	s := testserver.Start(t)
	ctx := testCtx(t, 60*time.Second)
	rdb := newClient(t, s, func(o *redis.Options) { o.Protocol = 3 })

	t.Run("replies in order", func(t *testing.T) {
		var th []*redis.Cmd
		var get *redis.StringCmd
		var echo *redis.StringCmd
		cmds, err := rdb.TxPipelined(ctx, func(p redis.Pipeliner) error {
			for i := 0; i < 4; i++ {
				th = append(th, p.Do(ctx, "CL.THROTTLE", "tx", 2, 1, 60, 1))
			}
			get = p.Get(ctx, "tx")
			echo = p.Echo(ctx, "done")
			return nil
		})
		require.NoError(t, err)
		require.Len(t, cmds, 6)
		want := [][]int64{{0, 3, 2, -1, 60}, {0, 3, 1, -1, 120}, {0, 3, 0, -1, 180}, {1, 3, 0, 60, 180}}
		for i, c := range th {
			require.Equalf(t, want[i], ints(t, c.Val()), "queued CL.THROTTLE %d", i)
		}
		require.Equal(t, "1700000180000000000", get.Val())
		require.Equal(t, "done", echo.Val())
	})

	t.Run("queued syntax error aborts", func(t *testing.T) {
		var th, bad *redis.Cmd
		_, err := rdb.TxPipelined(ctx, func(p redis.Pipeliner) error {
			th = p.Do(ctx, "CL.THROTTLE", "aborted", 2, 1, 60, 1)
			bad = p.Do(ctx, "GET") // wrong arity: refused when queued
			return nil
		})
		require.Error(t, err)
		require.Equal(t, "ERR wrong number of arguments for 'get' command", redisErrText(t, bad.Err()))
		require.Contains(t, err.Error()+" "+th.Err().Error(), "EXECABORT")
		require.Equal(t, int64(0), rdb.Exists(ctx, "aborted").Val(), "aborted transaction changed data")

		// The exact wire replies.
		c := rltest.Dial(t, s.Addr.String())
		require.Equal(t, "+OK", c.Do("MULTI"))
		require.Equal(t, "+QUEUED", c.Do("CL.THROTTLE", "aborted", "2", "1", "60", "1"))
		require.Equal(t, "-ERR wrong number of arguments for 'get' command", c.Do("GET"))
		require.Equal(t, "-EXECABORT Transaction discarded because of previous errors.", c.Do("EXEC"))
		require.Equal(t, "0", c.Do("EXISTS", "aborted"))
		require.Equal(t, "-ERR EXEC without MULTI", c.Do("EXEC"))
	})

	t.Run("CL.THROTTLE arity is checked at EXEC", func(t *testing.T) {
		// Arity -1: Redis queues it; the module's own usage error comes
		// back inside EXEC and the other commands still run.
		c := rltest.Dial(t, s.Addr.String())
		require.Equal(t, "+OK", c.Do("MULTI"))
		require.Equal(t, "+QUEUED", c.Do("CL.THROTTLE", "late", "2", "1"))
		require.Equal(t, "+QUEUED", c.Do("CL.THROTTLE", "late", "2", "1", "60"))
		require.Equal(t, "[-Cell error: Store error: Usage: cl.throttle <key> <max_burst> <count per period> <period> [<quantity>] [0 3 2 -1 60]]", c.Do("EXEC"))
	})

	t.Run("DISCARD", func(t *testing.T) {
		conn := rdb.Conn()
		defer conn.Close()
		require.NoError(t, conn.Do(ctx, "MULTI").Err())
		require.Equal(t, "QUEUED", conn.Do(ctx, "CL.THROTTLE", "discarded", 2, 1, 60, 1).Val())
		require.Equal(t, "OK", conn.Do(ctx, "DISCARD").Val())
		require.Equal(t, int64(0), conn.Exists(ctx, "discarded").Val())
		require.Equal(t, "ERR DISCARD without MULTI", redisErrText(t, conn.Do(ctx, "DISCARD").Err()))
	})

	t.Run("nested MULTI", func(t *testing.T) {
		conn := rdb.Conn()
		defer conn.Close()
		require.Equal(t, "OK", conn.Do(ctx, "MULTI").Val())
		require.Equal(t, "ERR MULTI calls can not be nested", redisErrText(t, conn.Do(ctx, "MULTI").Err()))
		// Still inside the first MULTI.
		require.Equal(t, "QUEUED", conn.Do(ctx, "PING").Val())
		require.Equal(t, "OK", conn.Do(ctx, "DISCARD").Val())
		require.Equal(t, "PONG", conn.Ping(ctx).Val())
	})
}

func TestGoRedisConcurrentSharedKey(t *testing.T) {
	rltest.Long(t, "concurrent go-redis clients")
	s := testserver.Start(t)
	ctx := testCtx(t, 120*time.Second)
	const workers, perWorker, limit, ei = 64, 100, 50, int64(3600)
	rdb := newClient(t, s, func(o *redis.Options) { o.Protocol = 3; o.PoolSize = workers })

	// round fires workers×calls CL.THROTTLE on key at once and returns the
	// admitted replies' remaining values and the limited replies.
	round := func(t *testing.T, key string, calls int) (remaining []int64, limited [][]int64) {
		t.Helper()
		var mu sync.Mutex
		var wg sync.WaitGroup
		errs := make(chan error, workers)
		start := make(chan struct{})
		for w := 0; w < workers; w++ {
			wg.Add(1)
			go func() {
				defer wg.Done()
				<-start
				for i := 0; i < calls; i++ {
					v, err := rdb.Do(ctx, "CL.THROTTLE", key, limit-1, 1, ei, 1).Result()
					if err != nil {
						errs <- err
						return
					}
					arr, ok := v.([]interface{})
					if !ok || len(arr) != 5 {
						errs <- fmt.Errorf("bad reply %#v", v)
						return
					}
					r := make([]int64, 5)
					for j := range arr {
						r[j], _ = arr[j].(int64)
					}
					mu.Lock()
					if r[0] == 0 {
						remaining = append(remaining, r[2])
					} else {
						limited = append(limited, r)
					}
					mu.Unlock()
				}
			}()
		}
		close(start)
		wg.Wait()
		require.Greater(t, rdb.PoolStats().TotalConns, uint32(1), "the calls did not run concurrently")
		close(errs)
		for err := range errs {
			require.NoError(t, err)
		}
		return remaining, limited
	}

	check := func(t *testing.T, key string) {
		remaining, limited := round(t, key, perWorker)
		require.Len(t, remaining, limit, "admitted")
		require.Len(t, limited, workers*perWorker-limit)
		// Linearizable: every admitted call saw a distinct bucket level.
		seen := make(map[int64]bool)
		for _, r := range remaining {
			require.Falsef(t, seen[r], "remaining %d reported twice", r)
			require.True(t, r >= 0 && r < limit, "remaining %d", r)
			seen[r] = true
		}
		for _, l := range limited {
			require.Equal(t, []int64{1, limit, 0, ei, limit * ei}, l)
		}
		require.Equal(t, strconv.FormatInt(rltest.StartNs+limit*ei*1e9, 10), rdb.Get(ctx, key).Val())
	}

	// The clock is frozen, so the outcome is the same every time.
	t.Run("round1", func(t *testing.T) { check(t, "shared1") })
	t.Run("round2", func(t *testing.T) { check(t, "shared2") })

	t.Run("one token after one interval", func(t *testing.T) {
		require.NoError(t, rdb.Do(ctx, "DEBUG", "CLOCK", "ADVANCE", strconv.FormatInt(ei, 10)+"s").Err())
		remaining, limited := round(t, "shared1", 1)
		require.Equal(t, []int64{0}, remaining)
		require.Len(t, limited, workers-1)
	})
}

func TestGoRedisAuth(t *testing.T) {
	const pass = "s3cret"
	const noauth = "NOAUTH Authentication required."
	const wrongpass = "WRONGPASS invalid username-password pair or user is disabled."
	s := testserver.Start(t, func(o *server.Options) { o.Config.RequirePass = pass })
	ctx := testCtx(t, 60*time.Second)

	for _, proto := range []int{2, 3} {
		t.Run(fmt.Sprintf("RESP%d", proto), func(t *testing.T) {
			anon := newClient(t, s, func(o *redis.Options) { o.Protocol = proto })
			require.Equal(t, noauth, redisErrText(t, anon.Ping(ctx).Err()))
			require.Equal(t, noauth, redisErrText(t, throttle(ctx, anon, "anon", 1, 1, 60).Err()))
			require.Equal(t, noauth, redisErrText(t, anon.Get(ctx, "anon").Err()))

			authed := newClient(t, s, func(o *redis.Options) { o.Protocol = proto; o.Password = pass })
			require.Equal(t, "PONG", authed.Ping(ctx).Val())
			info, err := authed.ClientInfo(ctx).Result()
			require.NoError(t, err)
			// resp=<proto> proves HELLO <proto> AUTH default s3cret worked,
			// not go-redis's fallback to a plain AUTH.
			require.Equal(t, proto, info.Resp)
			require.Contains(t, info.LibName, "go-redis")
			require.Equal(t, int64(0), authed.Exists(ctx, "anon").Val(), "a refused command changed data")
			require.Equal(t, []int64{0, 2, 1, -1, 60}, ints(t, throttle(ctx, authed, fmt.Sprintf("k%d", proto), 1, 1, 60).Val()))

			wrong := newClient(t, s, func(o *redis.Options) { o.Protocol = proto; o.Password = "nope" })
			require.Equal(t, wrongpass, redisErrText(t, wrong.Ping(ctx).Err()))
		})
	}

	t.Run("raw", func(t *testing.T) {
		c := rltest.Dial(t, s.Addr.String())
		require.Equal(t, "-"+noauth, c.Do("PING"))
		require.Equal(t, "-"+noauth, c.Do("CL.THROTTLE", "raw", "1", "1", "60"))
		require.True(t, strings.HasPrefix(c.Do("HELLO", "3"), "-NOAUTH "))
		require.Equal(t, "-"+wrongpass, c.Do("AUTH", "nope"))
		require.Equal(t, "-"+wrongpass, c.Do("HELLO", "3", "AUTH", "default", "nope"))
		require.Equal(t, "-"+noauth, c.Do("PING"))
		require.Equal(t, "+OK", c.Do("AUTH", pass))
		require.Equal(t, "+PONG", c.Do("PING"))

		c = rltest.Dial(t, s.Addr.String())
		require.Equal(t, "+OK", c.Do("AUTH", "default", pass))
		require.Equal(t, "[0 2 1 -1 60]", c.Do("CL.THROTTLE", "raw", "1", "1", "60"))

		c = rltest.Dial(t, s.Addr.String())
		hello := c.Do("HELLO", "3", "AUTH", "default", pass)
		require.True(t, strings.HasPrefix(hello, "{"), hello)
		require.Contains(t, hello, `"proto": 3`)
		require.Equal(t, "[0 2 0 -1 120]", c.Do("CL.THROTTLE", "raw", "1", "1", "60"))
	})
}

// runTool runs an external program with a deadline and returns its stdout;
// a non-zero exit fails the test with stderr shown.
func runTool(t *testing.T, timeout time.Duration, path string, args ...string) string {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), timeout)
	defer cancel()
	cmd := exec.CommandContext(ctx, path, args...)
	var stderr strings.Builder
	cmd.Stderr = &stderr
	out, err := cmd.Output()
	require.NoErrorf(t, err, "%s %q\nstdout: %s\nstderr: %s", path, args, out, stderr.String())
	return string(out)
}

func hostPort(t *testing.T, s *server.Server) []string {
	t.Helper()
	host, port, err := net.SplitHostPort(s.Addr.String())
	require.NoError(t, err)
	return []string{"-h", host, "-p", port}
}

func TestRedisCLI(t *testing.T) {
	cli := rltest.Tool(t, "redis-cli")
	s := testserver.Start(t)
	hp := hostPort(t, s)
	run := func(args ...string) string {
		t.Helper()
		return runTool(t, 30*time.Second, cli, append(append([]string{}, hp...), args...)...)
	}

	// stdout is not a tty, so redis-cli prints raw replies: one array
	// element per line.
	require.Equal(t, "0\n16\n15\n-1\n2\n", run("CL.THROTTLE", "user123", "15", "30", "60", "1"))
	require.Equal(t, "PONG\n", run("PING"))
	require.Equal(t, "1) (integer) 0\n2) (integer) 16\n3) (integer) 14\n4) (integer) -1\n5) (integer) 4\n",
		run("--no-raw", "CL.THROTTLE", "user123", "15", "30", "60", "1"))
	require.Equal(t, "1700000004000000000\n", run("GET", "user123"))
	require.Equal(t, "string\n", run("TYPE", "user123"))
	require.Equal(t, "ERR unknown command 'nosuch', with args beginning with: 'a' \n\n", run("nosuch", "a"))

	// RESP3.
	hello := run("-3", "HELLO", "3")
	require.Contains(t, "\n"+hello, "\nserver redis\n")
	require.Contains(t, hello, "\nproto 3\n")
	require.Equal(t, "0\n16\n13\n-1\n6\n", run("-3", "CL.THROTTLE", "user123", "15", "30", "60", "1"))
	require.Equal(t, "1) (integer) 0\n2) (integer) 16\n3) (integer) 12\n4) (integer) -1\n5) (integer) 8\n",
		run("-3", "--no-raw", "CL.THROTTLE", "user123", "15", "30", "60", "1"))
	require.Equal(t, "1700000008000000000\n", run("-3", "GET", "user123"))

	// With a password.
	s = testserver.Start(t, func(o *server.Options) { o.Config.RequirePass = "s3cret" })
	hp = hostPort(t, s)
	require.Equal(t, "NOAUTH Authentication required.\n\n", run("CL.THROTTLE", "user123", "15", "30", "60", "1"))
	require.Equal(t, "0\n16\n15\n-1\n2\n", run("-a", "s3cret", "--no-auth-warning", "CL.THROTTLE", "user123", "15", "30", "60", "1"))
	require.Equal(t, "0\n16\n14\n-1\n4\n", run("-3", "-a", "s3cret", "--no-auth-warning", "CL.THROTTLE", "user123", "15", "30", "60", "1"))
}

func TestRedisBenchmark(t *testing.T) {
	bench := rltest.Tool(t, "redis-benchmark")
	s := testserver.Start(t)
	hp := hostPort(t, s)
	run := func(args ...string) string {
		t.Helper()
		out := runTool(t, 5*time.Minute, bench, append(append([]string{}, hp...), args...)...)
		require.NotContains(t, out, "ERR")
		require.NotContains(t, strings.ToLower(out), "error")
		require.Contains(t, out, "requests per second")
		return out
	}

	out := run("-t", "ping", "-n", "20000", "-q")
	require.Contains(t, out, "PING_INLINE: ")
	require.Contains(t, out, "PING_MBULK: ")
	rdb := newClient(t, s, nil)
	ctx := testCtx(t, 60*time.Second)
	require.Equal(t, int64(0), rdb.DBSize(ctx).Val())

	out = run("-n", "20000", "-r", "100000", "-q", "CL.THROTTLE", "k:__rand_int__", "10", "100", "60")
	require.Contains(t, out, "CL.THROTTLE k:__rand_int__ 10 100 60: ")
	n, err := rdb.DBSize(ctx).Result()
	require.NoError(t, err)
	require.Positive(t, n)
	require.LessOrEqual(t, n, int64(20000))

	// Every key is one of the benchmark's, holding a TAT of 1 to 11
	// emission intervals (0.6 s) past the frozen clock.
	keys, err := rdb.Keys(ctx, "*").Result()
	require.NoError(t, err)
	require.Len(t, keys, int(n))
	keyRe := regexp.MustCompile(`^k:[0-9]{12}$`)
	pipe := rdb.Pipeline()
	gets := make([]*redis.StringCmd, len(keys))
	for i, k := range keys {
		require.Regexp(t, keyRe, k)
		gets[i] = pipe.Get(ctx, k)
	}
	_, err = pipe.Exec(ctx)
	require.NoError(t, err)
	const ei = int64(600_000_000)
	for i, g := range gets {
		tat, err := strconv.ParseInt(g.Val(), 10, 64)
		require.NoErrorf(t, err, "GET %s", keys[i])
		d := tat - rltest.StartNs
		require.Truef(t, d%ei == 0 && d >= ei && d <= 11*ei, "GET %s = %d", keys[i], tat)
	}
}

// TestKillWhileConnecting: CLIENT KILL running while clients connect
// closes every client it counts, including one it finds the instant it is
// listed (its close function is in place before it is listed; the race
// detector checks that nothing is set afterwards). Every connection the
// killer counted must see its socket closed, without sending anything
// more, and no other connection is closed: the test keeps every
// connection open until the killer stops, and the connections it then
// finds closed are exactly as many as the kills counted.
func TestKillWhileConnecting(t *testing.T) {
	rltest.Long(t, "connections killed mid-handshake")
	s := testserver.Start(t)
	// The killer runs off the test goroutine, where neither require nor
	// rltest.Conn (which calls t.Fatalf) may be used: it talks over a raw
	// connection and hands its count, or its error, back to the test
	// goroutine.
	killer, err := net.DialTimeout("tcp", s.Addr.String(), 5*time.Second)
	require.NoError(t, err)
	t.Cleanup(func() { killer.Close() })
	type kills struct {
		n   int
		err error
	}
	stop := make(chan struct{})
	killed := make(chan kills, 1) // buffered: the killer never blocks on a test that gave up
	go func() {
		rd := bufio.NewReader(killer)
		n := 0
		for {
			select {
			case <-stop:
				killed <- kills{n, nil}
				return
			default:
			}
			killer.SetDeadline(time.Now().Add(10 * time.Second))
			if _, err := killer.Write(rltest.Encode("CLIENT", "KILL", "TYPE", "normal", "SKIPME", "yes")); err != nil {
				killed <- kills{n, fmt.Errorf("CLIENT KILL: write: %w", err)}
				return
			}
			r, err := rltest.ReadReply(rd)
			if err != nil {
				killed <- kills{n, fmt.Errorf("CLIENT KILL: read reply: %w", err)}
				return
			}
			v, err := strconv.Atoi(r)
			if err != nil {
				killed <- kills{n, fmt.Errorf("CLIENT KILL reply %q: %w", r, err)}
				return
			}
			n += v
		}
	}()
	closed := 0
	var served []net.Conn // answered their PING; the killer may take them later
	for i := 0; i < 200; i++ {
		nc, err := net.Dial("tcp", s.Addr.String())
		require.NoError(t, err)
		t.Cleanup(func() { nc.Close() })
		// A killed connection answers nothing more: its read ends with
		// EOF or a reset; one that survives answers PING.
		_, err = nc.Write([]byte("PING\r\n"))
		require.NoError(t, err)
		nc.SetReadDeadline(time.Now().Add(10 * time.Second))
		buf := make([]byte, 16)
		n, err := nc.Read(buf)
		if err != nil {
			closed++
			continue
		}
		require.Equal(t, "+PONG\r\n", string(buf[:n]))
		served = append(served, nc) // kept open: the killer may close it
	}
	close(stop)
	k := <-killed
	require.NoError(t, k.err)
	n := k.n
	early := closed
	// The killer has stopped and every kill it counted was done before its
	// reply. A served connection it took sees EOF (or a reset) without
	// sending anything; one it did not take stays open (its read times
	// out) and still answers PING. The reads wait together, for one
	// second at most.
	type probe struct {
		nc     net.Conn
		closed bool
		err    error
	}
	probes := make(chan probe, len(served))
	deadline := time.Now().Add(time.Second)
	for _, nc := range served {
		go func() {
			nc.SetReadDeadline(deadline)
			buf := make([]byte, 16)
			n, err := nc.Read(buf)
			var ne net.Error
			switch {
			case errors.As(err, &ne) && ne.Timeout():
				probes <- probe{nc: nc}
			case err != nil:
				probes <- probe{nc: nc, closed: true}
			default:
				probes <- probe{nc: nc, err: fmt.Errorf("unexpected data %q on an idle connection", buf[:n])}
			}
		}()
	}
	for range served {
		p := <-probes
		require.NoError(t, p.err)
		if p.closed {
			closed++
			continue
		}
		p.nc.SetDeadline(time.Now().Add(10 * time.Second))
		_, err := p.nc.Write([]byte("PING\r\n"))
		require.NoError(t, err, "a connection the killer did not close")
		buf := make([]byte, 16)
		m, err := p.nc.Read(buf)
		require.NoError(t, err, "a connection left open must answer PING (an EOF here: killed, but its socket was not closed)")
		require.Equal(t, "+PONG\r\n", string(buf[:m]))
	}
	t.Logf("%d connections closed by the killer before their PING, %d after it; %d kills counted", early, closed-early, n)
	require.Equal(t, n, closed, "connections seen closed = kills counted")
}

// TestClientListFields: CLIENT LIST and CLIENT INFO lines carry Redis 7's
// fields in its order, each parsed field by field, with this
// connection's own values (a socket, its name, its last command, no
// buffered input or output between commands).
func TestClientListFields(t *testing.T) {
	s := testserver.Start(t)
	c := rltest.Dial(t, s.Addr.String())
	c.Do("CLIENT", "SETNAME", "lister")
	c.Do("CLIENT", "SETINFO", "LIB-NAME", "mylib")
	c.Do("CL.THROTTLE", "k", "1", "2", "3")
	raw := c.Do("CLIENT", "INFO")
	line, err := strconv.Unquote(raw)
	require.NoError(t, err, raw)
	want := []string{"id", "addr", "laddr", "fd", "name", "age", "idle", "flags", "db", "sub", "psub", "ssub", "multi",
		"qbuf", "qbuf-free", "argv-mem", "multi-mem", "rbs", "rbp", "obl", "oll", "omem", "tot-mem", "events", "cmd",
		"user", "redir", "resp", "lib-name", "lib-ver"}
	var names []string
	fields := map[string]string{}
	for _, f := range strings.Fields(line) {
		k, v, ok := strings.Cut(f, "=")
		require.True(t, ok, "field %q of %q", f, line)
		names = append(names, k)
		fields[k] = v
	}
	require.Equal(t, want, names)
	for _, k := range []string{"id", "fd", "age", "idle", "db", "sub", "psub", "multi", "qbuf", "omem", "tot-mem", "resp"} {
		_, err := strconv.ParseInt(fields[k], 10, 64)
		require.NoError(t, err, "%s=%s", k, fields[k])
	}
	require.Equal(t, "lister", fields["name"])
	require.Equal(t, "client|info", fields["cmd"], "the command running, named as Redis names it on lookup")
	require.Equal(t, "mylib", fields["lib-name"])
	require.Equal(t, "default", fields["user"])
	require.Equal(t, "N", fields["flags"])
	require.Equal(t, "-1", fields["multi"])
	require.Equal(t, "0", fields["omem"])
	require.Equal(t, "r", fields["events"])
	require.True(t, strings.HasPrefix(fields["addr"], "127.0.0.1:"), fields["addr"])
	require.Equal(t, s.Addr.String(), fields["laddr"])
	list, err := strconv.Unquote(c.Do("CLIENT", "LIST"))
	require.NoError(t, err)
	var mine []string
	for _, l := range strings.Split(strings.TrimRight(list, "\n"), "\n") {
		if strings.HasPrefix(l, "id="+fields["id"]+" ") {
			for _, f := range strings.Fields(l) {
				k, _, _ := strings.Cut(f, "=")
				mine = append(mine, k)
			}
		}
	}
	require.Equal(t, want, mine, "CLIENT LIST's line of this connection")
}

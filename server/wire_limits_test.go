package server_test

import (
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/rlserver/rlserver/internal/rltest"
	"github.com/rlserver/rlserver/internal/testserver"
	"github.com/rlserver/rlserver/server"
	"github.com/stretchr/testify/require"
)

// TestLimitsCloseOnlyTheOffender: requests over the argument, bulk and key
// limits, and malformed protocol, get Redis's error, then that connection
// is closed; another connection carries on.
func TestLimitsCloseOnlyTheOffender(t *testing.T) {
	eachServeMode(t, func(t *testing.T, mode testserver.Option) {
		s := testserver.Start(t, mode)
		addr := s.Addr.String()
		bystander := rltest.Dial(t, addr)
		require.Equal(t, "[0 2 1 -1 10]", bystander.Do("CL.THROTTLE", "k", "1", "1", "10"))

		for _, tc := range []struct {
			name, send, want string
		}{
			{"too many arguments", "*1025\r\n", "-ERR Protocol error: invalid multibulk length"},
			{"argument too long", "*2\r\n$4\r\nECHO\r\n$65537\r\n", "-ERR Protocol error: invalid bulk length"},
			{"key too long", string(rltest.Encode("CL.THROTTLE", strings.Repeat("k", 1025), "1", "1", "1")), "-ERR Protocol error: key too long"},
			{"key too long for GET", string(rltest.Encode("GET", strings.Repeat("k", 1025))), "-ERR Protocol error: key too long"},
			{"RL.ALL's third key too long", string(rltest.Encode("RL.ALL", "a", "FIXED", "1", "1s", "AND", "b", "FIXED", "1", "1s", "AND", strings.Repeat("k", 1025), "FIXED", "1", "1s")), "-ERR Protocol error: key too long"},
			{"not a bulk", "*1\r\n+PING\r\n", "-ERR Protocol error: expected '$', got '+'"},
			{"unbalanced quotes", "ECHO \"abc\r\n", "-ERR Protocol error: unbalanced quotes in request"},
			{"inline too big", strings.Repeat("x", 70000), "-ERR Protocol error: too big inline request"},
		} {
			c := rltest.Dial(t, addr)
			c.Send([]byte(tc.send))
			got, err := c.Read()
			require.NoError(t, err, tc.name)
			require.Equal(t, tc.want, got, tc.name)
			require.True(t, c.Closed(), "%s: connection should be closed", tc.name)
		}
		// At the limits exactly, everything works.
		c := rltest.Dial(t, addr)
		require.Equal(t, "[0 2 1 -1 10]", c.Do("CL.THROTTLE", strings.Repeat("k", 1024), "1", "1", "10"))
		long := strings.Repeat("e", 64<<10)
		require.Equal(t, fmt.Sprintf("%q", long), c.Do("ECHO", long))
		args := make([]string, 1024)
		args[0] = "DEL"
		for i := 1; i < len(args); i++ {
			args[i] = fmt.Sprint("nokey", i)
		}
		require.Equal(t, "0", c.Do(args...))
		// A long argument that is not a key is no offence.
		require.Equal(t, "[0 1 1 -1 0 1 [[0 1 1 -1 0]]]", c.Do("RL.ALL", "a", "FIXED", "1", "1s", "COST", "0"+strings.Repeat("0", 1100)))
		// The bystander and the keyspace are untouched.
		require.Equal(t, "[0 2 0 -1 20]", bystander.Do("CL.THROTTLE", "k", "1", "1", "10"))
		require.Equal(t, "2", bystander.Do("DBSIZE"))
	})
}

func TestMaxClients(t *testing.T) {
	eachServeMode(t, func(t *testing.T, mode testserver.Option) {
		s := testserver.Start(t, mode, func(o *server.Options) { o.Config.MaxClients = 2 })
		a := rltest.Dial(t, s.Addr.String())
		b := rltest.Dial(t, s.Addr.String())
		require.Equal(t, "+PONG", a.Do("PING"))
		require.Equal(t, "+PONG", b.Do("PING"))
		c := rltest.Dial(t, s.Addr.String())
		got, err := c.Read()
		require.NoError(t, err)
		require.Equal(t, "-ERR max number of clients reached", got)
		require.True(t, c.Closed())
		require.Equal(t, "+PONG", a.Do("PING"))
	})
}

func TestOutputLimit(t *testing.T) {
	eachServeMode(t, func(t *testing.T, mode testserver.Option) {
		s := testserver.Start(t, mode, func(o *server.Options) { o.Config.Limits.MaxOutput = 4096 })
		c := rltest.Dial(t, s.Addr.String())
		for i := 0; i < 300; i++ {
			require.Equal(t, "[0 1 0 -1 10]", c.Do("CL.THROTTLE", fmt.Sprintf("key:%04d", i), "0", "1", "10"))
		}
		got, err := func() (string, error) { c.Send(rltest.Encode("KEYS", "*")); return c.Read() }()
		require.NoError(t, err)
		require.Equal(t, "-ERR output buffer limit reached", got)
		require.True(t, c.Closed())
		other := rltest.Dial(t, s.Addr.String())
		require.Equal(t, "300", other.Do("DBSIZE"))
	})
}

func TestQuitAndClientKill(t *testing.T) {
	eachServeMode(t, func(t *testing.T, mode testserver.Option) {
		s := testserver.Start(t, mode)
		a := rltest.Dial(t, s.Addr.String())
		require.Equal(t, "+OK", a.Do("QUIT"))
		require.True(t, a.Closed())

		victim := rltest.Dial(t, s.Addr.String())
		id := victim.Do("CLIENT", "ID")
		killer := rltest.Dial(t, s.Addr.String())
		require.Equal(t, "1", killer.Do("CLIENT", "KILL", "ID", id))
		require.True(t, victim.Closed())
		require.Equal(t, "0", killer.Do("CLIENT", "KILL", "ID", id))
	})
}

func TestIdleTimeout(t *testing.T) {
	rltest.Long(t, "idle timeouts of seconds")
	eachServeMode(t, func(t *testing.T, mode testserver.Option) {
		s := testserver.Start(t, mode)
		c := rltest.Dial(t, s.Addr.String())
		require.Equal(t, "+OK", c.Do("CONFIG", "SET", "timeout", "1"))
		start := time.Now()
		require.True(t, c.Closed(), "idle client should be closed after 1 s")
		require.GreaterOrEqual(t, time.Since(start), 900*time.Millisecond)
	})
}

func TestInlineCommands(t *testing.T) {
	eachServeMode(t, func(t *testing.T, mode testserver.Option) {
		s := testserver.Start(t, mode)
		c := rltest.Dial(t, s.Addr.String())
		c.Send([]byte("PING\r\nCL.THROTTLE \"user 1\" 15 30 60\nGET 'user 1'\r\n"))
		for _, want := range []string{"+PONG", "[0 16 15 -1 2]", `"1700000002000000000"`} {
			got, err := c.Read()
			require.NoError(t, err)
			require.Equal(t, want, got)
		}
	})
}

// TestProtocolErrorsAsRedis sends the same raw requests to redis-server
// and to rlserver, each followed by QUIT, and requires the same replies up
// to the connection's end: a protocol error, or the request's replies and
// QUIT's. The lengths are the point: Redis reads "*N" and "$N" as
// string2ll does (so "01", "-0" and "+1" are no lengths), skips the two
// bytes after an argument unread, and holds a connection that must still
// log in to smaller requests.
func TestProtocolErrorsAsRedis(t *testing.T) {
	rd := startRedis(t, rltest.Tool(t, "redis-server"))
	raddr := "127.0.0.1:" + fmt.Sprint(rd.port)
	replies := func(addr, in string) []string {
		c := rltest.Dial(t, addr)
		defer c.Close()
		c.Send([]byte(in + "*1\r\n$4\r\nQUIT\r\n"))
		var out []string
		for len(out) < 10 {
			r, err := c.Read()
			if err != nil {
				return append(out, "(closed)")
			}
			out = append(out, r)
		}
		return out
	}
	eachServeMode(t, func(t *testing.T, mode testserver.Option) {
		addr := testserver.Start(t, mode).Addr.String()
		for _, in := range []string{
			"*1\r\n$4\r\nPING\r\n",
			"*2\r\n$4\r\nECHO\r\n$10\r\n0123456789\r\n",
			"*01\r\n$4\r\nPING\r\n",
			"*00\r\n",
			"*-0\r\n",
			"*+1\r\n$4\r\nPING\r\n",
			"*-5\r\n",
			"*-9223372036854775808\r\n",
			"*-9223372036854775809\r\n",
			"*1\r\n$04\r\nPING\r\n",
			"*1\r\n$00\r\n\r\n",
			"*1\r\n$-0\r\n",
			"*1\r\n$-1\r\n",
			"*1\r\n$+4\r\nPING\r\n",
			"*1\r\n$4\nPING\r\n",
			"*1\r\n$4x\r\nPING\r\n",
			"*1\r\n$4\r\nPINGxx",
			"*2\r\n$4\r\nECHO\r\n$ 1\r\nx\r\n",
			// Inline requests, split as Redis's sdssplitargs splits them.
			"ECHO \"a\\x41b\\t\\n\\a\\b\\r\\xZZ\"\r\n",
			"ECHO 'a\\'b'\r\n",
			"ECHO 'a\\nb' \"\"\r\n",
			"ECHO \"a\"b\r\n",
			"ECHO 'a'b\r\n",
			"ECHO \"a\r\n",
			"ECHO\ta\r\n",
			"ECHO a\vb\r\n",
			"ECHO a\fb\r\n",
			"\v\fECHO\v\f\"a\"\v\r\n",
			"ECHO a\rb\r\n",
			"   \r\n\n",
			"+PING\r\n",
		} {
			require.Equal(t, replies(raddr, in), replies(addr, in), "%q: Redis's replies, then rlserver's", in)
		}

		// With a password, a connection that has not logged in may send
		// at most 10 arguments of at most 16 KiB; the limits apply from
		// the moment a command is read, so an AUTH earlier in the same
		// read lifts them and a RESET sets them again.
		ctl := rltest.Dial(t, addr)
		defer rd.c.Do("CONFIG", "SET", "requirepass", "")
		for _, c := range []*rltest.Conn{rd.c, ctl} {
			require.Equal(t, "+OK", c.Do("CONFIG", "SET", "requirepass", "secret"))
		}
		del11 := string(rltest.Encode("DEL", "k1", "k2", "k3", "k4", "k5", "k6", "k7", "k8", "k9", "k10"))
		auth := string(rltest.Encode("AUTH", "secret"))
		for _, in := range []string{
			del11,
			"*11\r\n",
			"*2000\r\n",
			"*10\r\n$4\r\nPING\r\n",
			"*-20\r\n",
			"*1\r\n$16385\r\n",
			"*1\r\n$70000\r\n",
			string(rltest.Encode("ECHO", strings.Repeat("x", 16384))),
			string(rltest.Encode("ECHO", strings.Repeat("x", 16385))),
			auth + del11,
			auth + string(rltest.Encode("ECHO", strings.Repeat("x", 16385))),
			string(rltest.Encode("AUTH", "wrong")) + del11,
			auth + string(rltest.Encode("RESET")) + del11,
			"PING a b c d e f g h i j k l\r\n",
		} {
			require.Equal(t, replies(raddr, in), replies(addr, in), "with a password, %.60q: Redis's replies, then rlserver's", in)
		}
		require.Equal(t, "+OK", ctl.Do("CONFIG", "SET", "requirepass", ""))
	})
}

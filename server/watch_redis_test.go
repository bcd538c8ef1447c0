package server_test

import (
	"strconv"
	"strings"
	"testing"

	"github.com/rlserver/rlserver/internal/rltest"
	"github.com/rlserver/rlserver/internal/testserver"
	"github.com/stretchr/testify/require"
)

// TestWatchAsRedis: WATCH and UNWATCH as Redis 7.0's: EXEC runs its queue
// only if no watched key changed since WATCH (written, deleted, or come to
// be), else answers a null array (RESP2 and RESP3); EXEC, DISCARD, UNWATCH
// and RESET forget the keys; WATCH inside MULTI is refused without
// spoiling the transaction. Each script runs on a watcher (w) and another
// connection (o), the replies compared with redis-server's.
func TestWatchAsRedis(t *testing.T) {
	rd := startRedis(t, rltest.Tool(t, "redis-server"))
	p := startRepl(t)
	type step struct {
		other bool // o sends it, not w
		args  []string
	}
	w := func(args ...string) step { return step{false, args} }
	o := func(args ...string) step { return step{true, args} }
	for _, tc := range []struct {
		name  string
		steps []step
		want  string // the watcher's last reply, from rlserver
	}{
		{"unchanged", []step{w("WATCH", "k"), w("MULTI"), w("GET", "k"), w("EXEC")}, `["5"]`},
		{"written", []step{w("WATCH", "k"), o("SET", "k", "6"), w("MULTI"), w("GET", "k"), w("EXEC")}, "(nil-array)"},
		{"written in MULTI", []step{w("WATCH", "k"), w("MULTI"), w("GET", "k"), o("SET", "k", "6"), w("EXEC")}, "(nil-array)"},
		{"deleted", []step{w("WATCH", "k"), o("DEL", "k"), w("MULTI"), w("PING"), w("EXEC")}, "(nil-array)"},
		{"come to be", []step{w("WATCH", "none"), o("SET", "none", "7"), w("MULTI"), w("PING"), w("EXEC")}, "(nil-array)"},
		{"still missing", []step{w("WATCH", "none"), w("MULTI"), w("PING"), w("EXEC")}, `[+PONG]`},
		{"another key", []step{w("WATCH", "k"), o("SET", "k2", "1"), w("MULTI"), w("PING"), w("EXEC")}, `[+PONG]`},
		{"several keys", []step{w("WATCH", "k2", "k", "k"), o("SET", "k", "8"), w("MULTI"), w("PING"), w("EXEC")}, "(nil-array)"},
		{"unwatched", []step{w("WATCH", "k"), w("UNWATCH"), o("SET", "k", "8"), w("MULTI"), w("PING"), w("EXEC")}, `[+PONG]`},
		{"discarded", []step{w("WATCH", "k"), w("MULTI"), w("DISCARD"), o("SET", "k", "9"), w("MULTI"), w("PING"), w("EXEC")}, `[+PONG]`},
		{"reset", []step{w("WATCH", "k"), w("RESET"), o("SET", "k", "3"), w("MULTI"), w("PING"), w("EXEC")}, `[+PONG]`},
		{"forgotten after EXEC", []step{w("WATCH", "k"), o("SET", "k", "4"), w("MULTI"), w("PING"), w("EXEC"), o("SET", "k", "5"), w("MULTI"), w("PING"), w("EXEC")}, `[+PONG]`},
		{"inside MULTI", []step{w("MULTI"), w("WATCH", "k"), w("PING"), w("EXEC")}, `[+PONG]`},
		{"UNWATCH queued", []step{w("WATCH", "k"), w("MULTI"), w("UNWATCH"), w("EXEC")}, `[+OK]`},
		{"no key", []step{w("WATCH")}, "-ERR wrong number of arguments for 'watch' command"},
		{"RESP3", []step{w("HELLO", "3"), w("WATCH", "k"), o("SET", "k", "6"), w("MULTI"), w("PING"), w("EXEC")}, "(nil)"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			var got [2][]string
			for i, n := range []*replNode{rd, p} {
				require.Equal(t, "+OK", n.c.Do("SET", "k", "5"))
				n.c.Do("DEL", "k2", "none")
				addr := "127.0.0.1:" + strconv.Itoa(n.port)
				wc, oc := rltest.Dial(t, addr), rltest.Dial(t, addr)
				for _, s := range tc.steps {
					c := wc
					if s.other {
						c = oc
					}
					r := c.Do(s.args...)
					if s.args[0] == "HELLO" {
						r = "(a map)"
					}
					got[i] = append(got[i], r)
				}
				wc.Close()
				oc.Close()
			}
			require.Equal(t, got[0], got[1], "Redis's replies, then rlserver's")
			require.Equal(t, tc.want, got[1][len(got[1])-1])
		})
	}
}

// TestWatchLimiterKeys: WATCH on limiter keys, on the manual clock. A
// decision that charges a watched key makes EXEC answer a null array; one
// that changes nothing (a cost-0 peek, a refused CL.THROTTLE) does not,
// nor does time alone while the key lives; the key's expiry does.
func TestWatchLimiterKeys(t *testing.T) {
	s := testserver.Start(t)
	w, o := rltest.Dial(t, s.Addr.String()), rltest.Dial(t, s.Addr.String())
	tx := func(between ...[]string) string {
		t.Helper()
		require.Equal(t, "+OK", w.Do("WATCH", "f", "g"))
		for _, args := range between {
			o.Do(args...)
		}
		require.Equal(t, "+OK", w.Do("MULTI"))
		require.Equal(t, "+QUEUED", w.Do("PING"))
		return w.Do("EXEC")
	}
	require.Contains(t, o.Do("RL.FIXED", "f", "2", "30s"), "[0 2 1 -1 ")
	require.Equal(t, "[0 1 0 -1 2]", o.Do("CL.THROTTLE", "g", "0", "1", "2"))
	for _, tc := range []struct {
		name    string
		between [][]string
		want    string
	}{
		{"nothing", nil, "[+PONG]"},
		{"a charge", [][]string{{"RL.FIXED", "f", "2", "30s"}}, "(nil-array)"},
		{"a peek", [][]string{{"RL.FIXED", "f", "2", "30s", "COST", "0"}}, "[+PONG]"},
		{"a refusal", [][]string{{"CL.THROTTLE", "g", "0", "1", "2"}}, "[+PONG]"},
		{"time", [][]string{{"DEBUG", "CLOCK", "ADVANCE", "1000"}}, "[+PONG]"},
		{"another key", [][]string{{"RL.FIXED", "h", "2", "30s"}}, "[+PONG]"},
		{"an expiry", [][]string{{"DEBUG", "CLOCK", "ADVANCE", "5000"}}, "(nil-array)"}, // g's 2 s are up
		{"RL.ALL", [][]string{{"RL.ALL", "h", "FIXED", "9", "1m", "AND", "f", "FIXED", "9", "1m"}}, "(nil-array)"},
	} {
		require.Equal(t, tc.want, tx(tc.between...), tc.name)
	}
}

// TestKeyAccessAsRedis: with only write access to its keys (%W~), a user
// may run what Redis 7.0 lets it run on them: the commands whose key spec
// reads no value (EXISTS, TYPE, WATCH, OBJECT, MEMORY USAGE), DEL, and SET
// without GET, not GET or PTTL; with only read access (%R~), the reverse
// of DEL and SET.
func TestKeyAccessAsRedis(t *testing.T) {
	rd := startRedis(t, rltest.Tool(t, "redis-server"))
	p := startRepl(t)
	for _, rule := range []string{"%W~k*", "%R~k*"} {
		var got [2][]string
		for i, n := range []*replNode{rd, p} {
			require.Equal(t, "+OK", n.c.Do("ACL", "SETUSER", "u", "reset", "on", ">pw", "+@all", rule))
			c := rltest.Dial(t, "127.0.0.1:"+strconv.Itoa(n.port))
			require.Equal(t, "+OK", c.Do("AUTH", "u", "pw"))
			for _, args := range [][]string{{"EXISTS", "k"}, {"TYPE", "k"}, {"GET", "k"}, {"PTTL", "k"}, {"OBJECT", "ENCODING", "k"},
				{"MEMORY", "USAGE", "k"}, {"DEL", "k"}, {"WATCH", "k"}, {"UNLINK", "k"}, {"SET", "k", "1"}, {"SET", "k", "2", "GET"},
				{"SET", "k", "3", "EX", "100", "get"}, {"SET", "k", "4", "GETX"}} {
				r := c.Do(args...)
				if _, err := strconv.Atoi(r); err == nil && args[0] == "MEMORY" {
					r = "(bytes)" // each server's own layout
				}
				got[i] = append(got[i], strings.Join(args, " ")+": "+r)
			}
			c.Close()
		}
		require.Equal(t, got[0], got[1], "%s: Redis's replies, then rlserver's", rule)
	}
}

// TestClientTrackingAsRedis: the CLIENT subcommands about blocking and
// client-side caching answer as Redis 7.0's does for a connection that is
// neither blocked nor tracking: UNBLOCK unblocks nobody (no command
// blocks here), once its arguments are checked in Redis's order,
// GETREDIR has no redirection, TRACKINGINFO says off (RESP2 and RESP3).
// Tracking on is TestTrackingAsRedis's.
func TestClientTrackingAsRedis(t *testing.T) {
	rd := startRedis(t, rltest.Tool(t, "redis-server"))
	p := startRepl(t)
	script := [][]string{
		{"CLIENT", "UNBLOCK", "1"}, {"CLIENT", "UNBLOCK", "1", "TIMEOUT"}, {"CLIENT", "UNBLOCK", "1", "error"},
		{"CLIENT", "UNBLOCK", "1", "x"}, {"CLIENT", "UNBLOCK", "x", "x"}, {"CLIENT", "UNBLOCK", "x"}, {"CLIENT", "UNBLOCK", "+1"},
		{"CLIENT", "UNBLOCK", "1", "TIMEOUT", "x"}, {"CLIENT", "UNBLOCK"}, {"CLIENT", "GETREDIR"}, {"CLIENT", "GETREDIR", "x"},
		{"CLIENT", "TRACKINGINFO"}, {"CLIENT", "TRACKINGINFO", "x"}, {"HELLO", "3"}, {"CLIENT", "TRACKINGINFO"},
	}
	var got [2][]string
	for i, n := range []*replNode{rd, p} {
		c := rltest.Dial(t, "127.0.0.1:"+strconv.Itoa(n.port))
		for _, args := range script {
			r := c.Do(args...)
			if args[0] == "HELLO" {
				r = "(a map)"
			}
			got[i] = append(got[i], r)
		}
		c.Close()
	}
	require.Equal(t, got[0], got[1], "Redis's replies, then rlserver's")
	require.Equal(t, `{"flags": ~["off"], "redirect": -1, "prefixes": []}`, got[1][len(got[1])-1])
}

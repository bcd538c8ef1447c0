package server_test

import (
	"strings"
	"testing"

	"github.com/rlserver/rlserver/internal/rltest"
	"github.com/stretchr/testify/require"
)

// TestIntegersAsRedis: the Redis commands read their integer arguments as
// Redis 7.0 does (string2ll): "+1", "01", "-0" and "+0" are not integers,
// and each command answers them with Redis's error; "1" either both take
// or both refuse with the same error. (rlserver's own
// commands, CL.THROTTLE and the RL.* family, take a sign as redis-cell
// does: docs/cl-throttle.md.)
func TestIntegersAsRedis(t *testing.T) {
	rd := startRedis(t, rltest.Tool(t, "redis-server"))
	p := startRepl(t)
	compared := 0
	for _, v := range []string{"+1", "01", "-0", "+0", "1"} {
		// SELECT's values name database 0: there is no other.
		for _, args := range [][]string{
			{"SLOWLOG", "GET", v}, {"SCAN", "0", "COUNT", v}, {"SET", "k", "5", "EX", v}, {"SET", "k", "5", "PX", v},
			{"HELLO", v}, {"MEMORY", "USAGE", "k", "SAMPLES", v}, {"CLIENT", "KILL", "ID", v}, {"CLIENT", "LIST", "ID", v},
			{"WAIT", v, "1"}, {"WAIT", "0", v}, {"ACL", "GENPASS", v}, {"ACL", "LOG", v}, {"CLIENT", "PAUSE", v},
			{"CLIENT", "UNPAUSE"}, {"SELECT", strings.ReplaceAll(v, "1", "0")}, {"REPLCONF", "listening-port", v}, {"FAILOVER", "TIMEOUT", v},
			{"CONFIG", "SET", "slowlog-max-len", v}, {"CONFIG", "SET", "slowlog-max-len", "128"},
		} {
			want, got := rd.c.Do(args...), p.c.Do(args...)
			if want[0] != '-' && got[0] != '-' {
				// Both took the value: what they answer depends on their
				// state (the slow log, the clients), not on the reading.
				want, got = "(taken)", "(taken)"
			}
			require.Equal(t, want, got, "%q: Redis's reply, then rlserver's", args)
			compared++
		}
	}
	require.Equal(t, 95, compared)
}

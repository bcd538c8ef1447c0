//go:build unix

package server_test

import (
	"net"
	"os/exec"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/rlserver/rlserver/commands"
	"github.com/rlserver/rlserver/internal/rltest"
	"github.com/stretchr/testify/require"
)

// TestFailoverRefusalsAsRedis sends the same FAILOVER calls to Redis 7
// (redis-server, a primary with a replica) and to rlserver, and requires
// the same answers: the syntax, each option's checks, and the refusals
// in Redis's order. None starts a failover (each is refused, or is an
// ABORT with none running).
func TestFailoverRefusalsAsRedis(t *testing.T) {
	server := rltest.Tool(t, "redis-server")
	rp, rr := startRedis(t, server), startRedis(t, server)
	require.Equal(t, "+OK", rr.c.Do("REPLICAOF", "127.0.0.1", strconv.Itoa(rp.port)))
	rltest.WaitLinkUp(t, rr.c)
	p, r := startRepl(t), startRepl(t)
	follow(t, r, p)

	cases := [][]string{
		{"FAILOVER", "ABORT"},
		{"FAILOVER", "abort"},
		{"FAILOVER", "ABORT", "TIMEOUT", "5"},
		{"FAILOVER", "TIMEOUT", "0"},
		{"FAILOVER", "TIMEOUT", "-1"},
		{"FAILOVER", "TIMEOUT", "soon"},
		{"FAILOVER", "TIMEOUT", "5", "TIMEOUT", "6"},
		{"FAILOVER", "TIMEOUT"},
		{"FAILOVER", "TO", "127.0.0.1"},
		{"FAILOVER", "TO", "127.0.0.1", "port"},
		{"FAILOVER", "TO", "127.0.0.1", "1", "TO", "127.0.0.1", "2"},
		{"FAILOVER", "FORCE", "FORCE"},
		{"FAILOVER", "BOGUS"},
		{"FAILOVER", "FORCE"},
		{"FAILOVER", "FORCE", "TIMEOUT", "100"},
		{"FAILOVER", "TO", "127.0.0.1", "1", "FORCE"},
		{"FAILOVER", "TO", "127.0.0.1", "1"},
		{"FAILOVER", "TO", "localhost", "<replica>"},
		{"FAILOVER", "TO", "127.0.0.1", "1", "TIMEOUT", "100", "FORCE"},
	}
	onReplica := [][]string{
		{"FAILOVER"},
		{"FAILOVER", "TO", "127.0.0.1", "1"},
		{"FAILOVER", "FORCE"},
		{"FAILOVER", "ABORT"},
		{"FAILOVER", "TIMEOUT", "0"},
	}
	for _, tc := range []struct {
		name      string
		redis, rl *replNode
		cases     [][]string
	}{
		{"a primary", rp, p, cases},
		{"a replica", rr, r, onReplica},
	} {
		for _, args := range tc.cases {
			want := tc.redis.c.Do(slicesReplace(args, "<replica>", strconv.Itoa(rr.port))...)
			got := tc.rl.c.Do(slicesReplace(args, "<replica>", strconv.Itoa(r.port))...)
			require.Equal(t, want, got, "%s: %q", tc.name, args)
		}
	}
	require.Equal(t, "no-failover", rltest.Info(t, p.c, "replication")["master_failover_state"])

	alone, ralone := startRepl(t), startRedis(t, server)
	for _, args := range [][]string{{"FAILOVER"}, {"FAILOVER", "FORCE"}, {"FAILOVER", "TO", "127.0.0.1", "1"},
		{"MULTI"}, {"FAILOVER"}, {"FAILOVER", "ABORT"}, {"EXEC"}} {
		require.Equal(t, ralone.c.Do(args...), alone.c.Do(args...), "without replicas: %q", args)
	}
}

// startRedis runs redis-server on a free loopback port, in memory only,
// and stops it when the test ends.
func startRedis(t *testing.T, bin string) *replNode {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	require.NoError(t, err)
	port := ln.Addr().(*net.TCPAddr).Port
	ln.Close()
	cmd := exec.Command(bin, "--port", strconv.Itoa(port), "--bind", "127.0.0.1", "--save", "", "--appendonly", "no",
		"--dir", t.TempDir(), "--repl-diskless-sync-delay", "0")
	require.NoError(t, cmd.Start())
	t.Cleanup(func() {
		cmd.Process.Kill()
		cmd.Wait()
	})
	rltest.WaitFor(t, 10*time.Second, "redis-server to listen", func() (bool, string) {
		nc, err := net.DialTimeout("tcp", "127.0.0.1:"+strconv.Itoa(port), time.Second)
		if err != nil {
			return false, err.Error()
		}
		nc.Close()
		return true, ""
	})
	return &replNode{c: rltest.Dial(t, "127.0.0.1:"+strconv.Itoa(port)), port: port}
}

// TestClientPauseAsRedis: CLIENT PAUSE's and UNPAUSE's checks answer as
// Redis 7.0's, in its order. The pauses that pass are 1 ms long.
func TestClientPauseAsRedis(t *testing.T) {
	rd := startRedis(t, rltest.Tool(t, "redis-server"))
	p := startRepl(t)
	for _, args := range [][]string{
		{"CLIENT", "PAUSE"},
		{"CLIENT", "PAUSE", "abc"},
		{"CLIENT", "PAUSE", "-1"},
		{"CLIENT", "PAUSE", "abc", "bogus"},
		{"CLIENT", "PAUSE", "-1", "bogus"},
		{"CLIENT", "PAUSE", "10", "bogus", "x"},
		{"CLIENT", "PAUSE", "abc", "x", "y"},
		{"CLIENT", "PAUSE", "1", "write"},
		{"CLIENT", "PAUSE", "1", "ALL"},
		{"CLIENT", "PAUSE", "1"},
		{"CLIENT", "UNPAUSE"},
		{"CLIENT", "UNPAUSE", "x"},
	} {
		require.Equal(t, rd.c.Do(args...), p.c.Do(args...), "%q", args)
	}
}

// TestConfigSetAsRedis: CONFIG SET of the parameters both servers can
// change answers as Redis 7.0's does, for good values and bad: the same
// bounds and the same words. After each value taken, the parameter goes
// back to its value before, on both.
func TestConfigSetAsRedis(t *testing.T) {
	rd := startRedis(t, rltest.Tool(t, "redis-server"))
	p := startRepl(t)
	values := []string{"abc", "", "-2", "-1", "0", "1", "+5", "007", "-0", "1.5", "1gb", "-5mb",
		"2147483647", "2147483648", "4294967295", "4294967296", "9223372036854775807", "9223372036854775808",
		"99999999999999999999"}
	for _, tc := range []struct {
		name string
		skip []string // values rlserver refuses where Redis takes them, by design
	}{
		// Redis lowers a large limit of files sixteen at a time: minutes.
		{name: "maxclients", skip: []string{"2147483647", "2147483648", "4294967295"}},
		{name: "timeout"},
		{name: "shutdown-timeout"},
		{name: "slowlog-log-slower-than"},
		{name: "slowlog-max-len"},
		{name: "latency-monitor-threshold"},
		{name: "tracking-table-max-keys"},
		// rlserver's sizes stop at int64 and take no empty value.
		{name: "maxmemory", skip: []string{"", "9223372036854775808", "99999999999999999999"}},
		// rlserver also takes slog's names of the levels.
		{name: "loglevel", skip: []string{"info"}},
		{name: "protected-mode"},
	} {
		conns := []*rltest.Conn{rd.c, p.c}
		var before [2]string // each server's value, put back after each value taken
		for i, c := range conns {
			was := c.Do("CONFIG", "GET", tc.name)
			v, err := strconv.Unquote(strings.TrimSuffix(strings.TrimPrefix(was, `["`+tc.name+`" `), "]"))
			require.NoError(t, err, was)
			before[i] = v
		}
		for _, v := range append(values, "yes", "no", "notice", "WARNING", "info") {
			if slices.Contains(tc.skip, v) {
				continue
			}
			got := rd.c.Do("CONFIG", "SET", tc.name, v)
			require.Equal(t, got, p.c.Do("CONFIG", "SET", tc.name, v), "CONFIG SET %s %q: Redis's answer, then rlserver's", tc.name, v)
			if got == "+OK" {
				for i, c := range conns {
					require.Equal(t, "+OK", c.Do("CONFIG", "SET", tc.name, before[i]))
				}
			}
		}
	}
	// A parameter named twice, in any case: nothing is set.
	for _, args := range [][]string{
		{"CONFIG", "SET", "slowlog-max-len", "7"},
		{"CONFIG", "SET", "slowlog-max-len", "5", "SLOWLOG-MAX-LEN", "6"},
		{"CONFIG", "SET", "slowlog-max-len", "5", "timeout", "0", "slowlog-max-len", "6"},
		{"CONFIG", "GET", "slowlog-max-len"},
	} {
		require.Equal(t, rd.c.Do(args...), p.c.Do(args...), "%q: Redis's answer, then rlserver's", args)
	}
}

// TestClientListAsRedis: CLIENT LIST's filters read as Redis 7.0's, and
// TYPE pubsub lists the connections with subscriptions, TYPE normal the
// others. The lines' fields differ between the servers (rlserver's
// memory, its lib-name); their flags and count do not.
func TestClientListAsRedis(t *testing.T) {
	rd := startRedis(t, rltest.Tool(t, "redis-server"))
	p := startRepl(t)
	flags := func(list string) []string {
		var out []string
		for _, f := range strings.Fields(list) {
			if strings.HasPrefix(f, "flags=") {
				out = append(out, f)
			}
		}
		return out
	}
	for _, n := range []*replNode{rd, p} {
		sub := rltest.Dial(t, "127.0.0.1:"+strconv.Itoa(n.port))
		require.Equal(t, `["subscribe" "ch" 1]`, sub.Do("SUBSCRIBE", "ch"))
	}
	for _, args := range [][]string{
		{"CLIENT", "LIST", "TYPE"},
		{"CLIENT", "LIST", "TYPE", "bogus"},
		{"CLIENT", "LIST", "ID"},
		{"CLIENT", "LIST", "ID", "abc"},
		{"CLIENT", "LIST", "ID", "0"},
		{"CLIENT", "LIST", "ID", "-5", "99999"},
		{"CLIENT", "LIST", "TYPE", "normal", "ID", "1"},
		{"CLIENT", "LIST", "ID", "1", "TYPE", "normal"},
		{"CLIENT", "LIST", "BOGUS"},
		{"CLIENT", "LIST", "TYPE", "master"},
		{"CLIENT", "LIST", "TYPE", "replica"},
	} {
		require.Equal(t, rd.c.Do(args...), p.c.Do(args...), "%q", args)
	}
	for _, typ := range []string{"pubsub", "PUBSUB", "normal"} {
		want := flags(rd.c.Do("CLIENT", "LIST", "TYPE", typ))
		require.NotEmpty(t, want, typ)
		require.Equal(t, want, flags(p.c.Do("CLIENT", "LIST", "TYPE", typ)), "CLIENT LIST TYPE %s: Redis's flags, then rlserver's", typ)
	}
}

// TestExecRefusedAsRedis: an EXEC that the checks before any command
// refuse (its arity, the user's permissions, a subscribed connection, the
// login) answers EXECABORT with the refusal, and discards the transaction,
// as Redis's execCommandAbort does; a refused DISCARD leaves it open. Each
// script runs on a new connection to each server.
func TestExecRefusedAsRedis(t *testing.T) {
	rd := startRedis(t, rltest.Tool(t, "redis-server"))
	p := startRepl(t)
	for _, n := range []*replNode{rd, p} {
		require.Equal(t, "+OK", n.c.Do("ACL", "SETUSER", "noexec", "on", "nopass", "+@all", "-exec", "~*", "&*"))
	}
	for _, script := range [][][]string{
		{{"EXEC", "x"}},
		{{"MULTI"}, {"PING"}, {"EXEC", "x"}, {"EXEC"}, {"DISCARD"}},
		{{"MULTI"}, {"PING"}, {"DISCARD", "x"}, {"DISCARD"}, {"DISCARD"}},
		{{"AUTH", "noexec", "x"}, {"MULTI"}, {"PING"}, {"EXEC"}, {"DISCARD"}, {"EXEC"}},
		{{"MULTI"}, {"PING"}, {"SUBSCRIBE", "ch"}, {"EXEC"}, {"MULTI"}, {"EXEC"}, {"DISCARD"}},
	} {
		var got [2][]string
		for i, n := range []*replNode{rd, p} {
			c := rltest.Dial(t, "127.0.0.1:"+strconv.Itoa(n.port))
			for _, args := range script {
				got[i] = append(got[i], c.Do(args...))
			}
			c.Close()
		}
		require.Equal(t, got[0], got[1], "%q: Redis's replies, then rlserver's", script)
	}
	// Before the login, with a password.
	defer rd.c.Do("CONFIG", "SET", "requirepass", "")
	var got [2][]string
	for i, n := range []*replNode{rd, p} {
		require.Equal(t, "+OK", n.c.Do("CONFIG", "SET", "requirepass", "secret"))
		c := rltest.Dial(t, "127.0.0.1:"+strconv.Itoa(n.port))
		got[i] = []string{c.Do("EXEC"), c.Do("MULTI"), c.Do("AUTH", "secret"), c.Do("EXEC")}
		c.Close()
	}
	require.Equal(t, got[0], got[1], "before the login: Redis's replies, then rlserver's")
	require.Equal(t, "+OK", p.c.Do("CONFIG", "SET", "requirepass", ""))
}

// TestSlowlogAsRedis: the slow log holds a transaction's commands, one by
// one, and not EXEC itself (Redis's skip_slowlog), in Redis's order.
func TestSlowlogAsRedis(t *testing.T) {
	rd := startRedis(t, rltest.Tool(t, "redis-server"))
	p := startRepl(t)
	argvs := regexp.MustCompile(`\[("(?:[^"\\]|\\.)*"(?: "(?:[^"\\]|\\.)*")*)\]`)
	var got [2][]string
	for i, n := range []*replNode{rd, p} {
		c := n.c
		require.Equal(t, "+OK", c.Do("CONFIG", "SET", "slowlog-max-len", "128"))
		require.Equal(t, "+OK", c.Do("CONFIG", "SET", "slowlog-log-slower-than", "0"))
		require.Equal(t, "+OK", c.Do("SLOWLOG", "RESET"))
		for _, args := range [][]string{{"MULTI"}, {"PING"}, {"ECHO", "a"}, {"EXEC"}, {"CONFIG", "SET", "slowlog-log-slower-than", "10000"}} {
			c.Do(args...)
		}
		for _, m := range argvs.FindAllStringSubmatch(c.Do("SLOWLOG", "GET", "-1"), -1) {
			got[i] = append(got[i], m[1])
		}
	}
	require.Equal(t, got[0], got[1], "the slow log: Redis's, then rlserver's")
	require.Equal(t, []string{`"ECHO" "a"`, `"PING"`, `"MULTI"`, `"SLOWLOG" "RESET"`}, got[1])
}

// TestCommandInfoAsRedis: COMMAND INFO reports, for every command and
// subcommand that both servers have, Redis 7.0.15's arity, flags (in
// Redis's order) and key positions. Cluster clients read these.
func TestCommandInfoAsRedis(t *testing.T) {
	rd := startRedis(t, rltest.Tool(t, "redis-server"))
	p := startRepl(t)
	// rlserver's own: REPLCONF is refused inside MULTI (its ACK answers
	// nothing, which EXEC's array cannot hold).
	differs := map[string]string{"replconf": "no_multi"}
	head := regexp.MustCompile(`^\[\["([^"]+)" (-?\d+) \[([^\]]*)\] (-?\d+) (-?\d+) (-?\d+) `)
	compared := 0
	for _, c := range commands.NewTable().All() {
		want := head.FindStringSubmatch(rd.c.Do("COMMAND", "INFO", c.Name))
		if want == nil {
			continue // not a Redis command
		}
		got := head.FindStringSubmatch(p.c.Do("COMMAND", "INFO", c.Name))
		require.NotNil(t, got, c.Name)
		if f, ok := differs[c.Name]; ok {
			got[3] = strings.TrimSpace(strings.Replace(got[3], "+"+f, "", 1))
			got[3] = strings.Join(strings.Fields(got[3]), " ")
		}
		require.Equal(t, want[1:], got[1:], "COMMAND INFO %s: Redis's name, arity, flags and keys, then rlserver's", c.Name)
		// The key specs' flags, which the users' rules read too (a key
		// spec without access needs no read permission); a container's
		// are its subcommands', each compared on its own.
		if c.Sub == nil {
			// And the tips: the array after the categories.
			tips := regexp.MustCompile(`^\[\["[^"]+" -?\d+ \[[^\]]*\] -?\d+ -?\d+ -?\d+ \[[^\]]*\] (\[[^\]]*\])`)
			wt, gt := tips.FindStringSubmatch(rd.c.Do("COMMAND", "INFO", c.Name)), tips.FindStringSubmatch(p.c.Do("COMMAND", "INFO", c.Name))
			require.True(t, wt != nil && gt != nil, "COMMAND INFO %s: no tips found", c.Name)
			require.Equal(t, wt[1], gt[1], "COMMAND INFO %s: Redis's tips, then rlserver's", c.Name)
			specs := regexp.MustCompile(`"flags" \[([^\]]*)\]`)
			require.Equal(t, specs.FindAllString(rd.c.Do("COMMAND", "INFO", c.Name), -1), specs.FindAllString(p.c.Do("COMMAND", "INFO", c.Name), -1),
				"COMMAND INFO %s: Redis's key specs' flags, then rlserver's", c.Name)
		}
		compared++
	}
	require.Greater(t, compared, 50)
	// RESP3: the same shapes, sets where Redis sends sets (flags,
	// categories, tips, key specs), whole replies of commands without
	// tips whose key specs both describe alike.
	for _, n := range []*replNode{rd, p} {
		n.c.Do("HELLO", "3")
	}
	for _, name := range []string{"get", "exists", "ping", "echo", "del", "pttl", "client|id", "dbsize", "keys", "wait", "unlink", "time", "flushall"} {
		require.Equal(t, rd.c.Do("COMMAND", "INFO", name), p.c.Do("COMMAND", "INFO", name), "RESP3 COMMAND INFO %s: Redis's, then rlserver's", name)
	}
}

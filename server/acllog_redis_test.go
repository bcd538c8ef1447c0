package server_test

import (
	"regexp"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/rlserver/rlserver/internal/rltest"
	"github.com/stretchr/testify/require"
)

// TestACLLogAsRedis: ACL LOG holds what Redis 7.0.15's holds after the
// same refusals and failed logins, in its order, with its counts,
// contexts, objects and users: a key, a command and a channel refused, a
// refusal repeated (one entry, counted twice), one queued in MULTI, one
// at EXEC after the rules changed, logins failed with AUTH (as the
// client spelled it) and HELLO. Of each entry's client line the fields
// both servers have the same meaning for are compared (flags, multi,
// cmd, user, resp); its age is checked to be a number of seconds. Then
// LOG's arguments, RESP3's map and double, acllog-max-len and RESET.
func TestACLLogAsRedis(t *testing.T) {
	rd := startRedis(t, rltest.Tool(t, "redis-server"))
	p := startRepl(t)
	age := regexp.MustCompile(`"age-seconds"(:? ,| )"?([0-9.e+-]+)"?`)
	info := regexp.MustCompile(`"client-info"(:? | )"(id=[^"]*)"`)
	keep := map[string]bool{"flags": true, "multi": true, "cmd": true, "user": true, "resp": true}
	norm := func(reply string) string {
		for _, m := range age.FindAllStringSubmatch(reply, -1) {
			s, err := strconv.ParseFloat(m[2], 64)
			require.NoError(t, err, "age-seconds %q", m[2])
			require.True(t, s >= 0 && s < 60, "age-seconds %v", s)
		}
		reply = age.ReplaceAllString(reply, `"age-seconds"${1}AGE`)
		return info.ReplaceAllStringFunc(reply, func(s string) string {
			m := info.FindStringSubmatch(s)
			var fields []string
			for _, f := range strings.Fields(m[2]) {
				if k, _, _ := strings.Cut(f, "="); keep[k] {
					fields = append(fields, f)
				}
			}
			return `"client-info"` + m[1] + `"` + strings.Join(fields, " ") + `"`
		})
	}
	var got [2][]string
	for i, n := range []*replNode{rd, p} {
		admin := n.c
		addr := "127.0.0.1:" + strconv.Itoa(n.port)
		require.Equal(t, "+OK", admin.Do("CONFIG", "SET", "acllog-max-len", "128"))
		require.Equal(t, "+OK", admin.Do("ACL", "LOG", "RESET"))
		require.Equal(t, "+OK", admin.Do("ACL", "SETUSER", "alice", "on", ">pw", "+get", "+multi", "+exec", "+discard", "+publish", "~k*", "&ch*"))
		a := rltest.Dial(t, addr)
		for _, args := range [][]string{
			{"AUTH", "alice", "pw"}, {"GET", "x"}, {"SET", "k1", "v"}, {"GET", "x"}, {"PUBLISH", "other", "m"},
			{"MULTI"}, {"GET", "y"}, {"DISCARD"},
			{"AUTH", "alice", "bad"}, {"auth", "nosuch", "pw"}, {"HELLO", "2", "AUTH", "bob", "x"},
			{"MULTI"}, {"GET", "k1"},
		} {
			a.Do(args...)
		}
		require.Equal(t, "+OK", admin.Do("ACL", "SETUSER", "alice", "resetkeys", "~z*"))
		require.Contains(t, a.Do("EXEC"), "NOPERM ACLs rules changed")
		a.Close()
		for _, args := range [][]string{
			{"ACL", "LOG"}, {"ACL", "LOG", "2"}, {"ACL", "LOG", "-1"}, {"ACL", "LOG", "0"}, {"ACL", "LOG", "x"},
			{"ACL", "LOG", "1", "2"}, {"ACL", "LOG", "+1"},
		} {
			got[i] = append(got[i], norm(admin.Do(args...)))
		}
		b := rltest.Dial(t, addr)
		b.Do("HELLO", "3")
		got[i] = append(got[i], norm(b.Do("ACL", "LOG", "1")))
		b.Close()
		// A shorter log keeps its entries until the next refusal.
		require.Equal(t, "+OK", admin.Do("CONFIG", "SET", "acllog-max-len", "2"))
		got[i] = append(got[i], norm(admin.Do("ACL", "LOG", "100")))
		c := rltest.Dial(t, addr)
		c.Do("AUTH", "nobody", "x")
		c.Close()
		got[i] = append(got[i], norm(admin.Do("ACL", "LOG", "100")), admin.Do("ACL", "LOG", "RESET"), admin.Do("ACL", "LOG"))
		require.Equal(t, "+OK", admin.Do("CONFIG", "SET", "acllog-max-len", "128"))
	}
	for j := range got[0] {
		require.Equal(t, got[0][j], got[1][j], "reply %d: Redis's, then rlserver's", j)
	}
	// What rlserver's log says, in case both servers agree on nothing.
	require.Contains(t, got[1][0], `"count" 2 "reason" "key" "context" "toplevel" "object" "x" "username" "alice"`)
	require.Contains(t, got[1][0], `"reason" "key" "context" "multi" "object" "k1" "username" "alice" "age-seconds" AGE "client-info" "flags=x multi=1 cmd=exec user=alice resp=2"`)
	require.Contains(t, got[1][0], `"reason" "auth" "context" "toplevel" "object" "HELLO" "username" "bob"`)
	require.Equal(t, 8, strings.Count(got[1][0], `"count"`))
	// Each refusal counted by reason, as Redis 7.2's INFO counts them
	// (7.0.15 has no such fields): three failed logins, one command, four
	// keys (x twice, y, k1 at EXEC), one channel, then the last login.
	stats := p.c.Do("INFO", "stats")
	for _, f := range []string{"acl_access_denied_auth:4", "acl_access_denied_cmd:1", "acl_access_denied_key:4", "acl_access_denied_channel:1"} {
		require.Contains(t, stats, f)
	}
	require.Equal(t, "+OK", p.c.Do("CONFIG", "RESETSTAT"))
	require.Contains(t, p.c.Do("INFO", "stats"), "acl_access_denied_auth:0")
	require.Equal(t, 2, strings.Count(got[1][len(got[1])-3], `"count"`))
}

// TestClientCmdAsRedis: CLIENT LIST's cmd= names a connection's last
// command as Redis 7.0 does: as soon as the command is found, so also
// one refused (arity, rules), NULL for a name or subcommand it does not
// know, and EXEC (flags x, its queue's length in multi=) for a command
// queued in MULTI while EXEC runs it.
func TestClientCmdAsRedis(t *testing.T) {
	rd := startRedis(t, rltest.Tool(t, "redis-server"))
	p := startRepl(t)
	field := regexp.MustCompile(`(?:^|\\n|\s)((?:flags|multi|cmd)=\S*)`)
	var got [2][]string
	for i, n := range []*replNode{rd, p} {
		c := rltest.Dial(t, "127.0.0.1:"+strconv.Itoa(n.port))
		c.Do("CLIENT", "SETNAME", "probe")
		for _, args := range [][]string{{"FOO"}, {"PING"}, {"CONFIG", "NOPE"}, {"GET"}, {"CONFIG"}, {"ECHO", "a"}, {"MULTI"}, {"PING"}} {
			c.Do(args...)
			var mine string
			for _, l := range strings.Split(n.c.Do("CLIENT", "LIST"), `\n`) {
				if strings.Contains(l, " name=probe ") {
					mine = l
				}
			}
			var fs []string
			for _, m := range field.FindAllStringSubmatch(mine, -1) {
				fs = append(fs, m[1])
			}
			got[i] = append(got[i], strings.Join(args, " ")+": "+strings.Join(fs, " "))
		}
		require.Equal(t, "+QUEUED", c.Do("CLIENT", "INFO"))
		var fs []string
		for _, m := range field.FindAllStringSubmatch(c.Do("EXEC"), -1) {
			fs = append(fs, m[1])
		}
		got[i] = append(got[i], "EXEC: "+strings.Join(fs, " "))
		c.Close()
	}
	require.Equal(t, got[0], got[1], "Redis's, then rlserver's")
	require.Equal(t, "FOO: flags=N multi=-1 cmd=NULL", got[1][0])
	require.Equal(t, "GET: flags=N multi=-1 cmd=get", got[1][3])
	require.Equal(t, "PING: flags=x multi=1 cmd=ping", got[1][7])
	require.Equal(t, "EXEC: flags=x multi=2 cmd=exec", got[1][8])
}

// TestCommandListAsRedis: COMMAND LIST names the subcommands too
// ("config|get"), and its FILTERBY (MODULE, ACLCAT, PATTERN, once, last)
// keeps what Redis 7.0's keeps: the same names of the commands both
// servers have, and Redis's syntax errors.
func TestCommandListAsRedis(t *testing.T) {
	rd := startRedis(t, rltest.Tool(t, "redis-server"))
	p := startRepl(t)
	names := func(reply string) map[string]bool {
		m := map[string]bool{}
		for _, q := range regexp.MustCompile(`"[^"]*"`).FindAllString(reply, -1) {
			n, err := strconv.Unquote(q)
			require.NoError(t, err)
			m[n] = true
		}
		return m
	}
	all := [2]map[string]bool{names(rd.c.Do("COMMAND", "LIST")), names(p.c.Do("COMMAND", "LIST"))}
	require.True(t, all[1]["config|get"] && all[1]["acl|log"] && all[1]["cl.throttle"], "rlserver's list: %v", all[1])
	for _, filter := range [][]string{
		{}, {"FILTERBY", "PATTERN", "config*"}, {"FILTERBY", "PATTERN", "*L*"}, {"filterby", "aclcat", "Admin"},
		{"FILTERBY", "ACLCAT", "fast"}, {"FILTERBY", "ACLCAT", "nope"}, {"FILTERBY", "MODULE", "nope"},
		{"FILTERBY", "PATTERN"}, {"FILTERBY", "NOPE", "x"}, {"FILTERBY", "PATTERN", "x", "FILTERBY", "PATTERN", "y"}, {"x"},
	} {
		args := append([]string{"COMMAND", "LIST"}, filter...)
		want, got := rd.c.Do(args...), p.c.Do(args...)
		if want[0] == '-' || got[0] == '-' {
			require.Equal(t, want, got, "%q: Redis's reply, then rlserver's", args)
			continue
		}
		var w, g []string
		for n := range names(want) {
			if all[1][n] {
				w = append(w, n)
			}
		}
		for n := range names(got) {
			if all[0][n] {
				g = append(g, n)
			}
		}
		require.ElementsMatch(t, w, g, "%q: the commands both have, Redis's, then rlserver's", args)
	}
	require.Equal(t, `["cl.throttle"]`, p.c.Do("COMMAND", "LIST", "FILTERBY", "MODULE", "redis-cell"))
}

// TestPubsubAsRedis: PUBSUB's subcommands answer as Redis 7.0's, with
// subscribers by name and by pattern on several connections, and again
// once one of them has closed. CHANNELS' order is Redis's hash table's,
// so the names are compared sorted.
func TestPubsubAsRedis(t *testing.T) {
	rd := startRedis(t, rltest.Tool(t, "redis-server"))
	p := startRepl(t)
	sorted := func(args []string, reply string) string {
		if len(args) < 2 || !strings.EqualFold(args[1], "channels") || !strings.HasPrefix(reply, "[") {
			return reply
		}
		f := strings.Fields(strings.Trim(reply, "[]"))
		slices.Sort(f)
		return "[" + strings.Join(f, " ") + "]"
	}
	script := [][]string{
		{"PUBSUB", "CHANNELS"}, {"PUBSUB", "CHANNELS", "n*"}, {"PUBSUB", "CHANNELS", "N*"}, {"PUBSUB", "CHANNELS", "x"},
		{"PUBSUB", "CHANNELS", "a", "b"}, {"PUBSUB", "NUMSUB", "news", "sports", "none"}, {"PUBSUB", "NUMSUB"},
		{"PUBSUB", "NUMPAT"}, {"PUBSUB", "NUMPAT", "x"}, {"PUBSUB", "SHARDCHANNELS"}, {"PUBSUB", "SHARDCHANNELS", "x", "y"},
		{"PUBSUB", "SHARDNUMSUB", "news"}, {"PUBSUB", "HELP"}, {"PUBSUB", "NOPE"}, {"PUBSUB"}, {"pubsub", "numsub", "news"},
	}
	var got [2][]string
	for i, n := range []*replNode{rd, p} {
		addr := "127.0.0.1:" + strconv.Itoa(n.port)
		a, b, c := rltest.Dial(t, addr), rltest.Dial(t, addr), rltest.Dial(t, addr)
		a.Do("SUBSCRIBE", "news", "sports")
		a.Read()
		b.Do("SUBSCRIBE", "news")
		b.Do("PSUBSCRIBE", "n*")
		c.Do("PSUBSCRIBE", "n*", "s?orts")
		c.Read()
		for _, args := range script {
			got[i] = append(got[i], sorted(args, n.c.Do(args...)))
		}
		b.Close()
		rltest.WaitFor(t, 10*time.Second, "the closed subscriber to be forgotten", func() (bool, string) {
			r := n.c.Do("PUBSUB", "NUMSUB", "news")
			return r == `["news" 1]`, r
		})
		for _, args := range script[:8] {
			got[i] = append(got[i], sorted(args, n.c.Do(args...)))
		}
		a.Close()
		c.Close()
	}
	for j := range got[0] {
		require.Equal(t, got[0][j], got[1][j], "reply %d: Redis's, then rlserver's", j)
	}
	require.Equal(t, `["news" "sports"]`, got[1][0])
	require.Equal(t, `["news" 2 "sports" 1 "none" 0]`, got[1][5])
	require.Equal(t, "2", got[1][7])
}

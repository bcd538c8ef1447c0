package server_test

import (
	"regexp"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/rlserver/rlserver/internal/rltest"
	"github.com/stretchr/testify/require"
)

// TestTrackingAsRedis: client-side caching (CLIENT TRACKING, CLIENT
// CACHING) as Redis 7.0's, on both servers. Each script runs on named
// connections; after each step, every connection is asked PING and what
// it got before the answer is kept (not the sender of a CLIENT command,
// which keeps CLIENT CACHING's hold where a PING would end it): the step's reply, and the
// invalidations, in RESP3 pushes or, in RESP2, messages on
// __redis__:invalidate to a redirect's subscriber. Client IDs are
// written as the connection's name ($S), on both sides.
func TestTrackingAsRedis(t *testing.T) {
	rd := startRedis(t, rltest.Tool(t, "redis-server"))
	p := startRepl(t)
	for _, tc := range []struct {
		name  string
		steps []string // "A GET k": connection A sends GET k; $S is S's client ID
		want  string   // a message rlserver must have sent, so that the script tests what it says
	}{
		{"default mode", []string{
			"A HELLO 3", "A CLIENT TRACKING ON", "A GET k", "B SET k 1", "A GET k", "A SET k 2", "A GET k",
			"A MULTI", "A SET k 3", "A GET k", "A EXEC", "A GET k", "B FLUSHALL", "A GET k", "A FLUSHALL",
			"A CLIENT TRACKINGINFO", "A CLIENT GETREDIR", "A CLIENT TRACKING ON NOLOOP", "A GET k", "A SET k 1", "A DEL k",
		}, `A: >["invalidate" ["k"]]`},
		{"no change, no message", []string{
			"A HELLO 3", "A CLIENT TRACKING ON", "A GET k", "B DEL k", "B EXISTS k", "A EXISTS k", "B SET k 1",
			"A TTL k", "B DEL nothing k", "A GET k", "B SET k 1", "B SET k 1",
		}, `A: >["invalidate" ["k"]]`},
		{"arguments", []string{
			"S SUBSCRIBE __redis__:invalidate",
			"A CLIENT TRACKING ON REDIRECT 0", "A CLIENT TRACKING ON REDIRECT abc", "A CLIENT TRACKING ON REDIRECT",
			"A CLIENT TRACKING ON REDIRECT $S REDIRECT $S", "A CLIENT TRACKING ON BCAST OPTIN", "A CLIENT TRACKING ON OPTIN OPTOUT",
			"A CLIENT TRACKING ON PREFIX a", "A CLIENT TRACKING ON FOO", "A CLIENT TRACKING MAYBE", "A CLIENT TRACKING",
			"A CLIENT TRACKING OFF FOO", "A CLIENT TRACKING OFF BCAST", "A CLIENT CACHING YES", "A CLIENT CACHING maybe",
			"A CLIENT CACHING", "A CLIENT GETREDIR", "A CLIENT TRACKINGINFO",
			"A CLIENT TRACKING ON BCAST", "A CLIENT TRACKING ON OPTIN", "A CLIENT TRACKING ON", "A CLIENT CACHING YES",
			"A CLIENT CACHING NO", "A CLIENT TRACKING OFF", "A CLIENT TRACKING ON OPTIN", "A CLIENT TRACKING ON OPTOUT",
			"A CLIENT CACHING NO", "A CLIENT CACHING maybe", "A CLIENT TRACKINGINFO",
		}, `A: -ERR You can't switch OPTIN/OPTOUT mode before disabling tracking for this client, and then re-enabling it with a different mode.`},
		{"RESP2 redirect", []string{
			"S SUBSCRIBE x", "A CLIENT TRACKING ON REDIRECT $S", "A CLIENT GETREDIR", "A GET k", "B SET k 1", "A GET k",
			"B FLUSHALL", "A CLIENT LIST ID $A", "A GET k", "B SET k 2", "S UNSUBSCRIBE", "A GET k", "B SET k 3",
		}, `S: ["message" "__redis__:invalidate" ["k"]]`},
		{"OPTIN", []string{
			"A HELLO 3", "A CLIENT TRACKING ON OPTIN", "A GET k", "B SET k 1", "A CLIENT CACHING YES", "A GET k",
			"B SET k 2", "A CLIENT CACHING YES", "A PING", "A GET k", "B SET k 3", "A CLIENT CACHING YES",
			"A CLIENT TRACKINGINFO", "A MULTI", "A GET k", "A EXEC", "B SET k 4", "A CLIENT TRACKINGINFO",
			"A CLIENT CACHING YES", "A CLIENT TRACKING OFF", "A CLIENT TRACKING ON OPTIN", "A CLIENT TRACKINGINFO",
			"A GET k", "B SET k 5",
		}, `A: >["invalidate" ["k"]]`},
		{"OPTOUT", []string{
			"A HELLO 3", "A CLIENT TRACKING ON OPTOUT", "A CLIENT CACHING NO", "A CLIENT TRACKINGINFO", "A GET k",
			"B SET k 1", "A GET k", "B SET k 2",
		}, `A: >["invalidate" ["k"]]`},
		{"BCAST", []string{
			"S SUBSCRIBE x", "A CLIENT TRACKING ON BCAST PREFIX a PREFIX ab REDIRECT $S",
			"A CLIENT TRACKING ON BCAST PREFIX ab PREFIX cd REDIRECT $S", "A CLIENT TRACKING ON BCAST PREFIX a REDIRECT $S",
			"A CLIENT TRACKING ON BCAST PREFIX x REDIRECT $S", "A CLIENT TRACKINGINFO", "B SET abc 1", "B SET cdx 1",
			"B DEL abc cdx", "B SET zz 1", "A CLIENT TRACKING ON BCAST PREFIX xy", "A CLIENT TRACKING ON BCAST PREFIX x",
			"A CLIENT TRACKING ON BCAST", "A CLIENT TRACKINGINFO", "A CLIENT LIST ID $A", "A CLIENT TRACKING OFF",
			"A CLIENT TRACKINGINFO", "B SET abc 2",
		}, `S: ["message" "__redis__:invalidate" ["abc"]]`},
		{"BCAST in RESP3", []string{
			"A HELLO 3", "A CLIENT TRACKING ON BCAST PREFIX u: NOLOOP", "B SET u:1 1", "A SET u:2 1", "B DEL u:1 u:2 v:1",
			"A CLIENT TRACKING OFF", "A CLIENT TRACKING ON BCAST", "A SET v:1 1", "B SET w 1",
		}, `A: >["invalidate" ["u:1" "u:2"]]`},
		{"redirect gone", []string{
			"S SUBSCRIBE x", "A CLIENT TRACKING ON BCAST REDIRECT $S", "B SET abc 1", "S CLOSE", "B SET abc 2",
			"A CLIENT TRACKINGINFO", "A CLIENT LIST ID $A", "A CLIENT GETREDIR", "A HELLO 3", "B SET abc 3",
			"A CLIENT TRACKINGINFO", "A RESET", "A CLIENT TRACKINGINFO",
		}, `A: >["tracking-redir-broken" $S]`},
	} {
		t.Run(tc.name, func(t *testing.T) {
			var got [2][]string
			for i, n := range []*replNode{rd, p} {
				got[i] = runTracking(t, n.port, tc.steps)
			}
			require.Equal(t, got[0], got[1], "Redis's replies, then rlserver's")
			require.Contains(t, strings.Join(got[1], "\n"), tc.want)
		})
	}
}

// runTracking runs a tracking script on the server at port and returns,
// for each step, what each connection received before its PING's
// answer, named ("A: +OK").
func runTracking(t *testing.T, port int, steps []string) []string {
	addr := "127.0.0.1:" + strconv.Itoa(port)
	setup := rltest.Dial(t, addr)
	require.Equal(t, "+OK", setup.Do("FLUSHALL"))
	setup.Close()
	conns, ids := map[string]*rltest.Conn{}, map[string]string{}
	var names []string
	conn := func(name string) *rltest.Conn {
		if c := conns[name]; c != nil {
			return c
		}
		c := rltest.Dial(t, addr)
		conns[name], ids[name] = c, c.Do("CLIENT", "ID")
		names = append(names, name)
		return c
	}
	var out, done []string
	inMulti := map[string]bool{}
	for _, step := range steps {
		f := strings.Fields(step)
		who, args := f[0], f[1:]
		for i, a := range args {
			if strings.HasPrefix(a, "$") {
				conn(a[1:])
				args[i] = ids[a[1:]]
			}
		}
		c := conn(who)
		if args[0] == "CLOSE" { // and wait until the server has let it go
			c.Close()
			delete(conns, who)
			done = append(done, step)
			out = append(out, "closed")
			other := rltest.Dial(t, addr)
			rltest.WaitFor(t, 10*time.Second, "the connection closed to be gone", func() (bool, string) {
				r := other.Do("CLIENT", "LIST", "ID", ids[who])
				return r == `""`, r
			})
			other.Close()
			continue
		}
		r := c.Do(args...)
		switch args[0] {
		case "HELLO":
			r = "(a map)"
		case "MULTI":
			inMulti[who] = true
		case "EXEC", "DISCARD":
			inMulti[who] = false
		}
		line := []string{who + ": " + r}
		for _, name := range names {
			c := conns[name]
			// A PING would end CLIENT CACHING's hold (which CLIENT's
			// subcommands keep), or be queued.
			if c == nil || inMulti[name] || name == who && args[0] == "CLIENT" {
				continue
			}
			c.Send(rltest.Encode("PING"))
			for {
				m, err := c.Read()
				require.NoError(t, err, "%s after %q", name, step)
				if m == "+PONG" || m == `["pong" ""]` {
					break
				}
				line = append(line, name+": "+m)
			}
		}
		done = append(done, step)
		out = append(out, strings.Join(line, " | "))
	}
	for _, c := range conns {
		c.Close()
	}
	// Client IDs differ from server to server: where one stands (a
	// redirect, GETREDIR's reply), it is written as its connection's name.
	name := map[string]string{}
	for n, id := range ids {
		name[id] = "$" + n
	}
	idAt := regexp.MustCompile(`(redirect"?:? |redir=|"tracking-redir-broken" |^A: )(-?\d+)`)
	for i := range out {
		out[i] = idAt.ReplaceAllStringFunc(out[i], func(m string) string {
			sub := idAt.FindStringSubmatch(m)
			if n, ok := name[sub[2]]; ok && (sub[1] != "A: " || strings.Contains(done[i], "GETREDIR")) {
				return sub[1] + n
			}
			return m
		})
	}
	// CLIENT LIST's line: the fields both servers fill alike.
	fields := regexp.MustCompile(`(flags|redir|resp)=[^ \\"]+`)
	for i := range out {
		if j := strings.Index(out[i], `"id=`); j >= 0 {
			out[i] = out[i][:j] + strings.Join(fields.FindAllString(out[i][j:], -1), " ")
		}
		out[i] = done[i] + " => " + out[i]
	}
	return out
}

// TestClientReplyAsRedis: CLIENT REPLY ON|OFF|SKIP as Redis 7.0's, on both
// servers: A's commands are sent without waiting for replies, then A asks
// ECHO end with replies on, and everything A received up to it is
// compared. Replies dropped by OFF or SKIP are missing; published messages
// and invalidations (pushes) are not. B's commands wait for their reply,
// after A has run what comes before them (CLIENT LIST's cmd).
func TestClientReplyAsRedis(t *testing.T) {
	rd := startRedis(t, rltest.Tool(t, "redis-server"))
	p := startRepl(t)
	for _, tc := range []struct {
		name  string
		steps []string
		want  string // in rlserver's stream
	}{
		{"off, skip, on", []string{"A CLIENT REPLY OFF", "A PING", "A SET k 1", "A FOO", "A CLIENT REPLY SKIP",
			"A CLIENT REPLY ON", "A PING", "A CLIENT REPLY SKIP", "A PING", "A ECHO after-skip", "A CLIENT REPLY SKIP",
			"A CLIENT REPLY SKIP", "A ECHO skipped", "A ECHO kept", "A CLIENT REPLY MAYBE", "A CLIENT REPLY",
			"A CLIENT REPLY ON X", "A CLIENT REPLY OFF", "A RESET", "A ECHO after-reset"}, `"after-reset"`},
		{"pushes still go", []string{"A HELLO 3", "A SUBSCRIBE c", "A CLIENT REPLY OFF", "B PUBLISH c hello",
			"A CLIENT TRACKING ON", "A GET k", "B SET k 2"}, `>["invalidate" ["k"]]`},
	} {
		t.Run(tc.name, func(t *testing.T) {
			var got [2][]string
			for i, n := range []*replNode{rd, p} {
				addr := "127.0.0.1:" + strconv.Itoa(n.port)
				b := rltest.Dial(t, addr)
				require.Equal(t, "+OK", b.Do("FLUSHALL"))
				a := rltest.Dial(t, addr)
				id := a.Do("CLIENT", "ID")
				var last string // A's last command sent
				for _, step := range tc.steps {
					f := strings.Fields(step)
					if f[0] == "A" {
						a.Send(rltest.Encode(f[1:]...))
						last = strings.ToLower(f[1])
						if f[1] == "CLIENT" {
							last += "|" + strings.ToLower(f[2])
						}
						continue
					}
					rltest.WaitFor(t, 10*time.Second, "A to have run "+last, func() (bool, string) {
						l := b.Do("CLIENT", "LIST", "ID", id)
						return strings.Contains(l, " cmd="+last+" "), l
					})
					b.Do(f[1:]...)
				}
				a.Send(rltest.Encode("CLIENT", "REPLY", "ON"))
				a.Send(rltest.Encode("ECHO", "end"))
				for {
					r, err := a.Read()
					require.NoError(t, err)
					if r == `"end"` {
						break
					}
					if strings.Contains(r, `"server"`) {
						r = "(HELLO's map)"
					}
					got[i] = append(got[i], r)
				}
			}
			require.Equal(t, got[0], got[1], "Redis's replies, then rlserver's")
			require.Contains(t, got[1], tc.want)
		})
	}
	// Inside a transaction, rlserver answers OFF and SKIP with +OK in
	// EXEC's array, and they hold after it; Redis leaves the array short.
	a := rltest.Dial(t, "127.0.0.1:"+strconv.Itoa(p.port))
	for _, args := range [][]string{{"MULTI"}, {"CLIENT", "REPLY", "SKIP"}, {"PING"}} {
		a.Send(rltest.Encode(args...))
	}
	for _, want := range []string{"+OK", "+QUEUED", "+QUEUED"} {
		r, err := a.Read()
		require.NoError(t, err)
		require.Equal(t, want, r)
	}
	require.Equal(t, "[+OK +PONG]", a.Do("EXEC"))
	a.Send(rltest.Encode("ECHO", "skipped"))
	require.Equal(t, `"kept"`, a.Do("ECHO", "kept"))
}

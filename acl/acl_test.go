package acl_test

import (
	"strconv"
	"strings"
	"testing"

	"github.com/rlserver/rlserver/acl"
	"github.com/rlserver/rlserver/commands"
)

// catalog is rlserver's own table, as the node builds it.
var catalog = commands.NewTable().ACLCatalog()

const pwHash = "30c952fab122c3f9759f02a6d95c3758b246b4fee239957b2d4fee46e26170c4" // sha256("pw")

func rules(t *testing.T, line string) *acl.Rules {
	t.Helper()
	r, err := acl.NewRules(catalog).Apply(catalog, strings.Fields(line)...)
	if err != nil {
		t.Fatalf("%q: %v", line, err)
	}
	return r
}

// check runs Check on a call written as its words.
func check(t *testing.T, r *acl.Rules, call string) (acl.Denial, int) {
	t.Helper()
	words := strings.Fields(call)
	c, ok := catalog.Lookup(words[0])
	if !ok {
		t.Fatalf("no command %q", words[0])
	}
	if len(c.Subcommands) > 0 && len(words) > 1 {
		if c, ok = catalog.Lookup(words[0] + "|" + words[1]); !ok {
			t.Fatalf("no subcommand %q", call)
		}
	}
	args := make([][]byte, len(words))
	for i, w := range words {
		args[i] = []byte(w)
	}
	return r.Check(c, args)
}

// TestCheck: rule lines and what they let run, call by call (the
// position is the refused key's or channel's argument).
func TestCheck(t *testing.T) {
	const (
		ok  = acl.Allowed
		cmd = acl.DeniedCommand
		key = acl.DeniedKey
		ch  = acl.DeniedChannel
	)
	for _, tc := range []struct {
		rules string
		calls map[string]acl.Denial
		at    map[string]int
	}{
		{"", map[string]acl.Denial{"GET k": cmd, "PING": cmd, "AUTH x": ok, "HELLO 3": ok, "QUIT": ok, "RESET": ok}, nil},
		{"on nopass ~* &* +@all", map[string]acl.Denial{"FLUSHALL": ok, "CONFIG SET a b": ok, "PUBLISH c m": ok, "CL.THROTTLE x 1 1 1": ok}, nil},
		// The application: the limiters on its own keys, nothing else.
		{"on >pw ~app:* +@ratelimit", map[string]acl.Denial{
			"CL.THROTTLE app:x 1 1 1": ok, "RL.FIXED app:y 10 1m": ok, "RL.LOG app:z 1 1s": ok, "RL.SLIDE app:1 1 1": ok,
			"RL.BUCKET app:b 1 1 1s": ok, "RL.TOP": ok, "CL.THROTTLE other:x 1 1 1": key, "RL.FIXED App:y 1 1": key,
			"FLUSHALL": cmd, "GET app:x": cmd, "PING": cmd, "ACL WHOAMI": cmd, "AUTH app pw": ok,
		}, map[string]int{"CL.THROTTLE other:x 1 1 1": 1}},
		// The dashboard: reads, but nothing dangerous; INFO is @dangerous.
		{"on >pw ~* +@read +@connection -@dangerous", map[string]acl.Denial{
			"GET k": ok, "PTTL k": ok, "SCAN 0": ok, "RL.TOP": ok, "MEMORY USAGE k": ok, "PING": ok, "CLIENT ID": ok,
			"KEYS *": cmd, "INFO": cmd, "CL.THROTTLE k 1 1 1": cmd, "RL.FIXED k 1 1": cmd, "CLIENT LIST": cmd,
			"CLIENT KILL ID 1": cmd, "DEL k": cmd, "CONFIG GET x": cmd,
		}, nil},
		{"on ~* +@all -@dangerous +info", map[string]acl.Denial{"INFO": ok, "KEYS *": cmd, "FLUSHALL": cmd, "CL.THROTTLE k 1 1 1": ok, "SET k 1": ok}, nil},
		// A container's categories take its subcommands along, as in
		// Redis: CONFIG is @slow, so +@slow grants CONFIG SET.
		{"~* +@slow", map[string]acl.Denial{"CONFIG SET a b": ok, "CLIENT KILL ID 1": ok, "GET k": cmd}, nil},
		{"~* +@slow -@dangerous", map[string]acl.Denial{"CONFIG SET a b": cmd, "CLIENT ID": ok, "CLIENT KILL ID 1": cmd}, nil},
		{"~* +client|id +config|get", map[string]acl.Denial{"CLIENT ID": ok, "CLIENT KILL ID 1": cmd, "CONFIG GET x": ok, "CONFIG SET a b": cmd}, nil},
		{"~* +@all -client", map[string]acl.Denial{"CLIENT ID": cmd, "PING": ok}, nil},
		{"~* +@all -client +client|info", map[string]acl.Denial{"CLIENT ID": cmd, "CLIENT INFO": ok}, nil},
		// First arguments of a command without subcommands.
		{"~* +select|0", map[string]acl.Denial{"SELECT 0": ok, "SELECT 1": cmd, "GET k": cmd}, nil},
		{"~* +select|0 +select", map[string]acl.Denial{"SELECT 1": ok}, nil},
		// Read and write key patterns: a command needs what its key
		// spec says (GET access, DEL delete, SET update, and access too
		// with GET, as Redis's setGetKeys).
		{"%R~r:* %W~w:* ~rw:* +@all", map[string]acl.Denial{
			"GET r:1": ok, "GET w:1": key, "DEL w:1": ok, "DEL r:1": key, "SET w:1 1": ok, "SET w:1 1 GET": key, "SET r:1 1": key,
			"SET rw:1 1": ok, "EXISTS r:1 rw:2": ok, "DEL w:1 rw:1 r:1": key, "CL.THROTTLE rw:x 1 1 1": ok,
		}, map[string]int{"DEL w:1 rw:1 r:1": 3}},
		{"%RW~k* +@all", map[string]acl.Denial{"SET k1 1": ok, "SET x 1": key}, nil},
		{"resetkeys ~a* ~b? +@all", map[string]acl.Denial{"GET abc": ok, "GET bc": ok, "GET bcd": key, "OBJECT ENCODING abc": ok, "OBJECT ENCODING zz": key, "TYPE A": key}, nil},
		// Channels: PUBLISH and SUBSCRIBE match the patterns, PSUBSCRIBE's
		// patterns must be one of them, UNSUBSCRIBE is never refused.
		{"~* &news.* +@all", map[string]acl.Denial{
			"PUBLISH news.a m": ok, "PUBLISH other m": ch, "SUBSCRIBE news.a news.b": ok, "SUBSCRIBE news.a other": ch,
			"PSUBSCRIBE news.*": ok, "PSUBSCRIBE news.a": ch, "UNSUBSCRIBE other": ok,
		}, map[string]int{"SUBSCRIBE news.a other": 2}},
		{"~* +@all resetchannels", map[string]acl.Denial{"PUBLISH c m": ch, "PING": ok}, nil},
		{"~* +@all reset", map[string]acl.Denial{"PING": cmd, "HELLO": ok}, nil},
		{"ON NOPASS ALLKEYS +@READ", map[string]acl.Denial{"GET k": ok, "DEL k": cmd}, nil},
	} {
		r := rules(t, tc.rules)
		for call, want := range tc.calls {
			d, at := check(t, r, call)
			if d != want {
				t.Errorf("%q: %q got %v, want %v", tc.rules, call, d, want)
			}
			if pos, ok := tc.at[call]; ok && at != pos {
				t.Errorf("%q: %q refused at argument %d, want %d", tc.rules, call, at, pos)
			}
		}
	}
}

// TestRuleErrors: rules ACL SETUSER refuses, and why; the user does not
// change.
func TestRuleErrors(t *testing.T) {
	for _, tc := range []struct {
		rules string
		bad   string
		why   acl.Reason
	}{
		{"+nosuch", "+nosuch", acl.UnknownName},
		{"-nosuch", "-nosuch", acl.UnknownName},
		{"+@nosuch", "+@nosuch", acl.UnknownName},
		{"-select|0", "-select|0", acl.UnknownName},
		{"+client|nosuch", "+client|nosuch", acl.UnknownName},
		{"+client|", "+client|", acl.BadSyntax},
		{"+client|kill|x", "+client|kill|x", acl.FirstArgOfSub},
		{"bogus", "bogus", acl.BadSyntax},
		{"on ~* ~k", "~k", acl.KeyAfterAll},
		{"allkeys %R~k", "%R~k", acl.KeyAfterAll},
		{"&* &c", "&c", acl.ChannelAfterAll},
		{"%X~k", "%X~k", acl.BadSyntax},
		{"%RR~k", "%RR~k", acl.BadSyntax},
		{"%R", "%R", acl.BadSyntax},
		{"#abc", "#abc", acl.BadHash},
		{"#" + strings.ToUpper(pwHash), "#" + strings.ToUpper(pwHash), acl.BadHash},
		{"<pw", "<pw", acl.NoSuchPassword},
		{">other !" + pwHash, "!" + pwHash, acl.NoSuchPassword},
		{"(~* +get)", "(~*", acl.BadSyntax},
		// Words and categories match in ASCII case only, as Redis's
		// strcasecmp: ſ (U+017F) folds to s in Unicode, not here.
		{"re\u017fetpass", "re\u017fetpass", acl.BadSyntax},
		{"~* +@\u017flow", "+@\u017flow", acl.UnknownName},
	} {
		r := rules(t, "on")
		_, err := r.Apply(catalog, strings.Fields(tc.rules)...)
		re, ok := err.(*acl.RuleError)
		if !ok || re.Rule != tc.bad || re.Reason != tc.why {
			t.Errorf("%q: got %v, want rule %q refused as %v", tc.rules, err, tc.bad, tc.why)
		}
		if got := r.Describe(catalog); got != "on resetchannels -@all" {
			t.Errorf("%q: the rules changed: %q", tc.rules, got)
		}
	}
	if _, err := acl.NewRules(catalog).Apply(catalog, "(~* +get)"); err.(*acl.RuleError).Reason != acl.Selectors {
		t.Errorf("a selector: %v", err)
	}
}

// TestDescribe: rules as ACL LIST shows them (Redis 7.0's order and
// compaction), and what they read back as: the same.
func TestDescribe(t *testing.T) {
	for _, tc := range []struct{ rules, want string }{
		{"", "off resetchannels -@all"},
		{"on nopass ~* &* +@all", "on nopass ~* &* +@all"},
		{"on >pw ~app:* +@ratelimit", "on #" + pwHash + " ~app:* resetchannels -@all +@ratelimit"},
		{"on >pw >pw #" + pwHash + " ~app:* ~app:*", "on #" + pwHash + " ~app:* resetchannels -@all"},
		{"on >pw nopass", "on nopass resetchannels -@all"},
		{"on >pw nopass >pw", "on #" + pwHash + " resetchannels -@all"},
		{"on >pw <pw", "on resetchannels -@all"},
		{"on >pw resetpass", "on resetchannels -@all"},
		{"+@all ~* &* on reset", "off sanitize-payload resetchannels -@all"},
		{"skip-sanitize-payload", "off skip-sanitize-payload resetchannels -@all"},
		{"on ~* +@read -@dangerous", "on ~* resetchannels -@all +@read -keys"},
		{"allkeys allchannels allcommands", "off ~* &* +@all"},
		{"+@all -@all +get", "off resetchannels -@all +get"},
		{"~* +@all -flushall", "off ~* resetchannels +@all -flushall"},
		{"%R~r:* %W~w:* ~rw:* %R~rw:* %W~r:*", "off ~r:* %W~w:* ~rw:* resetchannels -@all"},
		{"&a &b &a", "off resetchannels &a &b -@all"},
		{"+select|0 +select|1 +select|0", "off resetchannels -@all +select|0 +select|1"},
		{"+client|id +client|info", "off resetchannels -@all +client|id +client|info"},
		{"+@all -client +client|id", "off resetchannels +@all -client +client|id"},
	} {
		r := rules(t, tc.rules)
		got := r.Describe(catalog)
		if got != tc.want {
			t.Errorf("%q:\n got %q\nwant %q", tc.rules, got, tc.want)
		}
		back, err := acl.NewRules(catalog).Apply(catalog, strings.Fields(got)...)
		if err != nil {
			t.Errorf("%q does not read back: %v", got, err)
		} else if again := back.Describe(catalog); again != got {
			t.Errorf("%q reads back as %q", got, again)
		}
	}
}

// TestDescribeRoundTrip: for rules over every category, alone and
// against +@all, the described rules allow exactly the same commands.
func TestDescribeRoundTrip(t *testing.T) {
	var lines []string
	for _, c := range acl.CategoryNames() {
		lines = append(lines, "+@"+c, "+@all -@"+c, "+@"+c+" -@dangerous", "+@all -@"+c+" +@fast", "+@"+c+" -client +client|id +select|0")
	}
	for _, line := range lines {
		r := rules(t, line)
		back, err := acl.NewRules(catalog).Apply(catalog, strings.Fields(r.CommandRules(catalog))...)
		if err != nil {
			t.Fatalf("%q: %q: %v", line, r.CommandRules(catalog), err)
		}
		for id := 0; id < catalog.Len(); id++ {
			c := catalog.Command(id)
			args := [][]byte{[]byte(c.Name), []byte("0"), []byte("0"), []byte("0"), []byte("0")}
			if d1, _ := r.Check(c, args); d1 != func() acl.Denial { d, _ := back.Check(c, args); return d }() {
				t.Errorf("%q described as %q: %s differs", line, r.CommandRules(catalog), c.Name)
			}
		}
	}
}

// TestLogsIn: who logs in with what.
func TestLogsIn(t *testing.T) {
	for _, tc := range []struct {
		rules, pass string
		want        bool
	}{
		{"on >pw", "pw", true},
		{"on >pw", "PW", false},
		{"on >a >pw", "pw", true},
		{"on #" + pwHash, "pw", true},
		{"off >pw", "pw", false},
		{"on nopass", "anything", true},
		{"off nopass", "anything", false},
		{"on", "", false},
		{"on >pw <pw", "pw", false},
	} {
		if got := rules(t, tc.rules).LogsIn([]byte(tc.pass)); got != tc.want {
			t.Errorf("%q with %q: %v, want %v", tc.rules, tc.pass, got, tc.want)
		}
	}
}

// TestCategories: ACL CAT's lists.
func TestCategories(t *testing.T) {
	names := acl.CategoryNames()
	if names[0] != "keyspace" || names[len(names)-1] != "ratelimit" || len(names) != 22 {
		t.Errorf("categories %v", names)
	}
	if got := strings.Join(catalog.InCategory(mustCategory(t, "ratelimit")), " "); got != "cl.throttle rl.acquire rl.all rl.bucket rl.cancel rl.fixed rl.leases rl.log rl.release rl.renew rl.slide rl.top" {
		t.Errorf("ratelimit: %s", got)
	}
	if got := strings.Join(catalog.InCategory(mustCategory(t, "transaction")), " "); got != "discard exec multi unwatch watch" {
		t.Errorf("transaction: %s", got)
	}
	if c, ok := acl.ParseCategory("ReAd"); !ok || strings.Join(c.Names(), " ") != "@read" {
		t.Errorf("ReAd: %v %v", c, ok)
	}
}

func mustCategory(t *testing.T, name string) acl.Categories {
	c, ok := acl.ParseCategory(name)
	if !ok {
		t.Fatalf("no category %s", name)
	}
	return c
}

// TestParseFile: an ACL file's users, and a bad file's every problem.
func TestParseFile(t *testing.T) {
	good := "user default on nopass ~* &* +@all\n\n  user app on  #" + pwHash + " ~app:* resetchannels -@all +@ratelimit\r\n"
	defs, err := acl.ParseFile("users.acl", []byte(good), catalog)
	if err != nil {
		t.Fatal(err)
	}
	var got []string
	for _, d := range defs {
		got = append(got, d.Name+": "+d.Rules.Describe(catalog))
	}
	want := []string{
		"default: on nopass ~* &* +@all",
		"app: on #" + pwHash + " ~app:* resetchannels -@all +@ratelimit", // two spaces: an empty rule, which changes nothing
	}
	if strings.Join(got, "\n") != strings.Join(want, "\n") {
		t.Errorf("got\n%s\nwant\n%s", strings.Join(got, "\n"), strings.Join(want, "\n"))
	}

	bad := "user a on\n# comment\nuser a off\nuser\tb on\nuser c on +nosuch bogus ~* ~k +@nosuch\nuser d on\n"
	_, err = acl.ParseFile("users.acl", []byte(bad), catalog)
	fe, ok := err.(*acl.FileError)
	if !ok {
		t.Fatalf("got %v", err)
	}
	var problems []string
	for _, p := range fe.Problems {
		s := p.Name
		if p.Rule != nil {
			s = p.Rule.Rule + " " + p.Rule.Reason.String()
		}
		problems = append(problems, strings.TrimSpace(strings.Join([]string{strconv.Itoa(p.Line), strconv.Itoa(int(p.Kind)), s}, " ")))
	}
	wantProblems := []string{
		"2 1", "3 3 a", "4 1", // "user\tb" is not "user" then a name: Redis splits at spaces only
		"5 4 +nosuch unknown command or category", "5 4 bogus syntax error", "5 4 +@nosuch unknown command or category",
	}
	if strings.Join(problems, "|") != strings.Join(wantProblems, "|") {
		t.Errorf("problems\n%s\nwant\n%s", strings.Join(problems, "\n"), strings.Join(wantProblems, "\n"))
	}
}

// TestFormatFile: ACL SAVE's lines, by name, which ParseFile reads back.
func TestFormatFile(t *testing.T) {
	users := []*acl.User{
		acl.NewUser("zed", rules(t, "on >pw ~z:* +@ratelimit")),
		acl.NewUser("default", acl.DefaultRules(catalog)),
		acl.NewUser("app", rules(t, "on %R~a:* &c +get")),
	}
	text := string(acl.FormatFile(users, catalog))
	want := "user app on %R~a:* resetchannels &c -@all +get\n" +
		"user default on nopass ~* &* +@all\n" +
		"user zed on #" + pwHash + " ~z:* resetchannels -@all +@ratelimit\n"
	if text != want {
		t.Errorf("got\n%s\nwant\n%s", text, want)
	}
	defs, err := acl.ParseFile("f", []byte(text), catalog)
	if err != nil || len(defs) != 3 {
		t.Fatalf("%v %v", defs, err)
	}
	for i, d := range defs {
		if line := "user " + d.Name + " " + d.Rules.Describe(catalog) + "\n"; line != strings.SplitAfter(text, "\n")[i] {
			t.Errorf("line %d reads back as %q", i+1, line)
		}
	}
}

package node_test

import (
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"

	"github.com/rlserver/rlserver/clock"
	"github.com/rlserver/rlserver/engine"
	"github.com/rlserver/rlserver/internal/rltest"
	"github.com/rlserver/rlserver/internal/testnode"
	"github.com/rlserver/rlserver/node"
	"github.com/stretchr/testify/require"
)

// Users and permissions (docs/protocol.md, "Users and permissions"),
// through the dispatcher: transcripts of several connections, each
// command with its reply.

const (
	noPermKeys     = "-NOPERM this user has no permissions to access one of the keys used as arguments"
	noPermChannels = "-NOPERM this user has no permissions to access one of the channels used as arguments"
	wrongPass      = "-WRONGPASS invalid username-password pair or user is disabled."
	noAuth         = "-NOAUTH Authentication required."
	appHash        = "71d3d4e36cf4bc4309fd7390ba79fc6a1d03d8d7b45ef26f04bcdff3ff116868" // sha256("apppw")
	s3cretHash     = "1ec1c26b50d5d3c58d9583181af8076655fe00756bf7285940ba3670f99fcba0" // sha256("s3cret")
)

func noPermCmd(name string) string {
	return "-NOPERM this user has no permissions to run the '" + name + "' command"
}

func aclNode(t *testing.T, cfg node.Config) *node.Node {
	t.Helper()
	cfg.Shards, cfg.MaxClients = 4, 100
	return node.New(cfg, engine.New(4), clock.NewManual(rltest.StartNs), node.Options{})
}

// q quotes a bulk string as the transcripts render it.
func q(s string) string { return `"` + s + `"` }

// TestACLRefusals: every refusal, with Redis 7.0's text: a command (and
// a subcommand) the user may not run, a key, a channel, inside MULTI and
// at EXEC after the rules changed.
func TestACLRefusals(t *testing.T) {
	n := aclNode(t, node.Config{})
	admin := testnode.NewLocal(t, n)
	app := testnode.NewLocal(t, n)
	run(t, admin, []step{
		{cmd("ACL SETUSER app on >apppw ~app:* +@ratelimit"), "+OK"},
		{cmd("ACL SETUSER pub on nopass ~* &news.* +@all"), "+OK"},
		{cmd("ACL SETUSER x on nopass ~k* +@all"), "+OK"},
	})
	run(t, app, []step{
		{cmd("AUTH app apppw"), "+OK"},
		{cmd("CL.THROTTLE app:x 1 1 60"), "[0 2 1 -1 60]"},
		{cmd("RL.FIXED app:y 10 60s"), "[0 10 9 -1 40000]"},
		{cmd("RL.TOP"), "[]"},
		{cmd("CL.THROTTLE other:x 1 1 60"), noPermKeys},
		{cmd("RL.FIXED App:y 10 60s"), noPermKeys},
		{cmd("FLUSHALL"), noPermCmd("flushall")},
		{cmd("GET app:x"), noPermCmd("get")},
		{cmd("ACL WHOAMI"), noPermCmd("acl|whoami")},
		{cmd("CONFIG SET timeout 0"), noPermCmd("config|set")},
		{cmd("MULTI"), noPermCmd("multi")},
		// Before the rules: an unknown command, a wrong arity.
		{cmd("NOSUCH"), "-ERR unknown command 'NOSUCH', with args beginning with: "},
		{cmd("GET"), "-ERR wrong number of arguments for 'get' command"},
		{cmd("CLIENT BOGUS"), "-ERR unknown subcommand 'BOGUS'. Try CLIENT HELP."},
		// Commands anyone may run.
		{cmd("HELLO 2"), `["server" "redis" "version" "7.2.0" "proto" 2 "id" 2 "mode" "standalone" "role" "master" "modules" []]`},
	})
	require.Equal(t, "1", admin.Do("EXISTS", "app:x"))
	require.Equal(t, "0", admin.Do("EXISTS", "other:x"), "a refused command wrote")

	pub := testnode.NewLocal(t, n)
	run(t, pub, []step{
		{cmd("AUTH pub anything"), "+OK"},
		{cmd("PUBLISH news.a m"), "0"},
		{cmd("PUBLISH sports m"), noPermChannels},
		{cmd("SUBSCRIBE news.a sports"), noPermChannels},
		{cmd("PSUBSCRIBE news.a"), noPermChannels}, // a pattern must be one of the user's
		{cmd("PSUBSCRIBE news.*"), `["psubscribe" "news.*" 1]`},
	})

	// Inside MULTI a refusal aborts the transaction; at EXEC, rules that
	// changed since a command was queued refuse it with Redis's text.
	x := testnode.NewLocal(t, n)
	run(t, x, []step{
		{cmd("AUTH x x"), "+OK"},
		{cmd("MULTI"), "+OK"},
		{cmd("GET other"), noPermKeys},
		{cmd("GET k1"), "+QUEUED"},
		{cmd("EXEC"), "-EXECABORT Transaction discarded because of previous errors."},
		{cmd("MULTI"), "+OK"},
		{cmd("GET k1"), "+QUEUED"},
		{cmd("EXISTS k2"), "+QUEUED"},
		{cmd("PING"), "+QUEUED"},
	})
	run(t, admin, []step{{cmd("ACL SETUSER x -get resetkeys ~z*"), "+OK"}})
	run(t, x, []step{
		{cmd("EXEC"), "[-NOPERM ACLs rules changed between the moment the transaction was accumulated and the EXEC call. This command is no longer allowed for the following reason: no permission to execute the command or subcommand " +
			"-NOPERM ACLs rules changed between the moment the transaction was accumulated and the EXEC call. This command is no longer allowed for the following reason: no permission to touch the specified keys +PONG]"},
		{cmd("PING"), "+PONG"},
		{cmd("GET z"), noPermCmd("get")},
	})
}

// TestACLAuth: AUTH and HELLO AUTH log in users; wrong passwords, users
// that are off or do not exist are refused alike; the session's user
// shows in ACL WHOAMI and CLIENT LIST; RESET returns to the default user.
func TestACLAuth(t *testing.T) {
	n := aclNode(t, node.Config{})
	admin := testnode.NewLocal(t, n)
	run(t, admin, []step{
		{cmd("ACL WHOAMI"), q("default")},
		{cmd("AUTH pw"), "-ERR AUTH <password> called without any password configured for the default user. Are you sure your configuration is correct?"},
		{cmd("AUTH default anything"), "+OK"},
		{cmd("ACL SETUSER app on >apppw ~app:* +@ratelimit +acl|whoami +client|info"), "+OK"},
		{cmd("ACL SETUSER sleepy off >pw +@all"), "+OK"},
		{cmd("AUTH app wrong"), wrongPass},
		{cmd("AUTH sleepy pw"), wrongPass},
		{cmd("AUTH nosuch pw"), wrongPass},
		{cmd("HELLO 3 AUTH app wrong"), wrongPass},
		{cmd("ACL WHOAMI"), q("default")},
		{cmd("HELLO 3 AUTH app apppw"), `{"server": "redis", "version": "7.2.0", "proto": 3, "id": 1, "mode": "standalone", "role": "master", "modules": []}`},
		{cmd("ACL WHOAMI"), q("app")},
		{cmd("HELLO 2"), `["server" "redis" "version" "7.2.0" "proto" 2 "id" 1 "mode" "standalone" "role" "master" "modules" []]`},
	})
	require.Contains(t, admin.Do("CLIENT", "INFO"), " user=app ")
	run(t, admin, []step{
		{cmd("RESET"), "+RESET"},
		{cmd("ACL WHOAMI"), q("default")},
		{cmd("AUTH app apppw"), "+OK"},
		{cmd("CLIENT LIST"), noPermCmd("client|list")},
		{cmd("AUTH default x"), "+OK"},
	})
	require.Contains(t, admin.Do("CLIENT", "INFO"), " user=default ")

	// --requirepass is the default user's password; CONFIG SET changes
	// it, and connections logged in stay so.
	run(t, admin, []step{
		{cmd("CONFIG SET requirepass s3cret"), "+OK"},
		{cmd("ACL LIST"), `["user app on #` + appHash + ` ~app:* resetchannels -@all +@ratelimit +acl|whoami +client|info" "user default on #` + s3cretHash + ` ~* &* +@all" "user sleepy off #` + pwHashNode + ` resetchannels +@all"]`},
		{cmd("PING"), "+PONG"},
	})
	anon := testnode.NewLocal(t, n)
	run(t, anon, []step{
		{cmd("PING"), noAuth},
		{cmd("ACL WHOAMI"), noAuth},
		{cmd("HELLO 3"), "-NOAUTH HELLO must be called with the client already authenticated, otherwise the HELLO <proto> AUTH <user> <pass> option can be used to authenticate the client and select the RESP protocol version at the same time"},
		{cmd("AUTH wrong"), wrongPass},
		{cmd("AUTH s3cret"), "+OK"},
		{cmd("ACL WHOAMI"), q("default")},
		{cmd("RESET"), "+RESET"},
		{cmd("PING"), noAuth},
		{cmd("AUTH app apppw"), "+OK"},
		{cmd("ACL WHOAMI"), q("app")},
	})
	// The default user off: nobody logs in as it, and a connection that
	// has not logged in runs nothing.
	run(t, admin, []step{
		{cmd("CONFIG SET requirepass"), "-ERR wrong number of arguments for 'config|set' command"},
		{[]string{"CONFIG", "SET", "requirepass", ""}, "+OK"},
		{cmd("ACL SETUSER default off"), "+OK"},
	})
	off := testnode.NewLocal(t, n)
	run(t, off, []step{
		{cmd("PING"), noAuth},
		{cmd("AUTH default x"), wrongPass},
		{cmd("AUTH app apppw"), "+OK"},
	})
	run(t, admin, []step{{cmd("ACL SETUSER default on"), "+OK"}})
	run(t, testnode.NewLocal(t, n), []step{{cmd("PING"), "+PONG"}})
}

const pwHashNode = "30c952fab122c3f9759f02a6d95c3758b246b4fee239957b2d4fee46e26170c4" // sha256("pw")

// TestACLCommands: ACL SETUSER's errors, LIST, USERS, GETUSER, CAT,
// GENPASS, DRYRUN, HELP.
func TestACLCommands(t *testing.T) {
	n := aclNode(t, node.Config{})
	l := testnode.NewLocal(t, n)
	run(t, l, []step{
		{cmd("ACL LIST"), `["user default on nopass ~* &* +@all"]`},
		{cmd("ACL USERS"), `["default"]`},
		{cmd("ACL GETUSER default"), `["flags" ["on" "nopass"] "passwords" [] "commands" "+@all" "keys" "~*" "channels" "&*" "selectors" []]`},
		{cmd("ACL GETUSER nosuch"), "(nil)"},
		{cmd("ACL SETUSER app on >apppw ~app:* %R~stats:* +@ratelimit +get &alerts"), "+OK"},
		{cmd("ACL GETUSER app"), `["flags" ["on"] "passwords" ["` + appHash + `"] "commands" "-@all +@ratelimit +get" "keys" "~app:* %R~stats:*" "channels" "&alerts" "selectors" []]`},
		{cmd("ACL SETUSER dash on >pw ~* +@read -@dangerous"), "+OK"},
		{cmd("ACL SETUSER bare"), "+OK"},
		{cmd("ACL USERS"), `["app" "bare" "dash" "default"]`},
		{cmd("ACL LIST"), `["user app on #` + appHash + ` ~app:* %R~stats:* resetchannels &alerts -@all +@ratelimit +get" "user bare off resetchannels -@all" "user dash on #` + pwHashNode + ` ~* resetchannels -@all +@read -keys" "user default on nopass ~* &* +@all"]`},
		// Every rule or none.
		{cmd("ACL SETUSER app off +nosuch"), "-ERR Error in ACL SETUSER modifier '+nosuch': Unknown command or category name in ACL"},
		{cmd("ACL SETUSER app +@nosuch"), "-ERR Error in ACL SETUSER modifier '+@nosuch': Unknown command or category name in ACL"},
		{cmd("ACL SETUSER app bogus"), "-ERR Error in ACL SETUSER modifier 'bogus': Syntax error"},
		{cmd("ACL SETUSER app allkeys ~x"), "-ERR Error in ACL SETUSER modifier '~x': Adding a pattern after the * pattern (or the 'allkeys' flag) is not valid and does not have any effect. Try 'resetkeys' to start with an empty list of patterns"},
		{cmd("ACL SETUSER app &* &x"), "-ERR Error in ACL SETUSER modifier '&x': Adding a pattern after the * pattern (or the 'allchannels' flag) is not valid and does not have any effect. Try 'resetchannels' to start with an empty list of channels"},
		{cmd("ACL SETUSER app <nope"), "-ERR Error in ACL SETUSER modifier '<nope': The password you are trying to remove from the user does not exist"},
		{cmd("ACL SETUSER app #abc"), "-ERR Error in ACL SETUSER modifier '#abc': The password hash must be exactly 64 characters and contain only lowercase hexadecimal characters"},
		{cmd("ACL SETUSER app +client|kill|x"), "-ERR Error in ACL SETUSER modifier '+client|kill|x': Allowing first-arg of a subcommand is not supported"},
		{cmd("ACL SETUSER app (~*"), "-ERR Error in ACL SETUSER modifier '(~*': Syntax error"},
		{[]string{"ACL", "SETUSER", "app", "(~* +get)"}, "-ERR Error in ACL SETUSER modifier '(~* +get)': Selectors are not supported"},
		{[]string{"ACL", "SETUSER", "a b"}, "-ERR Usernames can't contain spaces or null characters"},
		{cmd("ACL GETUSER app"), `["flags" ["on"] "passwords" ["` + appHash + `"] "commands" "-@all +@ratelimit +get" "keys" "~app:* %R~stats:*" "channels" "&alerts" "selectors" []]`},
		{cmd("ACL SETUSER app !" + appHash + " nopass -get"), "+OK"},
		{cmd("ACL GETUSER app"), `["flags" ["on" "nopass"] "passwords" [] "commands" "-@all +@ratelimit" "keys" "~app:* %R~stats:*" "channels" "&alerts" "selectors" []]`},
		{cmd("ACL SETUSER app reset"), "+OK"},
		{cmd("ACL GETUSER app"), `["flags" ["off" "sanitize-payload"] "passwords" [] "commands" "-@all" "keys" "" "channels" "" "selectors" []]`},
		{cmd("ACL DELUSER default"), "-ERR The 'default' user cannot be removed"},
		{cmd("ACL DELUSER app default"), "-ERR The 'default' user cannot be removed"},
		{cmd("ACL DELUSER app nosuch bare"), "2"},
		{cmd("ACL USERS"), `["dash" "default"]`},
		// CAT.
		{cmd("ACL CAT"), `["keyspace" "read" "write" "set" "sortedset" "list" "hash" "string" "bitmap" "hyperloglog" "geo" "stream" "pubsub" "admin" "fast" "slow" "blocking" "dangerous" "connection" "transaction" "scripting" "ratelimit"]`},
		{cmd("ACL CAT ratelimit"), `["cl.throttle" "rl.acquire" "rl.all" "rl.bucket" "rl.cancel" "rl.fixed" "rl.leases" "rl.log" "rl.release" "rl.renew" "rl.slide" "rl.top"]`},
		{cmd("ACL CAT WRITE"), `["del" "flushall" "flushdb" "rl.acquire" "rl.all" "rl.bucket" "rl.cancel" "rl.fixed" "rl.log" "rl.release" "rl.renew" "rl.slide" "set" "unlink"]`},
		{cmd("ACL CAT nosuch"), "-ERR Unknown category 'nosuch'"},
		{cmd("ACL CAT a b"), "-ERR unknown subcommand or wrong number of arguments for 'CAT'. Try ACL HELP."},
		// DRYRUN.
		{cmd("ACL DRYRUN dash GET k"), "+OK"},
		{cmd("ACL DRYRUN dash KEYS *"), q("This user has no permissions to run the 'keys' command")},
		{cmd("ACL DRYRUN dash CONFIG GET x"), q("This user has no permissions to run the 'config|get' command")},
		{cmd("ACL SETUSER d2 on ~a* &c* +@all"), "+OK"},
		{cmd("ACL DRYRUN d2 DEL a1 b1"), q("This user has no permissions to access the 'b1' key")},
		{cmd("ACL DRYRUN d2 PUBLISH x m"), q("This user has no permissions to access the 'x' channel")},
		{cmd("ACL DRYRUN nosuch GET k"), "-ERR User 'nosuch' not found"},
		{cmd("ACL DRYRUN dash NOSUCH"), "-ERR Command 'NOSUCH' not found"},
		{cmd("ACL DRYRUN dash CLIENT BOGUS"), "-ERR Command 'CLIENT' not found"},
		{cmd("ACL DRYRUN dash GET"), "-ERR wrong number of arguments for 'get' command"},
		// GENPASS.
		{cmd("ACL GENPASS 0"), "-ERR ACL GENPASS argument must be the number of bits for the output password, a positive number up to 4096"},
		{cmd("ACL GENPASS x"), "-ERR value is not an integer or out of range"},
		// The container.
		{cmd("ACL"), "-ERR wrong number of arguments for 'acl' command"},
		{cmd("ACL BOGUS"), "-ERR unknown subcommand 'BOGUS'. Try ACL HELP."},
		{cmd("ACL WHOAMI x"), "-ERR wrong number of arguments for 'acl|whoami' command"},
		{cmd("ACL LOAD"), "-ERR This Redis instance is not configured to use an ACL file. You may want to specify users via the ACL SETUSER command and then start rlserver with --aclfile FILE, whose users ACL SAVE writes and ACL LOAD reads."},
		{cmd("ACL SAVE"), "-ERR This Redis instance is not configured to use an ACL file. You may want to specify users via the ACL SETUSER command and then start rlserver with --aclfile FILE, whose users ACL SAVE writes and ACL LOAD reads."},
	})
	for bits, chars := range map[string]int{"": 64, "1": 1, "5": 2, "256": 64, "4096": 1024} {
		args := []string{"ACL", "GENPASS"}
		if bits != "" {
			args = append(args, bits)
		}
		r := l.Do(args...)
		require.Len(t, r, chars+2, "GENPASS %s: %s", bits, r)
		require.Regexp(t, `^"[0-9a-f]+"$`, r)
	}
	help := l.Do("ACL", "HELP")
	require.True(t, strings.HasPrefix(help, "[+ACL <subcommand> [<arg> [value] [opt] ...]. Subcommands are: +CAT [<category>]"), help)
	require.True(t, strings.HasSuffix(help, "+HELP +    Prints this help.]"), help)
}

// TestACLDelUserKills: deleting a user closes its connections (CLIENT
// LIST no longer lists them), the caller's own after its reply; a command
// of theirs still in flight is refused; CLIENT KILL USER kills by user.
func TestACLDelUserKills(t *testing.T) {
	n := aclNode(t, node.Config{})
	admin := testnode.NewLocal(t, n)
	run(t, admin, []step{
		{cmd("ACL SETUSER app on nopass ~app:* +@ratelimit"), "+OK"},
		{cmd("ACL SETUSER ops on nopass ~* +@all"), "+OK"},
		{cmd("CLIENT KILL USER nosuch"), "-ERR No such user 'nosuch'"},
	})
	app1, app2, ops := testnode.NewLocal(t, n), testnode.NewLocal(t, n), testnode.NewLocal(t, n)
	for _, l := range []*testnode.Local{app1, app2} {
		require.Equal(t, "+OK", l.Do("AUTH", "app", "x"))
	}
	require.Equal(t, "+OK", ops.Do("AUTH", "ops", "x"))
	users := func() string {
		var out []string
		for _, m := range regexp.MustCompile(`user=(\S+)`).FindAllStringSubmatch(admin.Do("CLIENT", "LIST"), -1) {
			out = append(out, m[1])
		}
		return strings.Join(out, " ")
	}
	require.Equal(t, "default app app ops", users())
	require.Equal(t, "1", admin.Do("CLIENT", "KILL", "USER", "app", "ID", "3"))
	require.Equal(t, "default app ops", users())
	require.Equal(t, "1", admin.Do("ACL", "DELUSER", "app"))
	require.Equal(t, "default ops", users())
	require.Equal(t, noPermCmd("cl.throttle"), app1.Do("CL.THROTTLE", "app:x", "1", "1", "1"), "in flight after its user went")
	require.Equal(t, "1", ops.Do("ACL", "DELUSER", "ops"))
	require.Equal(t, "default", users(), "the caller closes after its reply")
}

// TestACLChannelsRevoked: ACL SETUSER closes the user's subscribers
// whose subscriptions the new rules no longer allow, as Redis does.
func TestACLChannelsRevoked(t *testing.T) {
	n := aclNode(t, node.Config{})
	admin := testnode.NewLocal(t, n)
	run(t, admin, []step{{cmd("ACL SETUSER sub on nopass ~* &news.* &sports +@all"), "+OK"}})
	news, sports, other := testnode.NewLocal(t, n), testnode.NewLocal(t, n), testnode.NewLocal(t, n)
	for _, l := range []*testnode.Local{news, sports, other} {
		require.Equal(t, "+OK", l.Do("AUTH", "sub", "x"))
	}
	require.Equal(t, `["subscribe" "news.a" 1]`, news.Do("SUBSCRIBE", "news.a"))
	require.Equal(t, `["psubscribe" "news.*" 2]`, news.Do("PSUBSCRIBE", "news.*"))
	require.Equal(t, `["subscribe" "sports" 1]`, sports.Do("SUBSCRIBE", "sports"))
	count := func() int { return strings.Count(admin.Do("CLIENT", "LIST"), "user=sub") }
	require.Equal(t, 3, count())
	run(t, admin, []step{{cmd("ACL SETUSER sub &more"), "+OK"}})
	require.Equal(t, 3, count(), "more channels close nobody")
	run(t, admin, []step{{cmd("ACL SETUSER sub resetchannels &news.*"), "+OK"}})
	require.Equal(t, 2, count(), "the sports subscriber is closed")
	require.Equal(t, "1", other.Do("PUBLISH", "news.b", "m"), "the news subscriber stays")
}

// TestACLFile: --aclfile is read at start; ACL SAVE writes the users
// (replacing the file whole), ACL LOAD reads them back all or nothing: a
// bad file changes nothing and the error names each bad line; a good one
// replaces every user and closes the connections of the users before.
func TestACLFile(t *testing.T) {
	path := filepath.Join(t.TempDir(), "users.acl")
	require.NoError(t, os.WriteFile(path, []byte("user default on nopass ~* &* +@all\nuser app on >apppw ~app:* +@ratelimit\n"), 0o600))
	require.ErrorContains(t, node.Config{ACLFile: path, RequirePass: "x", Shards: 1, MaxClients: 1, Dir: "d"}.Validate(), "--requirepass together with --aclfile is invalid")
	n := aclNode(t, node.Config{ACLFile: path})
	require.NoError(t, n.LoadUsers(nil))
	admin := testnode.NewLocal(t, n)
	app := testnode.NewLocal(t, n)
	run(t, app, []step{{cmd("AUTH app apppw"), "+OK"}})
	run(t, admin, []step{
		{cmd("ACL USERS"), `["app" "default"]`},
		{cmd("CONFIG GET aclfile"), `["aclfile" "` + path + `"]`},
		{cmd("CONFIG SET requirepass x"), "-ERR CONFIG SET failed (possibly related to argument 'requirepass') - the default user's password is kept in the ACL file: use ACL SETUSER default and ACL SAVE"},
		{cmd("ACL SETUSER dash on >pw ~* +@read -@dangerous"), "+OK"},
		{cmd("ACL SAVE"), "+OK"},
	})
	b, err := os.ReadFile(path)
	require.NoError(t, err)
	require.Equal(t, "user app on #"+appHash+" ~app:* resetchannels -@all +@ratelimit\n"+
		"user dash on #"+pwHashNode+" ~* resetchannels -@all +@read -keys\n"+
		"user default on nopass ~* &* +@all\n", string(b))
	entries, err := os.ReadDir(filepath.Dir(path))
	require.NoError(t, err)
	require.Len(t, entries, 1, "no temporary file left")

	// A bad file: every problem named, nothing changed.
	require.NoError(t, os.WriteFile(path, []byte("user default on nopass ~* &* +@all\n# a comment\nuser ops on ~* +nosuch +@all\nuser x bogus ~* ~y\nuser ops on\n"), 0o600))
	run(t, admin, []step{
		{cmd("ACL LOAD"), "-ERR " + path + ":2 should start with user keyword followed by the username. " +
			path + ":3: Error in applying operation '+nosuch': Unknown command or category name in ACL. " +
			path + ":4: Syntax error. WARNING: Duplicate user 'ops' found on line 5. " +
			"WARNING: ACL errors detected, no change to the previously active ACL rules was performed"},
		{cmd("ACL USERS"), `["app" "dash" "default"]`},
	})
	run(t, app, []step{{cmd("CL.THROTTLE app:x 1 1 60"), "[0 2 1 -1 60]"}})

	// A good file: its users only; the default user keeps its
	// connections, the others' are closed.
	require.NoError(t, os.WriteFile(path, []byte("user ops on >pw ~* +@all\nuser default on nopass ~* &* -@all +@read +@connection\n"), 0o600))
	run(t, admin, []step{
		{cmd("ACL LOAD"), "+OK"},
		{cmd("ACL USERS"), noPermCmd("acl|users")}, // the default user's new rules, at once
		{cmd("AUTH ops pw"), "+OK"},
		{cmd("ACL USERS"), `["default" "ops"]`},
		{cmd("ACL LIST"), `["user default on nopass ~* &* -@all +@connection +@read" "user ops on #` + pwHashNode + ` ~* resetchannels +@all"]`},
	})
	require.NotContains(t, admin.Do("CLIENT", "LIST"), "user=app")
	require.Equal(t, noPermCmd("cl.throttle"), app.Do("CL.THROTTLE", "app:x", "1", "1", "60"))

	// A file without the default user leaves it as at a start without
	// one (and closes ops's connection, the caller's too); a file that
	// cannot be read changes nothing.
	require.NoError(t, os.WriteFile(path, []byte("user ops on >pw ~* +@all\n"), 0o600))
	run(t, admin, []step{{cmd("ACL LOAD"), "+OK"}})
	admin = testnode.NewLocal(t, n)
	run(t, admin, []step{
		{cmd("ACL LIST"), `["user default on nopass ~* &* +@all" "user ops on #` + pwHashNode + ` ~* resetchannels +@all"]`},
	})
	require.NotContains(t, admin.Do("CLIENT", "LIST"), "user=ops", "the caller of ACL LOAD, as ops, is closed")
	require.NoError(t, os.Remove(path))
	run(t, admin, []step{
		{cmd("ACL LOAD"), "-ERR Error loading ACLs, opening file '" + path + "': no such file or directory"},
		{cmd("ACL USERS"), `["default" "ops"]`},
		{cmd("ACL SAVE"), "+OK"},
	})
	b, err = os.ReadFile(path)
	require.NoError(t, err)
	require.Equal(t, "user default on nopass ~* &* +@all\nuser ops on #"+pwHashNode+" ~* resetchannels +@all\n", string(b))
}

// TestACLHotPathAllocatesNothing: a user with rules to check (a command
// category and a key pattern) decides without allocating, as the
// default user does.
func TestACLHotPathAllocatesNothing(t *testing.T) {
	n := aclNode(t, node.Config{})
	c, err := n.NewClient("t", "t", nil)
	require.NoError(t, err)
	w := rltest.NewRecorder(2)
	for _, args := range [][]string{{"ACL", "SETUSER", "app", "on", "nopass", "~user:*", "~other:*", "+@ratelimit"}, {"AUTH", "app", "x"}} {
		w.Reset()
		n.Exec(c, rltest.Argv(args...), w)
		require.Equal(t, "+OK", w.String())
	}
	for _, args := range [][]string{
		{"CL.THROTTLE", "user:123", "15", "30", "60", "1"},
		{"RL.FIXED", "user:f", "100", "60s"},
	} {
		argv := rltest.Argv(args...)
		if a := testing.AllocsPerRun(1000, func() { w.Reset(); n.Exec(c, argv, w) }); a != 0 {
			t.Errorf("%v: %v allocations per command, want 0", args, a)
		}
		require.Zero(t, w.Errors, "%v: %s", args, w.String())
	}
}

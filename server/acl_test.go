package server_test

import (
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"
	"github.com/rlserver/rlserver/internal/rltest"
	"github.com/rlserver/rlserver/internal/testserver"
	"github.com/rlserver/rlserver/node"
	"github.com/rlserver/rlserver/server"
	"github.com/stretchr/testify/require"
)

// TestACLGoRedis: users from the ACL file (--aclfile), through go-redis
// logging in with HELLO AUTH: a dashboard that reads everything but
// nothing dangerous (INFO is @dangerous in Redis 7, so it needs +info),
// and an application that may only rate limit its own keys. Refusals are
// Redis's NOPERM errors, and change nothing.
func TestACLGoRedis(t *testing.T) {
	path := filepath.Join(t.TempDir(), "users.acl")
	require.NoError(t, os.WriteFile(path, []byte(
		"user default on >adminpw ~* &* +@all\n"+
			"user dashboard on >dashpw ~* +@read +@connection -@dangerous\n"+
			"user app on >apppw ~app:* +@ratelimit\n"), 0o600))
	s := testserver.Start(t, func(o *server.Options) { o.Config.ACLFile = path })
	ctx := testCtx(t, 60*time.Second)
	const (
		noPermKeys = "NOPERM this user has no permissions to access one of the keys used as arguments"
		wrongPass  = "WRONGPASS invalid username-password pair or user is disabled."
	)
	noPerm := func(cmd string) string { return "NOPERM this user has no permissions to run the '" + cmd + "' command" }
	admin := newClient(t, s, func(o *redis.Options) { o.Password = "adminpw" })
	require.Equal(t, "default", admin.Do(ctx, "ACL", "WHOAMI").Val())

	for _, proto := range []int{2, 3} {
		t.Run(fmt.Sprintf("RESP%d", proto), func(t *testing.T) {
			key := fmt.Sprintf("app:x%d", proto)
			app := newClient(t, s, func(o *redis.Options) { o.Protocol = proto; o.Username = "app"; o.Password = "apppw" })
			require.Equal(t, []int64{0, 2, 1, -1, 60}, ints(t, throttle(ctx, app, key, 1, 1, 60).Val()))
			require.Equal(t, []int64{0, 10, 9, -1, 40000}, ints(t, app.Do(ctx, "RL.FIXED", fmt.Sprintf("app:f%d", proto), 10, "60s").Val()))
			require.Equal(t, noPermKeys, redisErrText(t, throttle(ctx, app, "other:x", 1, 1, 60).Err()))
			require.Equal(t, noPerm("flushall"), redisErrText(t, app.FlushAll(ctx).Err()))
			require.Equal(t, noPerm("get"), redisErrText(t, app.Get(ctx, key).Err()))
			require.Equal(t, noPerm("acl|whoami"), redisErrText(t, app.Do(ctx, "ACL", "WHOAMI").Err()))
			require.Equal(t, int64(0), admin.Exists(ctx, "other:x").Val(), "a refused command wrote")
			require.Positive(t, admin.DBSize(ctx).Val(), "FLUSHALL was refused")

			dash := newClient(t, s, func(o *redis.Options) { o.Protocol = proto; o.Username = "dashboard"; o.Password = "dashpw" })
			require.Equal(t, "PONG", dash.Ping(ctx).Val())
			info, err := dash.ClientInfo(ctx).Result()
			require.NoError(t, err)
			require.Equal(t, "dashboard", info.User)
			require.Equal(t, proto, info.Resp, "HELLO <proto> AUTH dashboard dashpw logged in")
			require.Positive(t, dash.PTTL(ctx, key).Val())
			require.Equal(t, "string", dash.Type(ctx, key).Val())
			keys, _, err := dash.Scan(ctx, 0, "app:*", 100).Result()
			require.NoError(t, err)
			require.Contains(t, keys, key)
			require.NoError(t, dash.Do(ctx, "RL.TOP").Err())
			require.Equal(t, noPerm("info"), redisErrText(t, dash.Info(ctx).Err()))
			require.Equal(t, noPerm("keys"), redisErrText(t, dash.Keys(ctx, "*").Err()))
			require.Equal(t, noPerm("cl.throttle"), redisErrText(t, throttle(ctx, dash, key, 1, 1, 60).Err()))
			require.Equal(t, noPerm("client|list"), redisErrText(t, dash.ClientList(ctx).Err()))
			require.Equal(t, noPerm("config|get"), redisErrText(t, dash.ConfigGet(ctx, "maxclients").Err()))

			wrong := newClient(t, s, func(o *redis.Options) { o.Protocol = proto; o.Username = "app"; o.Password = "nope" })
			require.Equal(t, wrongPass, redisErrText(t, wrong.Ping(ctx).Err()))
		})
	}

	// The dashboard gets INFO; the change reaches its open connections.
	dash := newClient(t, s, func(o *redis.Options) { o.Username = "dashboard"; o.Password = "dashpw" })
	require.Error(t, dash.Info(ctx, "server").Err())
	require.NoError(t, admin.Do(ctx, "ACL", "SETUSER", "dashboard", "+info").Err())
	require.Contains(t, dash.Info(ctx, "server").Val(), "redis_version:")

	// ACL SAVE keeps it in the file.
	require.NoError(t, admin.Do(ctx, "ACL", "SAVE").Err())
	b, err := os.ReadFile(path)
	require.NoError(t, err)
	require.Contains(t, string(b), "user dashboard on #8bb124ee46bcaa8764e86d479a3392d504caa95ff3b95e103c6c681870a168f9 ~* resetchannels -@all +@read +@connection -client|kill -client|list -client|no-evict -client|pause -client|unblock -client|unpause +info -keys\n")

	// A deleted user's connections are closed, and it logs in no more.
	app := newClient(t, s, func(o *redis.Options) { o.Username = "app"; o.Password = "apppw" })
	require.NoError(t, throttle(ctx, app, "app:y", 1, 1, 60).Err())
	require.Equal(t, int64(1), admin.Do(ctx, "ACL", "DELUSER", "app").Val())
	require.NotContains(t, admin.ClientList(ctx).Val(), "user=app")
	rltest.WaitFor(t, 10*time.Second, "the deleted user refused", func() (bool, string) {
		err := app.Ping(ctx).Err() // the closed connection's error first, then the new one's login
		return err != nil && strings.HasPrefix(err.Error(), "WRONGPASS"), fmt.Sprint(err)
	})
}

// TestACLFileAtStart: a bad ACL file stops the start, naming the line;
// --requirepass with --aclfile is refused.
func TestACLFileAtStart(t *testing.T) {
	dir := t.TempDir()
	path := filepath.Join(dir, "users.acl")
	require.NoError(t, os.WriteFile(path, []byte("user default on nopass ~* &* +@all\nuser app on ~app:* +@nosuch\n"), 0o600))
	cfg := node.Config{Bind: "127.0.0.1", Dir: filepath.Join(dir, "data"), Shards: 4, MaxClients: 10, ACLFile: path, Limits: node.DefaultLimits}
	_, err := server.Start(server.Options{Config: cfg})
	require.EqualError(t, err, "--aclfile: "+path+":2: Error in applying operation '+@nosuch': Unknown command or category name in ACL. WARNING: ACL errors detected, no change to the previously active ACL rules was performed")

	cfg.ACLFile = filepath.Join(dir, "missing.acl")
	_, err = server.Start(server.Options{Config: cfg})
	require.EqualError(t, err, "--aclfile: Error loading ACLs, opening file '"+cfg.ACLFile+"': no such file or directory")

	cfg.ACLFile, cfg.RequirePass = path, "x"
	_, err = server.Start(server.Options{Config: cfg})
	require.ErrorContains(t, err, "--requirepass together with --aclfile is invalid")
}

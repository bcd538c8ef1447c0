package node_test

import (
	"testing"
	"time"

	"github.com/rlserver/rlserver/clock"
	"github.com/rlserver/rlserver/commands"
	"github.com/rlserver/rlserver/engine"
	"github.com/rlserver/rlserver/internal/rltest"
	"github.com/rlserver/rlserver/internal/testnode"
	"github.com/rlserver/rlserver/node"
	"github.com/stretchr/testify/require"
)

// TestProtectedMode: the peer rule at the function level (tests connect
// on loopback only). While the default user has no password, a peer off
// the loopback interface is refused with Redis 7.0's -DENIED text and
// counted as a rejected connection; loopback peers, a password, or
// protected mode off let it in.
func TestProtectedMode(t *testing.T) {
	for _, tc := range []struct {
		name      string
		cfg       node.Config
		addr      string
		refused   bool
		configSet []string // CONFIG SET before connecting
	}{
		{"loopback v4", node.Config{}, "127.0.0.1:5000", false, nil},
		{"loopback v4 other", node.Config{}, "127.8.9.10:5000", false, nil},
		{"loopback v6", node.Config{}, "[::1]:5000", false, nil},
		{"private v4", node.Config{}, "10.1.2.3:5000", true, nil},
		{"public v6", node.Config{}, "[2001:db8::1]:5000", true, nil},
		{"v4-mapped", node.Config{}, "[::ffff:192.0.2.1]:5000", true, nil},
		{"not an IP (in process)", node.Config{}, "local", false, nil},
		{"password", node.Config{RequirePass: "pw"}, "10.1.2.3:5000", false, nil},
		{"protected mode off", node.Config{ProtectedModeOff: true}, "10.1.2.3:5000", false, nil},
		{"CONFIG SET protected-mode no", node.Config{}, "10.1.2.3:5000", false, []string{"protected-mode", "no"}},
		{"CONFIG SET requirepass", node.Config{}, "10.1.2.3:5000", false, []string{"requirepass", "pw"}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			tc.cfg.Shards, tc.cfg.MaxClients = 4, 10
			n := node.New(tc.cfg, engine.New(4), clock.NewManual(rltest.StartNs), node.Options{})
			if tc.configSet != nil {
				l := testnode.NewLocal(t, n)
				require.Equal(t, "+OK", l.Do(append([]string{"CONFIG", "SET"}, tc.configSet...)...))
			}
			c, err := n.NewClient(tc.addr, "10.0.0.1:6379", nil)
			if !tc.refused {
				require.NoError(t, err)
				n.RemoveClient(c)
				return
			}
			require.Equal(t, commands.ErrDenied, err)
			require.Contains(t, rltest.InfoText(t, testnode.NewLocal(t, n), "stats"), "rejected_connections:1\r\n")
		})
	}
	require.Equal(t, "DENIED Redis is running in protected mode because protected mode is enabled and no password is set for the default user. In this mode connections are only accepted from the loopback interface. If you want to connect from external computers to Redis you may adopt one of the following solutions: 1) Just disable protected mode sending the command 'CONFIG SET protected-mode no' from the loopback interface by connecting to Redis from the same host the server is running, however MAKE SURE Redis is not publicly accessible from internet if you do so. Use CONFIG REWRITE to make this change permanent. 2) Alternatively you can just disable the protected mode by editing the Redis configuration file, and setting the protected mode option to 'no', and then restarting the server. 3) If you started the server manually just for testing, restart it with the '--protected-mode no' option. 4) Setup a an authentication password for the default user. NOTE: You only need to do one of the above things in order for the server to start accepting connections from the outside.",
		string(commands.ErrDenied), "Redis 7.0.15's networking.c, clientAcceptHandler")
}

// TestOutputOver: the client output buffer limit's rule: over the hard
// limit at once; over the soft one for its seconds (the clock starts the
// first time and stops when under); nothing with no limit.
func TestOutputOver(t *testing.T) {
	t0 := time.Unix(1_700_000_000, 0)
	for _, tc := range []struct {
		limit string
		steps []struct {
			unread int64
			at     time.Duration
			over   bool
		}
	}{
		{"normal 0 0 0", []struct {
			unread int64
			at     time.Duration
			over   bool
		}{{1 << 40, 0, false}}},
		{"normal 1mb 0 0", []struct {
			unread int64
			at     time.Duration
			over   bool
		}{{1 << 20, 0, false}, {1<<20 + 1, 0, true}}},
		{"normal 0 100kb 10", []struct {
			unread int64
			at     time.Duration
			over   bool
		}{{200 << 10, 0, false}, {200 << 10, 9 * time.Second, false}, {10, 9500 * time.Millisecond, false}, {200 << 10, 12 * time.Second, false}, {200 << 10, 22 * time.Second, true}}},
	} {
		t.Run(tc.limit, func(t *testing.T) {
			o, err := node.ParseOutputLimit(tc.limit)
			require.NoError(t, err)
			n := node.New(node.Config{Shards: 4, MaxClients: 10, OutputLimit: o}, engine.New(4), clock.NewManual(rltest.StartNs), node.Options{})
			c, err := n.NewClient("127.0.0.1:1", "127.0.0.1:2", nil)
			require.NoError(t, err)
			var since time.Time
			for i, s := range tc.steps {
				require.Equal(t, s.over, n.OutputOver(c, s.unread, &since, t0.Add(s.at)), "step %d", i)
			}
		})
	}
	for _, bad := range []string{"replica 1mb 0 0", "normal 1mb 0", "normal x 0 0", "normal 0 0 -1"} {
		_, err := node.ParseOutputLimit(bad)
		require.Error(t, err, bad)
	}
}

package server_test

import (
	"bytes"
	"context"
	"fmt"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"
	"github.com/rlserver/rlserver/internal/rltest"
	"github.com/rlserver/rlserver/internal/testserver"
	"github.com/rlserver/rlserver/server"
	"github.com/stretchr/testify/require"
)

// TestPubSub: SUBSCRIBE, PSUBSCRIBE, PUBLISH across connections in RESP2
// and RESP3 shapes, Redis's subscribed mode, UNSUBSCRIBE, and CLIENT KILL
// TYPE pubsub|normal (docs/protocol.md, "Pub/sub").
func TestPubSub(t *testing.T) {
	for _, perConn := range []bool{false, true} { // event loops, and a goroutine per connection
		s := testserver.Start(t, func(o *server.Options) { o.GoroutinePerConn = perConn })
		addr := s.Addr.String()
		sub, pub := rltest.Dial(t, addr), rltest.Dial(t, addr)
		require.Equal(t, "[\"subscribe\" \"__sentinel__:hello\" 1]", sub.Do("SUBSCRIBE", "__sentinel__:hello"))
		sub.Send(rltest.Encode("PSUBSCRIBE", "h*", "x?"))
		for _, want := range []string{`["psubscribe" "h*" 2]`, `["psubscribe" "x?" 3]`} {
			r, err := sub.Read()
			require.NoError(t, err)
			require.Equal(t, want, r)
		}
		require.Equal(t, "1", pub.Do("PUBLISH", "__sentinel__:hello", "127.0.0.1,26379,abc,0"))
		r, err := sub.Read()
		require.NoError(t, err)
		require.Equal(t, `["message" "__sentinel__:hello" "127.0.0.1,26379,abc,0"]`, r)
		require.Equal(t, "1", pub.Do("PUBLISH", "hello", "world"))
		r, err = sub.Read()
		require.NoError(t, err)
		require.Equal(t, `["pmessage" "h*" "hello" "world"]`, r)
		require.Equal(t, "0", pub.Do("PUBLISH", "nobody", "x"))

		// Subscribed mode (RESP2).
		require.Equal(t, "-ERR Can't execute 'get': only (P|S)SUBSCRIBE / (P|S)UNSUBSCRIBE / PING / QUIT / RESET are allowed in this context", sub.Do("GET", "k"))
		require.Equal(t, "-ERR Can't execute 'client|setname': only (P|S)SUBSCRIBE / (P|S)UNSUBSCRIBE / PING / QUIT / RESET are allowed in this context", sub.Do("CLIENT", "SETNAME", "x"))
		require.Equal(t, `["pong" ""]`, sub.Do("PING"))
		require.Equal(t, `["pong" "hi"]`, sub.Do("PING", "hi"))

		// RESP3: pushes, any command, its own messages.
		r3 := rltest.Dial(t, addr)
		r3.Do("HELLO", "3")
		require.Equal(t, `>["subscribe" "c3" 1]`, r3.Do("SUBSCRIBE", "c3"))
		require.Equal(t, "(nil)", r3.Do("GET", "k"))
		r3.Send(rltest.Encode("PUBLISH", "c3", "self"))
		r, err = r3.Read()
		require.NoError(t, err)
		require.Equal(t, `>["message" "c3" "self"]`, r, "its own message first")
		r, err = r3.Read()
		require.NoError(t, err)
		require.Equal(t, "1", r)

		// CLIENT LIST shows the counts; KILL TYPE pubsub takes the
		// subscribers (not the caller), TYPE normal the others.
		list := pub.Do("CLIENT", "LIST")
		require.Contains(t, list, "flags=P db=0 sub=1 psub=2")
		require.Equal(t, "2", pub.Do("CLIENT", "KILL", "TYPE", "pubsub"))
		require.True(t, sub.Closed())
		require.True(t, r3.Closed())
		other := rltest.Dial(t, addr)
		require.Equal(t, "+PONG", other.Do("PING"))
		require.Equal(t, "1", pub.Do("CLIENT", "KILL", "TYPE", "normal"), "the other normal client, never the caller")
		require.True(t, other.Closed())
		require.Equal(t, "0", pub.Do("PUBLISH", "__sentinel__:hello", "x"), "a closed subscriber is gone")
		require.Equal(t, "-ERR Unknown client type 'bogus'", pub.Do("CLIENT", "KILL", "TYPE", "bogus"))
		require.Equal(t, "0", pub.Do("CLIENT", "KILL", "TYPE", "master"), "a primary has no primary link")
		require.Equal(t, "0", pub.Do("CLIENT", "KILL", "TYPE", "slave"), "nor replicas")

		// UNSUBSCRIBE: each, then all, then none left.
		u := rltest.Dial(t, addr)
		u.Send(rltest.Encode("SUBSCRIBE", "a", "b"))
		u.Read()
		u.Read()
		require.Equal(t, `["unsubscribe" "a" 1]`, u.Do("UNSUBSCRIBE", "a"))
		require.Equal(t, `["unsubscribe" "b" 0]`, u.Do("UNSUBSCRIBE"))
		require.Equal(t, `["unsubscribe" (nil) 0]`, u.Do("UNSUBSCRIBE"))
		require.Equal(t, "(nil)", u.Do("GET", "k"), "out of subscribed mode")
		require.Equal(t, "0", pub.Do("PUBLISH", "a", "x"))
	}
}

// TestPubSubGoRedisAndReplica: go-redis's PubSub receives what is
// published, on a replica too (Sentinel publishes and subscribes on
// every node).
func TestPubSubGoRedisAndReplica(t *testing.T) {
	p, r := startRepl(t), startRepl(t)
	follow(t, r, p)
	ctx := context.Background()
	c := redis.NewClient(&redis.Options{Addr: r.s.Addr.String()})
	defer c.Close()
	ps := c.Subscribe(ctx, "__sentinel__:hello")
	defer ps.Close()
	_, err := ps.Receive(ctx)
	require.NoError(t, err)
	require.Equal(t, "1", r.c.Do("PUBLISH", "__sentinel__:hello", "from a sentinel"))
	ctx2, cancel := context.WithTimeout(ctx, 10*time.Second)
	defer cancel()
	m, err := ps.ReceiveMessage(ctx2)
	require.NoError(t, err)
	require.Equal(t, "from a sentinel", m.Payload)
}

// TestSentinelTransaction: the MULTI block Sentinel sends to promote or
// re-point a node is accepted at queue time and runs.
func TestSentinelTransaction(t *testing.T) {
	p, r := startRepl(t), startRepl(t)
	follow(t, r, p)
	// CLIENT KILL TYPE normal spares replication links: the replica
	// never had to reconnect.
	pk0 := rltest.Dial(t, p.s.Addr.String())
	require.Equal(t, "1", pk0.Do("CLIENT", "KILL", "TYPE", "normal"), "the test's other connection, not the link")
	pk0.Do("RL.FIXED", "w", "5", "1m")
	require.Equal(t, "1", pk0.Do("WAIT", "1", "5000"))
	f := rltest.Info(t, pk0, "stats")
	require.Equal(t, []string{"1", "0"}, []string{f["sync_full"], f["sync_partial_ok"]})
	killer := rltest.Dial(t, r.s.Addr.String())
	for _, cmd := range [][]string{{"MULTI"}, {"SLAVEOF", "NO", "ONE"}, {"CONFIG", "REWRITE"}, {"CLIENT", "KILL", "TYPE", "normal"}, {"CLIENT", "KILL", "TYPE", "pubsub"}} {
		want := "+QUEUED"
		if cmd[0] == "MULTI" {
			want = "+OK"
		}
		require.Equal(t, want, killer.Do(cmd...), "%q", cmd)
	}
	require.Equal(t, `[+OK -ERR The server is running without a config file 1 0]`, killer.Do("EXEC"))
	require.Equal(t, "master", rltest.Info(t, killer, "replication")["role"])

	// The old primary re-pointed at the promoted one, the same way.
	pk := rltest.Dial(t, p.s.Addr.String())
	require.Equal(t, "+OK", pk.Do("MULTI"))
	for _, cmd := range [][]string{{"SLAVEOF", "127.0.0.1", strconv.Itoa(r.port)}, {"CONFIG", "REWRITE"}, {"CLIENT", "KILL", "TYPE", "normal"}, {"CLIENT", "KILL", "TYPE", "pubsub"}} {
		require.Equal(t, "+QUEUED", pk.Do(cmd...), "%q", cmd)
	}
	require.Equal(t, `[+OK -ERR The server is running without a config file 1 0]`, pk.Do("EXEC"))
	rltest.WaitLinkUp(t, pk)
	require.Equal(t, strconv.Itoa(r.port), rltest.Info(t, pk, "replication")["master_port"])
}

// TestSlowSubscriberIsDisconnected: a subscriber that never reads is
// closed once its unread messages pass the output limit (64 MiB); the
// publisher is never blocked and the server goes on.
func TestSlowSubscriberIsDisconnected(t *testing.T) {
	for _, perConn := range []bool{false, true} {
		s := testserver.Start(t, func(o *server.Options) { o.GoroutinePerConn = perConn })
		addr := s.Addr.String()
		sub, pub := rltest.Dial(t, addr), rltest.Dial(t, addr)
		require.Equal(t, `["subscribe" "flood" 1]`, sub.Do("SUBSCRIBE", "flood"))
		payload := strings.Repeat("x", 60<<10)
		cmds := make([][]string, 200)
		for i := range cmds {
			cmds[i] = []string{"PUBLISH", "flood", payload}
		}
		rltest.WaitFor(t, 60*time.Second, "the subscriber dropped", func() (bool, string) {
			replies := rltest.Pipeline(t, pub, cmds)
			last := replies[len(replies)-1]
			return last == "0", last
		})
		require.Equal(t, "+PONG", rltest.Dial(t, addr).Do("PING"))
	}
}

// TestSubscribeConfirmedFirst: a subscriber gets the confirmation of its
// SUBSCRIBE before any message published to the channel, however its
// pipeline goes on and however busy the channel is, served by event
// loops or by a goroutine per connection (TLS connections, other
// platforms), as Redis orders them.
func TestSubscribeConfirmedFirst(t *testing.T) {
	for _, perConn := range []bool{false, true} {
		t.Run(fmt.Sprintf("goroutine per connection %v", perConn), func(t *testing.T) {
			s := testserver.Start(t, func(o *server.Options) { o.GoroutinePerConn = perConn })
			pub := rltest.Dial(t, s.Addr.String())
			stop := make(chan struct{})
			done := make(chan struct{})
			go func() { // the channel stays busy throughout
				defer close(done)
				burst := bytes.Repeat(rltest.Encode("PUBLISH", "ch", "hello"), 100)
				for {
					select {
					case <-stop:
						return
					default:
					}
					if pub.Write(burst) != nil {
						return
					}
					for range 100 {
						if _, err := pub.Read(); err != nil {
							return
						}
					}
				}
			}()
			defer func() { close(stop); <-done }()
			pipeline := append(rltest.Encode("SUBSCRIBE", "ch"), bytes.Repeat(rltest.Encode("PING"), 2000)...)
			for i := range 50 {
				c := rltest.Dial(t, s.Addr.String())
				c.Send(pipeline)
				first, err := c.Read()
				require.NoError(t, err)
				require.Equal(t, `["subscribe" "ch" 1]`, first, "subscriber %d: the confirmation comes first", i)
			}
		})
	}
}

package server_test

import (
	"bytes"
	"context"
	"fmt"
	"net"
	"runtime"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"
	"github.com/rlserver/rlserver/internal/rltest"
	"github.com/rlserver/rlserver/internal/testserver"
	"github.com/rlserver/rlserver/node"
	"github.com/rlserver/rlserver/server"
	"github.com/stretchr/testify/require"
)

// TestOutputBufferLimit: 100 clients send KEYS * (a 600 KB reply each)
// and never read; each is disconnected once its unread replies pass the
// hard limit, the server's heap stays bounded, and a well-behaved client
// alongside gets every reply. One reply is over the limit by itself: a
// connection whose socket is full reads no more requests (protocol.md), so
// the replies of a pipeline of small ones could stop short of the limit
// when the server happens to read it in small pieces, as it does on a
// loaded machine.
func TestOutputBufferLimit(t *testing.T) {
	limit, err := node.ParseOutputLimit("normal 256kb 0 0")
	require.NoError(t, err)
	s := testserver.Start(t, func(o *server.Options) { o.Config.OutputLimit = limit })
	ctx := context.Background()
	good := redis.NewClient(&redis.Options{Addr: s.Addr.String(), PoolSize: 1})
	defer good.Close()
	require.NoError(t, good.Ping(ctx).Err())
	heap := func() uint64 {
		runtime.GC()
		var m runtime.MemStats
		runtime.ReadMemStats(&m)
		return m.HeapAlloc
	}
	// 600 keys of 1,000-byte names: KEYS * answers 600 KB, more than
	// the limit plus what a non-reading client's socket takes (a 16 KiB
	// receive buffer, below).
	admin := rltest.Dial(t, s.Addr.String())
	for i := range 600 {
		reply := admin.Do("RL.FIXED", fmt.Sprintf("%03d:%s", i, strings.Repeat("k", 996)), "10", "1h")
		require.True(t, strings.HasPrefix(reply, "[0 10 9 -1 "), reply)
	}
	before := heap()

	const greedy = 100
	pipeline := bytes.Repeat(rltest.Encode("KEYS", "*"), 3)
	var wg sync.WaitGroup
	conns := make([]net.Conn, greedy)
	for i := range conns {
		nc, err := net.Dial("tcp", s.Addr.String())
		require.NoError(t, err)
		// A small receive buffer: the replies back up on the server's
		// side as soon as the kernel's buffers are full (on loopback they
		// may hold tens of MB).
		require.NoError(t, nc.(*net.TCPConn).SetReadBuffer(16<<10))
		t.Cleanup(func() { nc.Close() })
		conns[i] = nc
		wg.Add(1)
		go func() {
			defer wg.Done()
			nc.SetWriteDeadline(time.Now().Add(30 * time.Second))
			nc.Write(pipeline) // may fail once the server closes it
		}()
	}
	// Meanwhile, a client that reads its replies is served.
	for i := range 1000 {
		res, err := good.Do(ctx, "CL.THROTTLE", "good", "2000", "1", "60").Slice()
		require.NoError(t, err, "request %d", i)
		require.Equal(t, int64(0), res[0])
	}
	rltest.WaitFor(t, 30*time.Second, "every greedy client disconnected", func() (bool, string) {
		st := rltest.Info(t, admin, "stats")
		return st["client_output_buffer_limit_disconnections"] == "100", st["client_output_buffer_limit_disconnections"]
	})
	wg.Wait()
	grown := int64(heap()) - int64(before)
	require.Less(t, grown, int64(64<<20), "the server's heap grew %d bytes for 100 clients that never read", grown)
	require.NoError(t, good.Ping(ctx).Err())
	rltest.WaitFor(t, 10*time.Second, "only the good client and this one left", func() (bool, string) {
		c := rltest.Info(t, admin, "clients")["connected_clients"]
		return c == "2", c + "\n" + admin.Do("CLIENT", "LIST")
	})
}

package server_test

import (
	"bytes"
	"context"
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

// TestOutputBufferLimit: 100 clients pipeline ECHO (800 KB of replies
// each) and never read; each is disconnected once its unread replies pass
// the hard limit, the server's heap stays bounded, and a well-behaved
// client alongside gets every reply.
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
	before := heap()

	const greedy = 100
	pipeline := bytes.Repeat(rltest.Encode("ECHO", strings.Repeat("x", 4096)), 200)
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
	admin := rltest.Dial(t, s.Addr.String())
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
		return c == "2", c
	})
}

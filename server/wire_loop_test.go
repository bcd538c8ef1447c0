package server_test

import (
	"bufio"
	"context"
	"fmt"
	"net"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/rlserver/rlserver/internal/rltest"
	"github.com/rlserver/rlserver/internal/testserver"
	"github.com/rlserver/rlserver/server"
	"github.com/stretchr/testify/require"
)

// eachServeMode runs fn once with plain connections served by event loops
// (where the platform has them) and once with a goroutine each, the model
// TLS connections and other platforms use.
func eachServeMode(t *testing.T, fn func(t *testing.T, mode testserver.Option)) {
	t.Run("loops", func(t *testing.T) { fn(t, func(*server.Options) {}) })
	t.Run("goroutines", func(t *testing.T) { fn(t, func(o *server.Options) { o.GoroutinePerConn = true }) })
}

// TestSlowReader: a client that pipelines far more replies than the
// socket buffers hold and reads none of them for a while stalls only
// itself; it then gets every reply, in order.
func TestSlowReader(t *testing.T) {
	eachServeMode(t, func(t *testing.T, mode testserver.Option) {
		s := testserver.Start(t, mode)
		addr := s.Addr.String()
		nc, err := net.Dial("tcp", addr)
		require.NoError(t, err)
		t.Cleanup(func() { nc.Close() })
		const n = 20000
		payload := strings.Repeat("x", 1000)
		sent := make(chan error, 1)
		go func() { // the writer blocks once the server stops reading
			w := bufio.NewWriterSize(nc, 1<<16)
			for i := 0; i < n; i++ {
				fmt.Fprintf(w, "*2\r\n$4\r\nECHO\r\n$%d\r\n%s%05d\r\n", len(payload)+5, payload, i)
			}
			sent <- w.Flush()
		}()
		// While its replies pile up unread, others are served.
		other := rltest.Dial(t, addr)
		for i := 0; i < 100; i++ {
			require.Equal(t, "+PONG", other.Do("PING"))
		}
		rd := bufio.NewReaderSize(nc, 1<<16)
		for i := 0; i < n; i++ {
			got, err := rltest.ReadReply(rd)
			require.NoError(t, err, "reply %d", i)
			require.Equal(t, fmt.Sprintf("%q", fmt.Sprintf("%s%05d", payload, i)), got, "reply %d", i)
		}
		require.NoError(t, <-sent)
		require.Equal(t, "+PONG", other.Do("PING"))
	})
}

// TestSplitCommands: a command that arrives a byte at a time, and many
// commands in one write, are parsed as they come.
func TestSplitCommands(t *testing.T) {
	eachServeMode(t, func(t *testing.T, mode testserver.Option) {
		s := testserver.Start(t, mode)
		c := rltest.Dial(t, s.Addr.String())
		for _, b := range rltest.Encode("CL.THROTTLE", "split", "15", "30", "60") {
			c.Send([]byte{b})
		}
		got, err := c.Read()
		require.NoError(t, err)
		require.Equal(t, "[0 16 15 -1 2]", got)
		var batch []byte
		for i := 0; i < 500; i++ {
			batch = append(batch, rltest.Encode("INCRBY_NOT_A_COMMAND")...)
			batch = append(batch, rltest.Encode("PING", fmt.Sprint(i))...)
		}
		c.Send(batch)
		for i := 0; i < 500; i++ {
			got, err := c.Read()
			require.NoError(t, err)
			require.True(t, strings.HasPrefix(got, "-ERR unknown command"), got)
			got, err = c.Read()
			require.NoError(t, err)
			require.Equal(t, fmt.Sprintf("%q", fmt.Sprint(i)), got)
		}
	})
}

// TestManyConnections: 500 connections at once, each racing for one key
// limited to 50 admissions: exactly 50 are admitted.
func TestManyConnections(t *testing.T) {
	eachServeMode(t, func(t *testing.T, mode testserver.Option) {
		s := testserver.Start(t, mode)
		addr := s.Addr.String()
		conns := make([]*rltest.Conn, 500)
		for i := range conns {
			conns[i] = rltest.Dial(t, addr)
		}
		var wg sync.WaitGroup
		var mu sync.Mutex
		admitted := 0
		for _, c := range conns {
			wg.Add(1)
			go func() {
				defer wg.Done()
				if err := c.Write(rltest.Encode("RL.FIXED", "shared", "50", "1h")); err != nil {
					t.Errorf("write: %v", err)
					return
				}
				got, err := c.Read()
				if err != nil || !strings.HasPrefix(got, "[") {
					t.Errorf("reply %q, %v", got, err)
					return
				}
				if strings.HasPrefix(got, "[0 ") {
					mu.Lock()
					admitted++
					mu.Unlock()
				}
			}()
		}
		wg.Wait()
		require.Equal(t, 50, admitted)
		require.True(t, strings.HasPrefix(conns[0].Do("RL.FIXED", "shared", "50", "1h"), "[1 50 0 "))
	})
}

// TestCloseWithBusyConnections: the server closes promptly while clients
// have unread replies pending and half-sent commands, and they see the
// connection end.
func TestCloseWithBusyConnections(t *testing.T) {
	eachServeMode(t, func(t *testing.T, mode testserver.Option) {
		s := testserver.Start(t, mode)
		addr := s.Addr.String()
		var ncs []net.Conn
		for i := 0; i < 10; i++ {
			nc, err := net.Dial("tcp", addr)
			require.NoError(t, err)
			t.Cleanup(func() { nc.Close() })
			ncs = append(ncs, nc)
		}
		// Half of them flood replies they never read; the rest send half a
		// command.
		big := strings.Repeat("y", 60000)
		for i, nc := range ncs {
			if i%2 == 0 {
				go func() {
					for j := 0; j < 200; j++ {
						if _, err := nc.Write(rltest.Encode("ECHO", big)); err != nil {
							return
						}
					}
				}()
			} else {
				_, err := nc.Write([]byte("*2\r\n$4\r\nECHO\r\n$5\r\nab"))
				require.NoError(t, err)
			}
		}
		// Wait until the server has them all (each has run a command or is
		// mid-command): CLIENT LIST counts them.
		probe := rltest.Dial(t, addr)
		deadline := time.Now().Add(10 * time.Second)
		for strings.Count(probe.Do("CLIENT", "LIST"), "id=") < 11 {
			require.True(t, time.Now().Before(deadline), "clients not connected")
		}
		ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
		defer cancel()
		start := time.Now()
		require.NoError(t, s.Close(ctx))
		t.Logf("closed in %v", time.Since(start))
		for i, nc := range ncs {
			nc.SetReadDeadline(time.Now().Add(5 * time.Second))
			buf := make([]byte, 1<<16)
			for {
				_, err := nc.Read(buf)
				if err != nil {
					require.NotErrorIs(t, err, context.DeadlineExceeded, "conn %d still open", i)
					var ne net.Error
					if ok := asNetErr(err, &ne); ok {
						require.False(t, ne.Timeout(), "conn %d still open", i)
					}
					break
				}
			}
		}
	})
}

func asNetErr(err error, target *net.Error) bool {
	ne, ok := err.(net.Error)
	if ok {
		*target = ne
	}
	return ok
}

// TestQuitAfterUnreadReplies: QUIT (like a protocol error or a limit)
// closes the connection only after every reply before it is written,
// even when the client had not read them and the socket was full.
func TestQuitAfterUnreadReplies(t *testing.T) {
	eachServeMode(t, func(t *testing.T, mode testserver.Option) {
		s := testserver.Start(t, mode)
		nc, err := net.Dial("tcp", s.Addr.String())
		require.NoError(t, err)
		t.Cleanup(func() { nc.Close() })
		const n = 5000
		payload := strings.Repeat("q", 2000)
		sent := make(chan error, 1)
		go func() {
			w := bufio.NewWriterSize(nc, 1<<16)
			for i := 0; i < n; i++ {
				fmt.Fprintf(w, "*2\r\n$4\r\nECHO\r\n$%d\r\n%s\r\n", len(payload), payload)
			}
			w.WriteString("*1\r\n$4\r\nQUIT\r\n*1\r\n$4\r\nPING\r\n")
			sent <- w.Flush()
		}()
		rd := bufio.NewReaderSize(nc, 1<<16)
		for i := 0; i < n; i++ {
			got, err := rltest.ReadReply(rd)
			require.NoError(t, err, "reply %d", i)
			require.Len(t, got, len(payload)+2, "reply %d", i)
		}
		got, err := rltest.ReadReply(rd)
		require.NoError(t, err)
		require.Equal(t, "+OK", got)
		_, err = rltest.ReadReply(rd)
		require.Error(t, err, "nothing after QUIT's reply: the PING behind it is not run")
		require.NoError(t, <-sent)
	})
}

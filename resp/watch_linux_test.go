package resp

import (
	"bufio"
	"context"
	"net"
	"sync"
	"sync/atomic"
	"syscall"
	"testing"
	"time"

	"github.com/rlserver/rlserver/clock"
	"github.com/rlserver/rlserver/engine"
	"github.com/rlserver/rlserver/node"
	"github.com/stretchr/testify/require"
)

// loopServer serves a fresh node on loopback, as o says.
func loopServer(t *testing.T, o Options) (*Server, string) {
	t.Helper()
	return serveLoops(t, newLoopServer(o))
}

// newLoopServer returns a server of a fresh node, not yet serving.
func newLoopServer(o Options) *Server {
	n := node.New(node.Config{Shards: 4, MaxClients: 100}, engine.New(4), clock.NewManual(1_700_000_000_000_000_000), node.Options{})
	return NewServer(n, o)
}

// serveLoops serves s on a loopback port until the test ends and returns
// its address.
func serveLoops(t *testing.T, s *Server) (*Server, string) {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	require.NoError(t, err)
	served := make(chan struct{})
	go func() { s.Serve(ln); close(served) }()
	t.Cleanup(func() {
		ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
		defer cancel()
		s.Close(ctx)
		<-served
	})
	return s, ln.Addr().String()
}

// pipe returns a non-blocking pipe's two ends, closed at the end.
func pipe(t *testing.T) (r, w int) {
	t.Helper()
	var p [2]int
	require.NoError(t, syscall.Pipe2(p[:], syscall.O_NONBLOCK|syscall.O_CLOEXEC))
	t.Cleanup(func() { syscall.Close(p[0]); syscall.Close(p[1]) })
	return p[0], p[1]
}

// eventually polls cond until it holds, for at most 10 s.
func eventually(t *testing.T, cond func() bool, msg string) {
	t.Helper()
	require.Eventually(t, cond, 10*time.Second, time.Millisecond, msg)
}

// TestWatchCallsReadyOnTheLoop: a watched descriptor's ready runs once
// when registered, once per kick, then whenever the descriptor has input
// (and not without it), until it returns false; stop waits for a running ready;
// a server that serves no loops refuses a watch, as does a second one.
func TestWatchCallsReadyOnTheLoop(t *testing.T) {
	s, addr := loopServer(t, Options{})
	r, w := pipe(t)
	var calls, read atomic.Int64
	var more atomic.Bool
	more.Store(true)
	stop, kick, ok := s.Watch(r, func() bool {
		calls.Add(1)
		var b [64]byte
		if n, _ := syscall.Read(r, b[:]); n > 0 {
			read.Add(int64(n))
		}
		return more.Load()
	})
	require.True(t, ok)
	eventually(t, func() bool { return calls.Load() == 1 }, "ready runs once when registered")

	_, _, again := s.Watch(r, func() bool { return true })
	require.False(t, again, "a second watch is refused")

	// Clients' rounds without input on the pipe do not call ready.
	c, err := net.Dial("tcp", addr)
	require.NoError(t, err)
	defer c.Close()
	br := bufio.NewReader(c)
	for range 20 {
		_, err := c.Write([]byte("PING\r\n"))
		require.NoError(t, err)
		line, err := br.ReadString('\n')
		require.NoError(t, err)
		require.Equal(t, "+PONG\r\n", line)
	}
	require.EqualValues(t, 1, calls.Load(), "ready ran without input")
	kick()
	eventually(t, func() bool { return calls.Load() == 2 }, "a kick has ready run once more")

	syscall.Write(w, []byte("abc"))
	eventually(t, func() bool { return read.Load() == 3 }, "ready reads the input")

	more.Store(false)
	syscall.Write(w, []byte("de"))
	eventually(t, func() bool { return read.Load() == 5 }, "ready reads the input")
	n := calls.Load()
	syscall.Write(w, []byte("f")) // after ready said false: never read
	for range 20 {
		_, err := c.Write([]byte("PING\r\n"))
		require.NoError(t, err)
		_, err = br.ReadString('\n')
		require.NoError(t, err)
	}
	require.Equal(t, n, calls.Load(), "ready ran after it returned false")
	stop()
	stop() // twice is harmless

	// stop waits for a ready that is running, and ready never runs after.
	r2, w2 := pipe(t)
	var hold, stopped, after atomic.Bool
	var calls2 atomic.Int64
	entered, release := make(chan struct{}, 1), make(chan struct{})
	stop2, _, ok := s.Watch(r2, func() bool {
		calls2.Add(1)
		if stopped.Load() {
			after.Store(true)
		}
		var b [64]byte
		syscall.Read(r2, b[:])
		if hold.Swap(false) {
			entered <- struct{}{}
			<-release
		}
		return true
	})
	require.True(t, ok, "a watch is taken again once the first is stopped")
	eventually(t, func() bool { return calls2.Load() == 1 }, "ready runs once when registered")
	hold.Store(true)
	syscall.Write(w2, []byte("x"))
	<-entered
	returned := make(chan struct{})
	go func() {
		stop2()
		stopped.Store(true)
		close(returned)
	}()
	select {
	case <-returned:
		t.Fatal("stop returned while ready was running")
	case <-time.After(50 * time.Millisecond):
	}
	close(release)
	<-returned
	syscall.Write(w2, []byte("y"))
	for range 5 {
		_, err := c.Write([]byte("PING\r\n"))
		require.NoError(t, err)
		_, err = br.ReadString('\n')
		require.NoError(t, err)
	}
	require.False(t, after.Load(), "ready ran after stop returned")

	g, _ := loopServer(t, Options{GoroutinePerConn: true})
	_, _, ok = g.Watch(r, func() bool { return true })
	require.False(t, ok, "a server without loops refuses a watch")
}

// TestEveryLoopReadsTheWatchFirst: input on a watched descriptor that came
// before a client's request is read before the request is answered,
// whichever loop has the client. Here the watch's own loop is held (in
// its replication pump), so only the client's loop can read it: the
// client's EXISTS finds the key the watch's callback writes.
func TestEveryLoopReadsTheWatchFirst(t *testing.T) {
	pump := &countingPump{}
	s := newLoopServer(Options{})
	s.replOf = func(loop int) replPump {
		if loop == 0 {
			return pump
		}
		return &countingPump{} // never pending
	}
	_, addr := serveLoops(t, s)
	c0, _ := connOnLoop(t, s, addr, 0)
	s.mu.Lock()
	loops := len(s.loops)
	s.mu.Unlock()
	if loops < 2 {
		t.Skip("one event loop (GOMAXPROCS=1): every client is on the watch's loop")
	}
	c1, _ := connOnLoop(t, s, addr, 1)

	r, w := pipe(t)
	var calls atomic.Int64
	st := s.node.Engine().Store()
	stop, _, ok := s.Watch(r, func() bool {
		calls.Add(1)
		var b [64]byte
		if n, _ := syscall.Read(r, b[:]); n > 0 {
			_, err := st.Limit(engine.KindFixed, []byte("k"), engine.Params{Limit: 10, Window: 60e9, Cost: 1}, 1_700_000_000_000_000_000)
			require.NoError(t, err)
		}
		return true
	})
	require.True(t, ok)
	defer stop()
	eventually(t, func() bool { return calls.Load() == 1 }, "ready runs once when registered")

	// Hold the first loop in its pump, after a round of c0's.
	gate := make(chan struct{})
	release := sync.OnceFunc(func() { close(gate) })
	t.Cleanup(release) // a failed check leaves the loop held otherwise
	pump.gate.Store(&gate)
	pump.pending.Store(true)
	_, err := c0.Write([]byte("PING\r\n"))
	require.NoError(t, err)
	eventually(t, func() bool { return pump.entered.Load() == 1 }, "the first loop is held in its pump")

	_, err = syscall.Write(w, []byte("x"))
	require.NoError(t, err)
	br := bufio.NewReader(c1)
	_, err = c1.Write([]byte("EXISTS k\r\n"))
	require.NoError(t, err)
	line, err := br.ReadString('\n')
	require.NoError(t, err)
	require.Equal(t, ":1\r\n", line, "the change that came first is read first")
	require.EqualValues(t, 2, calls.Load(), "ready ran once more, on the client's loop")

	release()
	line, err = bufio.NewReader(c0).ReadString('\n')
	require.NoError(t, err)
	require.Equal(t, "+PONG\r\n", line)
}

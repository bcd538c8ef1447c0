package resp

import (
	"bufio"
	"net"
	"runtime"
	"strings"
	"sync/atomic"
	"syscall"
	"testing"

	"github.com/stretchr/testify/require"
)

// TestIdleLoopsParkInThePoller: an idle loop parks in Go's network
// poller (block), not in a blocking epoll_wait, whose system call would
// hold its P until Go's monitor thread took it back; parked, it still
// wakes for a new connection and parks again after it.
func TestIdleLoopsParkInThePoller(t *testing.T) {
	s, addr := loopServer(t, Options{})
	ping := func() {
		t.Helper()
		c, err := net.Dial("tcp", addr)
		require.NoError(t, err)
		defer c.Close()
		_, err = c.Write([]byte("PING\r\n"))
		require.NoError(t, err)
		line, err := bufio.NewReader(c).ReadString('\n')
		require.NoError(t, err)
		require.Equal(t, "+PONG\r\n", line)
	}
	ping() // Serve has started its loops
	s.mu.Lock()
	loops := len(s.loops)
	for _, l := range s.loops {
		require.NotNil(t, l.parked, "the poller takes an epoll descriptor")
	}
	s.mu.Unlock()
	require.NotZero(t, loops)
	// in counts the goroutines whose stack holds frame.
	in := func(frame string) int {
		buf := make([]byte, 1<<20)
		buf = buf[:runtime.Stack(buf, true)]
		return strings.Count(string(buf), frame)
	}
	parked := func() bool {
		return in("resp.(*loop).block(") >= loops && in("syscall.EpollWait(") == 0
	}
	eventually(t, parked, "every idle loop parks in the poller")

	for range 3 { // more connections than loops: every loop serves one
		for range loops {
			ping() // a parked loop wakes for a new connection
		}
		eventually(t, parked, "the loops park again")
	}

	// A watched descriptor (a replica's stream) wakes its parked loop,
	// and a round that only read it leaves the loop to park again, as an
	// idle replica's loop does between its primary's heartbeats.
	r, w := pipe(t)
	var reads atomic.Int64
	stop, _, ok := s.Watch(r, func() bool {
		var b [64]byte
		if n, _ := syscall.Read(r, b[:]); n > 0 {
			reads.Add(int64(n))
		}
		return true
	})
	require.True(t, ok)
	defer stop()
	for i := range int64(5) {
		eventually(t, parked, "parked between the watched descriptor's inputs")
		_, err := syscall.Write(w, []byte("h"))
		require.NoError(t, err)
		eventually(t, func() bool { return reads.Load() == i+1 }, "the watched descriptor's input wakes the loop")
	}
	eventually(t, parked, "parked after the last input")
}

package resp

import (
	"bufio"
	"fmt"
	"net"
	"os"
	"runtime"
	"strconv"
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
		pingOn(t, c, bufio.NewReader(c))
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

// TestBusyLoopsAreNotInThePoller: a loop's epoll descriptor is in Go's
// network poller (through the parker's) only while the loop parks there.
// Reachable from the poller while the loop serves, it would wake the
// poller's thread (the spare P's) at every event the loop then takes
// itself, for nothing: a fifth to a third of a busy server's CPU
// (bench/RESULTS.md). Read from /proc: after a reply no epoll instance of
// the process watches the serving loop's descriptor (after one reply of
// 50 at least: see below), and once the loops park, each is watched.
func TestBusyLoopsAreNotInThePoller(t *testing.T) {
	s, addr := loopServer(t, Options{})
	c, err := net.Dial("tcp", addr)
	require.NoError(t, err)
	defer c.Close()
	r := bufio.NewReader(c)
	ping := func() { t.Helper(); pingOn(t, c, r) }
	ping() // Serve has started its loops, and one serves c
	s.mu.Lock()
	epfds, busy := map[int]bool{}, -1
	for _, l := range s.loops {
		epfds[l.epfd] = true
		l.mu.Lock()
		if len(l.conns) > 0 {
			busy = l.epfd
		}
		l.mu.Unlock()
	}
	s.mu.Unlock()
	require.NotEqual(t, -1, busy)
	// After a reply the loop waits 1 ms at a time, and parks only after
	// 20 empty waits: its descriptor is watched then. So after a reply
	// it is not, unless this goroutine was held up for 20 ms; after at
	// least one of 50 replies it is not.
	served := 0
	for range 50 {
		ping()
		if !watchedEpolls(t)[busy] {
			served++
		}
	}
	require.Greater(t, served, 0, "the serving loop's descriptor was watched after every reply")
	c.Close()
	eventually(t, func() bool {
		w := watchedEpolls(t)
		for fd := range epfds {
			if !w[fd] {
				return false
			}
		}
		return true
	}, "every idle loop's descriptor watched by its parker")
}

// pingOn sends PING on c and reads its +PONG from r, c's reader.
func pingOn(t *testing.T, c net.Conn, r *bufio.Reader) {
	t.Helper()
	_, err := c.Write([]byte("PING\r\n"))
	require.NoError(t, err)
	line, err := r.ReadString('\n')
	require.NoError(t, err)
	require.Equal(t, "+PONG\r\n", line)
}

// watchedEpolls returns the epoll descriptors of this process that an
// epoll instance of it watches, from /proc/self/fdinfo ("tfd:" lines).
func watchedEpolls(t *testing.T) map[int]bool {
	t.Helper()
	ents, err := os.ReadDir("/proc/self/fdinfo")
	require.NoError(t, err)
	out := map[int]bool{}
	for _, e := range ents {
		b, err := os.ReadFile("/proc/self/fdinfo/" + e.Name())
		if err != nil {
			continue // closed since the listing
		}
		for _, line := range strings.Split(string(b), "\n") {
			f := strings.Fields(line)
			if len(f) < 2 || f[0] != "tfd:" {
				continue
			}
			fd, err := strconv.Atoi(f[1])
			require.NoError(t, err)
			if link, _ := os.Readlink(fmt.Sprint("/proc/self/fd/", fd)); link == "anon_inode:[eventpoll]" {
				out[fd] = true
			}
		}
	}
	return out
}

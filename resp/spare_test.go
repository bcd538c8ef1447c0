package resp

import (
	"bufio"
	"context"
	"net"
	"runtime"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
)

// TestSpareUp: spare.up says whether the process has a P beyond its
// event loops (the loops' cue to yield every spareYieldEvery rounds
// instead of every round): as servers ask for a spare P and stop, and as
// loops start and end. A second server's loops leave no P spare.
func TestSpareUp(t *testing.T) {
	spare.mu.Lock()
	base, wanted, loops, procs, up := spare.base, spare.wanted, spare.loops, runtime.GOMAXPROCS(0), spare.up.Load()
	spare.base, spare.wanted, spare.loops = 2, 1, 0
	applySpareLocked()
	spare.mu.Unlock()
	defer func() {
		spare.mu.Lock()
		spare.base, spare.wanted, spare.loops = base, wanted, loops
		runtime.GOMAXPROCS(procs)
		spare.up.Store(up)
		spare.mu.Unlock()
	}()
	addLoops(2) // one server's loops, one per P
	require.Equal(t, 3, runtime.GOMAXPROCS(0))
	require.True(t, spare.up.Load(), "a server asks for a spare P")
	addLoops(2)
	require.False(t, spare.up.Load(), "a second server's loops")
	addLoops(-2)
	require.True(t, spare.up.Load(), "the second server stopped")
	spare.mu.Lock()
	spare.wanted = 0
	applySpareLocked()
	spare.mu.Unlock()
	require.Equal(t, 2, runtime.GOMAXPROCS(0))
	require.False(t, spare.up.Load(), "no server asks")
}

// TestServerAsksForASpareP: a server asks for the spare P while its loops
// serve a connection or a watched descriptor, and stops asking
// spareLinger after the last (resp/spare.go: without it, a goroutine
// waiting on Go's network poller waits while the loops are busy; with
// it, a server that serves only goroutines runs more Ps than cores).
func TestServerAsksForASpareP(t *testing.T) {
	if runtime.GOOS != "linux" {
		t.Skip("event loops are Linux-only")
	}
	was := spareLinger
	spareLinger = 10 * time.Millisecond
	t.Cleanup(func() { spareLinger = was })
	s, addr := loopServer(t, Options{})
	asks := func() bool {
		spare.mu.Lock()
		defer spare.mu.Unlock()
		return s.spare
	}
	c, err := net.Dial("tcp", addr)
	require.NoError(t, err)
	_, err = c.Write([]byte("PING\r\n"))
	require.NoError(t, err)
	line, err := bufio.NewReader(c).ReadString('\n')
	require.NoError(t, err)
	require.Equal(t, "+PONG\r\n", line, "served by a loop")
	require.True(t, asks(), "a loop serves a connection")
	spare.mu.Lock()
	base := spare.base
	spare.mu.Unlock()
	require.Equal(t, base+1, runtime.GOMAXPROCS(0))

	c.Close()
	eventually(t, func() bool { return !asks() }, "nothing served for spareLinger")

	r, _ := pipe(t)
	stop, _, ok := s.Watch(r, func() bool { return true })
	require.True(t, ok)
	require.True(t, asks(), "a loop watches a descriptor")
	stop()
	eventually(t, func() bool { return !asks() }, "the watch stopped")

	c, err = net.Dial("tcp", addr)
	require.NoError(t, err)
	defer c.Close()
	eventually(t, asks, "a connection again")
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	require.NoError(t, s.Close(ctx))
	require.False(t, asks(), "a closed server, at once")
}

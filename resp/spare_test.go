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

// TestServerAsksForASpareP: a server asks for the spare P once its loops
// serve, whatever else it is, and stops asking when it closes
// (resp/spare.go: without it, a goroutine waiting on Go's network poller
// waits while the loops are busy).
func TestServerAsksForASpareP(t *testing.T) {
	if runtime.GOOS != "linux" {
		t.Skip("event loops are Linux-only")
	}
	s, addr := loopServer(t, Options{})
	c, err := net.Dial("tcp", addr)
	require.NoError(t, err)
	defer c.Close()
	_, err = c.Write([]byte("PING\r\n"))
	require.NoError(t, err)
	line, err := bufio.NewReader(c).ReadString('\n')
	require.NoError(t, err)
	require.Equal(t, "+PONG\r\n", line, "served by a loop")
	spare.mu.Lock()
	asks, base := s.spare, spare.base
	spare.mu.Unlock()
	require.True(t, asks, "a serving server asks")
	require.Equal(t, base+1, runtime.GOMAXPROCS(0))
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	require.NoError(t, s.Close(ctx))
	spare.mu.Lock()
	asks = s.spare
	spare.mu.Unlock()
	require.False(t, asks, "a closed server does not")
}

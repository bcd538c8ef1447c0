package resp

import (
	"runtime"
	"testing"

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

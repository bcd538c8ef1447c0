package resp

import (
	"runtime"
	"testing"

	"github.com/stretchr/testify/require"
)

// TestSpareUp: spare.up says whether GOMAXPROCS holds a spare P beyond
// the loops' (the loops' cue to yield every spareYieldEvery rounds
// instead of every round), as servers ask for it and stop.
func TestSpareUp(t *testing.T) {
	spare.mu.Lock()
	defer spare.mu.Unlock()
	base, wanted, procs, up := spare.base, spare.wanted, runtime.GOMAXPROCS(0), spare.up.Load()
	defer func() {
		spare.base, spare.wanted = base, wanted
		runtime.GOMAXPROCS(procs)
		spare.up.Store(up)
	}()
	spare.base, spare.wanted = 2, 1
	applySpareLocked()
	require.Equal(t, 3, runtime.GOMAXPROCS(0))
	require.True(t, spare.up.Load(), "a server asks for a spare P")
	spare.wanted = 0
	applySpareLocked()
	require.Equal(t, 2, runtime.GOMAXPROCS(0))
	require.False(t, spare.up.Load(), "no server asks")
}

package engine

import (
	"runtime"
	"testing"

	"github.com/stretchr/testify/require"
)

// TestGrowRegionKeepsBytes: a mapped region grown (remapped on Linux,
// copied elsewhere) keeps its bytes, and its emptied pages can be given
// back and reused.
func TestGrowRegionKeepsBytes(t *testing.T) {
	r := allocRegion(mapMin)
	for i := range r {
		r[i] = byte(i * 7)
	}
	if runtime.GOOS == "linux" {
		probe := allocRegion(mapMin)
		grown, ok := remapRegion(probe, 2*mapMin)
		require.True(t, ok, "mremap should grow a region mapped by mapRegion")
		freeRegion(grown)
	}
	g := growRegion(r, mapMin, 8*mapMin)
	require.Len(t, g, 8*mapMin)
	for i := 0; i < mapMin; i++ {
		if g[i] != byte(i*7) {
			t.Fatalf("byte %d changed", i)
		}
	}
	g[8*mapMin-1] = 1 // the new tail is usable
	releasePages(g, 4096, 8*mapMin)
	require.Equal(t, byte(4095*7%256), g[4095], "bytes before the released range stay")
	g[4096] = 9 // a released page reads back as zeros and takes writes
	require.Equal(t, byte(9), g[4096])
	freeRegion(g)
}

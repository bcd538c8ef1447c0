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
	if runtime.GOOS == "linux" { // elsewhere adviseFree keeps the pages
		// A released page reads back as zeros: every byte of the whole
		// pages from 4096 on, which held i*7 and the 1 written at the
		// end.
		from := (4096 + pageSize - 1) / pageSize * pageSize
		for i := from; i < 8*mapMin; i++ {
			if g[i] != 0 {
				t.Fatalf("byte %d of a released page reads %d, not 0", i, g[i])
			}
		}
	}
	g[4096] = 9 // and it takes writes
	require.Equal(t, byte(9), g[4096])
	freeRegion(g)
}

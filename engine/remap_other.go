//go:build !linux

package engine

// remapRegion and adviseFree are Linux-only; elsewhere a region grows by
// copying and keeps the pages it emptied.
func remapRegion([]byte, int) ([]byte, bool) { return nil, false }

func adviseFree([]byte) {}

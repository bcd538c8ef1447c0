//go:build unix && !linux

package engine

import (
	"strconv"
	"syscall"
)

// mapRegion maps n zeroed bytes. Pages are resident only once written, so
// a region's unused tail costs address space, not memory. Failure is the
// out-of-memory the Go heap would have crashed on too.
func mapRegion(n int) []byte {
	b, err := syscall.Mmap(-1, 0, n, syscall.PROT_READ|syscall.PROT_WRITE, syscall.MAP_ANON|syscall.MAP_PRIVATE)
	if err != nil {
		panic("engine: cannot map " + strconv.Itoa(n) + " bytes: " + err.Error())
	}
	return b
}

func unmapRegion(b []byte) { _ = syscall.Munmap(b) }

// remapRegion and adviseFree are Linux-only; elsewhere a region grows by
// copying and keeps the pages it emptied.
func remapRegion([]byte, int) ([]byte, bool) { return nil, false }

func adviseFree([]byte) {}

package engine

import "golang.org/x/sys/unix"

// remapRegion grows a mapped region with mremap: the kernel moves the
// page mappings, so growing costs no copy of the records.
func remapRegion(old []byte, n int) ([]byte, bool) {
	r, err := unix.Mremap(old, n, unix.MREMAP_MAYMOVE)
	if err != nil {
		return nil, false
	}
	return r, true
}

// adviseFree returns a mapped range's pages to the OS; they read as zeros
// if touched again.
func adviseFree(b []byte) { _ = unix.Madvise(b, unix.MADV_DONTNEED) }

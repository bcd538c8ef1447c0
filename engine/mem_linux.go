package engine

import (
	"strconv"
	"syscall"
	"unsafe"
)

// On Linux regions are mapped, remapped and unmapped with bare system
// calls (syscall.Mmap keeps its own table of mappings, which a region
// moved by mremap would no longer match).

// mapRegion maps n zeroed bytes. Pages are resident only once written, so
// a region's unused tail costs address space, not memory. Failure is the
// out-of-memory the Go heap would have crashed on too.
func mapRegion(n int) []byte {
	addr, _, e := syscall.Syscall6(syscall.SYS_MMAP, 0, uintptr(n), syscall.PROT_READ|syscall.PROT_WRITE,
		syscall.MAP_ANON|syscall.MAP_PRIVATE, ^uintptr(0), 0)
	if e != 0 {
		panic("engine: cannot map " + strconv.Itoa(n) + " bytes: " + e.Error())
	}
	return bytesAt(addr, n)
}

// bytesAt is the n bytes at addr, a mapping's address from the kernel
// (outside the Go heap, so the collector neither moves nor frees it).
func bytesAt(addr uintptr, n int) []byte {
	return unsafe.Slice(*(**byte)(unsafe.Pointer(&addr)), n)
}

func unmapRegion(b []byte) {
	syscall.Syscall(syscall.SYS_MUNMAP, uintptr(unsafe.Pointer(unsafe.SliceData(b))), uintptr(cap(b)), 0)
}

// mremapMayMove is MREMAP_MAYMOVE: the kernel may move the mapping.
const mremapMayMove = 1

// remapRegion grows a mapped region with mremap: the kernel moves the
// page mappings, so growing costs no copy of the records.
func remapRegion(old []byte, n int) ([]byte, bool) {
	addr, _, e := syscall.Syscall6(syscall.SYS_MREMAP, uintptr(unsafe.Pointer(unsafe.SliceData(old))), uintptr(cap(old)),
		uintptr(n), mremapMayMove, 0, 0)
	if e != 0 {
		return nil, false
	}
	return bytesAt(addr, n), true
}

// adviseFree returns a mapped range's pages to the OS; they read as zeros
// if touched again.
func adviseFree(b []byte) { _ = syscall.Madvise(b, syscall.MADV_DONTNEED) }

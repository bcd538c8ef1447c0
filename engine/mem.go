package engine

import (
	"os"
	"runtime"
)

// The keyspace lives outside the Go heap when it is large: a shard's
// records and key table are byte regions mapped from the OS (mem_unix.go),
// so the garbage collector neither scans nor counts them, a region freed is
// returned to the OS at once, and the resident size is what the records
// use, not a GOGC multiple of it. Regions below mapMin bytes come from the
// Go heap (a test's small engines are collected as usual).
const mapMin = 256 << 10

// regions are the mapped regions a shard currently holds. A cleanup
// unmaps them when the shard is dropped without Flush (an engine a test
// let go), so no mapping outlives its engine.
type regions struct {
	data, slots, oldSlots []byte
	// retired are tables that moves have emptied, freed by the sweep
	// outside the shard lock (freeRetired): unmapping a table of a few
	// MiB takes hundreds of microseconds.
	retired [][]byte
}

func (r *regions) release() {
	freeRegion(r.data)
	freeRegion(r.slots)
	freeRegion(r.oldSlots)
	for _, t := range r.retired {
		freeRegion(t)
	}
	r.data, r.slots, r.oldSlots, r.retired = nil, nil, nil, nil
}

// watchRegions arranges for s's regions to be unmapped once s is
// unreachable.
func watchRegions(s *shard) {
	runtime.AddCleanup(s, func(r *regions) { r.release() }, s.mem)
}

// allocRegion returns n zeroed bytes: mapped when n >= mapMin, else from
// the heap.
func allocRegion(n int) []byte {
	if n < mapMin {
		return make([]byte, n)
	}
	return mapRegion(n)
}

// freeRegion returns a region from allocRegion to the OS (heap regions
// are left to the collector). b must not be used afterwards.
func freeRegion(b []byte) {
	if cap(b) >= mapMin {
		unmapRegion(b[:cap(b)])
	}
}

// growRegion returns a region of n bytes holding the first used bytes of
// old, which it frees (old must not be used afterwards).
func growRegion(old []byte, used, n int) []byte {
	if cap(old) >= mapMin && n >= mapMin {
		if r, ok := remapRegion(old[:cap(old)], n); ok {
			return r
		}
	}
	r := allocRegion(n)
	copy(r, old[:used])
	freeRegion(old)
	return r
}

var pageSize = os.Getpagesize()

// releasePages gives the OS back the whole pages of region r within
// [from, to) (a mapped region's emptied tail; heap regions keep theirs).
// They read as zeros if used again.
func releasePages(r []byte, from, to int) {
	if cap(r) < mapMin {
		return
	}
	page := pageSize
	from = (from + page - 1) / page * page
	to = to / page * page
	if from < to {
		adviseFree(r[from:to:to])
	}
}

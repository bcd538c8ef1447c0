package engine

import "runtime"

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
	data, slots []byte
}

func (r *regions) release() {
	freeRegion(r.data)
	freeRegion(r.slots)
	r.data, r.slots = nil, nil
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

package server

import (
	"context"
	"math"
	"runtime/debug"
	"runtime/metrics"
	"sync"
	"time"

	"github.com/rlserver/rlserver/clock"
	"github.com/rlserver/rlserver/internal/proc"
)

// minGoLimitShare: the Go runtime's limit never goes below limit/8, even
// when the keyspace alone fills the limit. A tighter limit would only make
// the collector run back to back (the heap is small, and the keyspace's
// regions are not its to free), at every request's expense.
const minGoLimitShare = 8

// processLimit is the runtime's memory limit as it was before the first
// runMemoryLimit of the process changed it (GOMEMLIMIT), and how many
// runMemoryLimits run: servers in one process (tests) share one runtime
// limit, so each sets it from the same base, and the last to stop puts
// the base back.
var processLimit struct {
	sync.Mutex
	users int
	base  int64
}

func acquireLimitBase() int64 {
	processLimit.Lock()
	defer processLimit.Unlock()
	if processLimit.users == 0 {
		processLimit.base = debug.SetMemoryLimit(-1)
	}
	processLimit.users++
	return processLimit.base
}

func releaseLimitBase() {
	processLimit.Lock()
	defer processLimit.Unlock()
	if processLimit.users--; processLimit.users == 0 {
		debug.SetMemoryLimit(processLimit.base)
	}
}

// runMemoryLimit makes a memory limit (GOMEMLIMIT) bound the whole
// process. Go's limit covers only the memory the Go runtime manages, but a
// large keyspace lives in regions mapped outside the Go heap
// (engine/mem.go): with GOMEMLIMIT=1GiB and 700 MiB of keys, the runtime
// would let its own memory reach 1 GiB and the process 1.7, past a
// container limit set to match. Every interval it sets the runtime's limit
// to limit less the resident memory the runtime does not manage (the
// process's RSS less the runtime's own resident memory), and never below
// limit/minGoLimitShare. limit 0 takes the runtime's limit as it was before
// any server of the process changed it (GOMEMLIMIT); no limit
// (math.MaxInt64) does nothing. The resident set is read from /proc
// (Linux); elsewhere the runtime's limit stays the process's. When ctx
// ends, the last runMemoryLimit of the process puts the runtime's limit
// back as it found it. report is told the limit in force (0 when it
// stops), for INFO memory.
func runMemoryLimit(ctx context.Context, limit int64, interval time.Duration, report func(int64)) {
	base := acquireLimitBase()
	defer releaseLimitBase()
	if limit <= 0 {
		limit = base
	}
	if limit == math.MaxInt64 {
		return
	}
	report(limit)
	defer report(0)
	samples := []metrics.Sample{{Name: "/memory/classes/total:bytes"}, {Name: "/memory/classes/heap/released:bytes"}}
	adjust := func() {
		metrics.Read(samples)
		var goResident int64
		if samples[0].Value.Kind() == metrics.KindUint64 && samples[1].Value.Kind() == metrics.KindUint64 {
			goResident = int64(samples[0].Value.Uint64() - samples[1].Value.Uint64())
		}
		outside := max(proc.RSS()-goResident, 0)
		debug.SetMemoryLimit(max(limit-outside, limit/minGoLimitShare))
	}
	adjust()
	clock.Every(ctx, interval, adjust)
}

package resp

import (
	"runtime"
	"sync"
	"sync/atomic"
)

// A spare P: each event loop holds its P while it waits for events (a raw
// epoll wait, see loop.wait), so a goroutine outside the loops runs only
// when a loop ends a round. Worse, Go's network poller is polled only by
// a P with nothing to run, or by the runtime's monitor every 10 ms: while
// the loops are busy, a goroutine waiting for its socket (the acceptor,
// the Envoy front's gRPC, a primary's reader of its replicas' acks, which
// WAIT waits for, a replica's link where no loop reads it) would wait up
// to 10 ms for its event. With one P more than its loops, the spare P's
// thread sits in the poller and runs them at once (bench/RESULTS.md,
// "Goroutines beside the loops"). Every server whose loops serve asks
// for it.
var spare struct {
	mu     sync.Mutex
	base   int // GOMAXPROCS when the first loops started (one loop per P); 0 before
	wanted int // servers that asked for a spare P
	loops  int // event loops running in the process, of every server
	// up: there are more Ps than loops (a spare P, and one server's
	// loops in the process). The loops then yield only now and then
	// (loop.run): the spare P runs the other goroutines. Two servers in
	// one process (tests) run more loops than Ps, and yield every round.
	up atomic.Bool
}

// askSpareP asks (on) or stops asking (off) for one P beyond the event
// loops: a server asks once its loops serve, and stops when it closes.
// GOMAXPROCS is process-wide, so it stays raised while any server of the
// process asks.
func (s *Server) askSpareP(on bool) {
	spare.mu.Lock()
	defer spare.mu.Unlock()
	if s.spare == on {
		return
	}
	s.spare = on
	if on {
		spare.wanted++
	} else {
		spare.wanted--
	}
	applySpareLocked()
}

// loopProcs returns how many loops a server starts (one per P, not
// counting a spare) and records that loops serve.
func loopProcs() int {
	spare.mu.Lock()
	defer spare.mu.Unlock()
	if spare.base == 0 {
		spare.base = max(runtime.GOMAXPROCS(0), 1)
		applySpareLocked()
	}
	return spare.base
}

// applySpareLocked sets GOMAXPROCS to the loops' count, plus one if a
// server asks for a spare P. spare.mu must be held.
func applySpareLocked() {
	if spare.base == 0 {
		return // no loops yet
	}
	n := spare.base
	if spare.wanted > 0 {
		n++
	}
	if runtime.GOMAXPROCS(0) != n {
		runtime.GOMAXPROCS(n)
	}
	setUpLocked()
}

// setUpLocked derives spare.up from GOMAXPROCS and the loops running.
// spare.mu must be held.
func setUpLocked() { spare.up.Store(runtime.GOMAXPROCS(0) > spare.loops) }

// addLoops counts event loops started (n > 0) or ended (n < 0).
func addLoops(n int) {
	spare.mu.Lock()
	defer spare.mu.Unlock()
	spare.loops += n
	setUpLocked()
}

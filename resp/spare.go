package resp

import (
	"runtime"
	"sync"
)

// A spare P: each event loop holds its P while it waits for events (a raw
// epoll wait, see loop.wait), so a goroutine outside the loops runs only
// when a loop ends a round. For a replica's link to its primary that is
// lag: the stream's bytes arrive, and are applied up to a millisecond
// later, when a loop next yields. With one P more than there are loops,
// that goroutine runs as soon as its bytes arrive (bench/RESULTS.md,
// "Side by side again, paced").
var spare struct {
	mu     sync.Mutex
	base   int // GOMAXPROCS when the first loops started (one loop per P); 0 before
	wanted int // servers that asked for a spare P
}

// SetSpareP asks (on) or stops asking (off) for one P beyond the event
// loops, for as long as the server is a replica. It applies only while
// loops serve; GOMAXPROCS is process-wide, so it stays raised while any
// server of the process asks.
func (s *Server) SetSpareP(on bool) {
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
}

package resp

import (
	"runtime"
	"sync"
	"sync/atomic"
	"time"
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
// "Goroutines beside the loops"). A server asks for it while its loops
// serve a connection or a watched descriptor, and for spareLinger after
// the last: a server whose loops have nothing to serve (one that only
// serves the Envoy front) runs no more Ps than cores, which goroutines
// do better with (the front took 14-25% more CPU a call with the spare
// P).
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

// spareLinger is how long a server keeps asking for the spare P after
// its loops stopped serving anything: connections that come and go (a
// client that connects per request) keep it, and GOMAXPROCS, which
// stops the world to change, changes rarely. A variable for tests.
var spareLinger = time.Second

// spareLocked asks for the spare P while the loops serve a connection or
// a watch, and stops asking spareLinger after the last, or at once when
// the server is closed. s.mu must be held.
func (s *Server) spareLocked() {
	serving := !s.closed && len(s.lconns)+s.watches > 0
	if serving || s.closed {
		if s.linger != nil {
			s.linger.Stop()
			s.linger = nil
		}
		s.askSpareP(serving)
		return
	}
	if !s.spare || s.linger != nil {
		return
	}
	// Whatever serves next, or Close, stops the timer and clears linger
	// (above): finding itself still in linger, it lowers.
	var t *time.Timer
	t = time.AfterFunc(spareLinger, func() {
		s.mu.Lock()
		defer s.mu.Unlock()
		if s.linger == t {
			s.linger = nil
			s.askSpareP(false)
		}
	})
	s.linger = t
}

// watching counts a watch registered (1) or ended (-1).
func (s *Server) watching(d int) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.watches += d
	s.spareLocked()
}

// askSpareP asks (on) or stops asking (off) for one P beyond the event
// loops (spareLocked). GOMAXPROCS is process-wide, so it stays
// raised while any server of the process asks.
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

package resp

import (
	"sync"
	"sync/atomic"
	"syscall"
	"unsafe"
)

// A watched descriptor: input that an event loop reads for another
// package, first in its round. A replica's link to its primary is one:
// read by the loops that also answer the replica's clients, a change
// that arrived before a client's read is applied before that read is
// answered, and the stream costs no thread switch (Redis's replica reads
// its link in its one event loop, too). The server's first loop has the
// descriptor in its epoll set; another loop whose round has input checks
// the descriptor for input too, and serves it first if it has some
// (catchUp): otherwise a client on that loop could be answered while the
// first loop has not yet woken to the change.
type watch struct {
	fd    int
	ready func() bool
	mu    sync.Mutex  // held while ready runs; stop waits for it
	off   bool        // ready returned false, or stop was called
	kick  atomic.Bool // call ready in the next round, input or not
}

// Watch has s's first event loop call ready once in its next round,
// and then in every round in which fd has input, before the round's
// connections, until ready returns false or stop is called; another
// loop calls it before its round's connections when fd has input
// (catchUp), never while it runs elsewhere. kick, from
// any goroutine, has ready called once more in the loop's next round,
// input or not. ready runs on the loop: it must not block, and it reads
// fd without waiting. The caller keeps fd open until stop has returned;
// stop returns once ready is not running and will not run again. ok is
// false if no event loop serves (TLS, one goroutine per connection, a
// closed server, or a platform without epoll), or if one watch is
// already registered.
func (s *Server) Watch(fd int, ready func() bool) (stop, kick func(), ok bool) {
	s.mu.Lock()
	if s.closed || s.tls != nil || s.goroutines || (s.loops == nil && !s.startLoops()) {
		s.mu.Unlock()
		return nil, nil, false
	}
	l := s.loops[0]
	s.mu.Unlock()
	w := &watch{fd: fd, ready: ready}
	l.mu.Lock()
	if l.exited || l.watched.Load() != nil {
		l.mu.Unlock()
		return nil, nil, false
	}
	if err := syscall.EpollCtl(l.epfd, syscall.EPOLL_CTL_ADD, fd, &syscall.EpollEvent{Events: syscall.EPOLLIN | syscall.EPOLLRDHUP, Fd: int32(fd)}); err != nil {
		l.mu.Unlock()
		return nil, nil, false
	}
	w.kick.Store(true)
	l.watched.Store(w)
	l.mu.Unlock()
	s.watching(1)
	l.wakeUp()
	kick = func() {
		w.kick.Store(true)
		l.wakeUp()
	}
	return func() { l.unwatch(w) }, kick, true
}

// unwatch takes w out of the loop: after it, ready is not running and
// never runs again.
func (l *loop) unwatch(w *watch) {
	w.mu.Lock()
	defer w.mu.Unlock()
	if !w.off {
		l.endWatchLocked(w)
	}
	l.mu.Lock()
	l.watched.CompareAndSwap(w, nil)
	l.mu.Unlock()
}

// serveWatch calls the watch's ready if the round's events include its
// descriptor, or a first call is due. It runs before the round's
// connections, so their commands see what ready applied. It returns how
// many of the events were the watch's (0 or 1). Without a watch it costs
// the round one atomic load.
func (l *loop) serveWatch(events []syscall.EpollEvent) int {
	w := l.watched.Load()
	if w == nil {
		return 0
	}
	mine := 0
	for i := range events {
		if int(events[i].Fd) == w.fd {
			mine = 1
			break
		}
	}
	if !w.kick.Swap(false) && mine == 0 {
		return 0
	}
	l.callReady(w)
	return mine
}

// catchUp serves the first loop's watch from another loop, before the
// round's connections, when the watched descriptor has input: a change
// that reached a replica before a client's read must be applied before
// that read is answered, whichever loop has the client. It waits for a
// ready running on another loop, which may be applying that change. On
// a server without a watch it costs one atomic load; with one, a system
// call a round.
func (l *loop) catchUp() {
	if l.first == l {
		return // serveWatch did
	}
	if w := l.first.watched.Load(); w != nil {
		if n, e := bytesIn(w.fd); n > 0 || e != 0 { // an error: ready reports it
			l.first.callReady(w)
		}
	}
}

// callReady calls ready for w, a watch on l, unless it ended, and ends it
// when ready says so. It waits for a ready running on another loop.
func (l *loop) callReady(w *watch) {
	w.mu.Lock()
	defer w.mu.Unlock()
	if !w.off && !w.ready() {
		l.endWatchLocked(w)
	}
}

// endWatchLocked takes w out of l, its loop: ready never runs again.
// w.mu is held.
func (l *loop) endWatchLocked(w *watch) {
	w.off = true
	l.mu.Lock()
	if !l.exited {
		syscall.EpollCtl(l.epfd, syscall.EPOLL_CTL_DEL, w.fd, nil)
	}
	l.mu.Unlock()
	l.s.watching(-1)
}

// bytesIn returns how many bytes wait to be read on fd (FIONREAD), or
// the error that kept it from knowing.
func bytesIn(fd int) (int, syscall.Errno) {
	var n int32
	_, _, e := syscall.RawSyscall(syscall.SYS_IOCTL, uintptr(fd), syscall.TIOCINQ, uintptr(unsafe.Pointer(&n)))
	return int(n), e
}

package resp

import (
	"sync"
	"sync/atomic"
	"syscall"
)

// A watched descriptor: input that an event loop reads for another
// package, first in its round. A replica's link to its primary is one:
// read by the loop that also answers the replica's clients, a change
// that arrived before a client's read is applied before that read is
// answered, and the stream costs no thread switch (Redis's replica reads
// its link in its one event loop, too).
type watch struct {
	fd    int
	ready func() bool
	mu    sync.Mutex  // held while ready runs; stop waits for it
	off   bool        // ready returned false, or stop was called
	kick  atomic.Bool // call ready in the next round, input or not
}

// Watch has one of s's event loops call ready once in its next round,
// and then in every round in which fd has input, before the round's
// connections, until ready returns false or stop is called. kick, from
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
	l.mu.Lock()
	ended := !w.off
	if ended {
		w.off = true
		if !l.exited {
			syscall.EpollCtl(l.epfd, syscall.EPOLL_CTL_DEL, w.fd, nil)
		}
	}
	l.watched.CompareAndSwap(w, nil)
	l.mu.Unlock()
	w.mu.Unlock()
	if ended {
		l.s.watching(-1)
	}
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
	w.mu.Lock()
	defer w.mu.Unlock()
	if w.off || w.ready() {
		return mine
	}
	w.off = true
	l.mu.Lock()
	if !l.exited {
		syscall.EpollCtl(l.epfd, syscall.EPOLL_CTL_DEL, w.fd, nil)
	}
	l.mu.Unlock()
	l.s.watching(-1)
	return mine
}

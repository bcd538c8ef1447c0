package replication

import (
	"sync"
	"sync/atomic"
	"syscall"
)

// linkModes are the ways a replica reads its stream: the link's
// goroutine, and an event loop (Options.Watch; here epollWatch, which
// does what resp.Server.Watch does, for a Manager without a server).
var linkModes = []linkMode{{name: "goroutine"}, {name: "loop", watch: epollWatch}}

// epollWatch is Options.Watch over an epoll set of its own, on a
// goroutine of its own: ready runs once at once, then whenever fd has
// input or kick was called, until it returns false or stop; stop waits
// for a running ready.
func epollWatch(used *atomic.Bool) func(fd int, ready func() bool) (func(), func(), bool) {
	return func(fd int, ready func() bool) (func(), func(), bool) {
		ep, err := syscall.EpollCreate1(syscall.EPOLL_CLOEXEC)
		if err != nil {
			return nil, nil, false
		}
		if err := syscall.EpollCtl(ep, syscall.EPOLL_CTL_ADD, fd, &syscall.EpollEvent{Events: syscall.EPOLLIN | syscall.EPOLLRDHUP, Fd: int32(fd)}); err != nil {
			syscall.Close(ep)
			return nil, nil, false
		}
		used.Store(true)
		var mu sync.Mutex
		var kicked atomic.Bool
		kicked.Store(true)
		off := false
		done := make(chan struct{})
		go func() {
			defer close(done)
			events := make([]syscall.EpollEvent, 1)
			for {
				n := 0
				if !kicked.Swap(false) {
					n, _ = syscall.EpollWait(ep, events, 1)
				} else {
					n = 1
				}
				mu.Lock()
				if !off && n > 0 && !ready() {
					off = true
				}
				stop := off
				mu.Unlock()
				if stop {
					return
				}
			}
		}()
		stop := func() {
			mu.Lock()
			off = true
			mu.Unlock()
			<-done
			syscall.Close(ep)
		}
		return stop, func() { kicked.Store(true) }, true
	}
}

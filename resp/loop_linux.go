package resp

import (
	"errors"
	"io"
	"net"
	"os"
	"runtime"
	"sync"
	"sync/atomic"
	"syscall"
	"time"
	"unsafe"

	"github.com/rlserver/rlserver/commands"
	"github.com/rlserver/rlserver/node"
)

// Event loops, Redis's model: on Linux, plain TCP and Unix connections
// are served by one loop per P instead of a goroutine each. A loop waits
// in epoll for readable connections, runs every complete command they
// sent, then writes each connection's replies once, at the end of the
// round. Against a goroutine per connection this saves the scheduler's
// park/unpark and netpoll work per request and, above all, keeps the
// requests of one round together: at c=50 P=1 on one pinned core the
// goroutines' p99 was 2-3 ms against 0.9 ms for a loop (and Redis).
// TLS connections, and every platform but Linux, keep the goroutines.

// errWouldBlock: the loop's reader has no more input for this round.
var errWouldBlock = errors.New("resp: no input ready")

// loop is one event loop and the connections it serves.
type loop struct {
	s     *Server
	index int      // among the server's loops: its clients' statistics cell
	repl  replPump // the replication pump it runs after its rounds (the node's)
	epfd  int
	// parker is an epoll descriptor of its own, registered in Go's
	// network poller, where an idle loop parks (block): it holds epfd
	// only while the loop parks. Registered itself, epfd would wake the
	// poller's thread (the spare P's) at every event the busy loop's own
	// waits then take, only for it to find nothing to run. nil if the
	// poller would not take an epoll descriptor, when the loop blocks in
	// epoll_wait.
	parker *os.File
	parked syscall.RawConn
	parkfd int    // the parker's descriptor
	wake   [2]int // a pipe: writing to wake[1] interrupts epoll_wait
	mu     sync.Mutex
	conns  map[int]*lconn // by fd; the loop reads, the acceptor adds
	stop   atomic.Bool
	exited bool // its descriptors are closed (guarded by mu)
	events []syscall.EpollEvent
	round  []*lconn // connections with replies to write this round
	// posted is what other goroutines left for the loop's connections:
	// published messages, invalidations and parked commands' replies
	// (guarded by mu). hasPosted is whether it holds any, read without
	// the lock before each connection's input is served: what was posted
	// for a connection before it sent a command comes before that
	// command's reply, whatever order epoll reports the wake-up and the
	// input in.
	posted    []posted
	hasPosted atomic.Bool
	keys      [][]byte // scratch: the keys of a batch to prefetch
	// first is the server's first loop, the one a watch is on (Watch):
	// the others serve its watch too before their clients' reads
	// (catchUp).
	first *loop
	// watched is read by the loop first in its rounds (Watch); nil if
	// none. Set and cleared under mu.
	watched atomic.Pointer[watch]
	swept   time.Time
	rounds  uint64 // rounds run, for the yields with a spare P
	// held is when the first round whose changes the loop holds from
	// its replicas ended (hold); zero while it holds none. hot: the
	// round's requests were at hand when it began (hotWait).
	held time.Time
	hot  bool
	// busyNs and idleNs are the loop's recent time in rounds and in
	// waits (ns, decayed by halves past loadWindow): a loop busy more
	// than half of it holds its changes (hold). began: when the
	// current round began.
	busyNs, idleNs int64
	began          time.Time
}

// lconn is one connection on a loop.
type lconn struct {
	fd   int // owned by the connection: closed by the loop
	c    *node.Client
	rd   *Reader
	w    *Writer
	src  pollSource
	out  int  // bytes of w's buffer already written
	busy bool // output pending: wait for writability, read nothing more
	// closing: close once the pending output is written (QUIT, a protocol
	// error, a limit), as Redis does; nothing more is read meanwhile.
	closing bool
	seen    bool // in the loop's round
	// parked: a command's reply is awaited (Session.Park, a WAIT):
	// nothing is read until it comes (resume).
	parked bool
	gone   chan struct{} // closed when it closes while parked
	// overSoft is when its unread replies went past the soft output
	// limit (zero while under it); unchecked counts the bytes written
	// since what the socket holds was last checked against it.
	overSoft  time.Time
	unchecked int
	mu        sync.Mutex
	dead      bool // fd closed (guards kills from other goroutines)
}

// pollSource is the Reader's input: one read per readiness event, so the
// reader never makes the read that would only answer EAGAIN (the loop's
// level-triggered epoll reports what is left next round).
type pollSource struct {
	fd    int
	ready bool
}

func (p *pollSource) Read(b []byte) (int, error) {
	if !p.ready || len(b) == 0 {
		return 0, errWouldBlock
	}
	p.ready = false
	n, e := sysRead(uintptr(p.fd), b)
	switch e {
	case 0:
		if n == 0 {
			return 0, io.EOF
		}
		return n, nil
	case syscall.EAGAIN:
		return 0, errWouldBlock
	}
	return 0, os.NewSyscallError("read", e)
}

// startLoops starts one loop per P (a spare P not counted); false if
// epoll is unavailable.
func (s *Server) startLoops() bool {
	n := loopProcs()
	for range n {
		l, err := newLoop(s, len(s.loops))
		if err != nil {
			s.node.Logger().Warn("event loop unavailable, serving connections with goroutines", "err", err)
			for _, l := range s.loops {
				l.stop.Store(true)
				l.wakeUp()
			}
			s.loops = nil
			return false
		}
		s.loops = append(s.loops, l)
		l.first = s.loops[0]
		s.wg.Add(1)
		addLoops(1)
		go l.run()
	}
	return true
}

func newLoop(s *Server, index int) (*loop, error) {
	epfd, err := syscall.EpollCreate1(syscall.EPOLL_CLOEXEC)
	if err != nil {
		return nil, err
	}
	l := &loop{s: s, index: index, epfd: epfd, conns: make(map[int]*lconn), events: make([]syscall.EpollEvent, 256), swept: time.Now()}
	l.repl = s.node
	if s.replOf != nil {
		l.repl = s.replOf(index)
	}
	if err := syscall.Pipe2(l.wake[:], syscall.O_NONBLOCK|syscall.O_CLOEXEC); err != nil {
		syscall.Close(epfd)
		return nil, err
	}
	if err := syscall.EpollCtl(epfd, syscall.EPOLL_CTL_ADD, l.wake[0], &syscall.EpollEvent{Events: syscall.EPOLLIN, Fd: int32(l.wake[0])}); err != nil {
		syscall.Close(epfd)
		syscall.Close(l.wake[0])
		syscall.Close(l.wake[1])
		return nil, err
	}
	l.parker, l.parked, l.parkfd = parker()
	return l, nil
}

// parker makes the epoll descriptor an idle loop parks on (block), in a
// file that owns it, and, where Go's network poller takes it (an epoll
// descriptor polls readable while it has events), the raw connection
// the loop waits on; nil for both if it does not. os.NewFile registers
// only a non-blocking descriptor.
func parker() (*os.File, syscall.RawConn, int) {
	fd, err := syscall.EpollCreate1(syscall.EPOLL_CLOEXEC)
	if err != nil {
		return nil, nil, -1
	}
	if syscall.SetNonblock(fd, true) != nil {
		syscall.Close(fd)
		return nil, nil, -1
	}
	f := os.NewFile(uintptr(fd), "epoll")
	if f.SetReadDeadline(time.Time{}) != nil { // a deadline needs the poller
		f.Close()
		return nil, nil, -1
	}
	rc, err := f.SyscallConn()
	if err != nil {
		f.Close()
		return nil, nil, -1
	}
	return f, rc, fd
}

// parkCtl adds epfd to the parker's descriptor or takes it out (op). A
// raw system call, as the loop's waits are: a call Go's scheduler sees
// wakes its monitor thread, which then polls every 20 µs for a while.
func (l *loop) parkCtl(op int) syscall.Errno {
	ev := syscall.EpollEvent{Events: syscall.EPOLLIN, Fd: int32(l.epfd)}
	_, _, e := syscall.RawSyscall6(syscall.SYS_EPOLL_CTL, uintptr(l.parkfd), uintptr(op), uintptr(l.epfd), uintptr(unsafe.Pointer(&ev)), 0, 0)
	return e
}

// posted is a published message, or a parked command's reply (unpark),
// for one of the loop's connections: what writes it.
type posted struct {
	lc     *lconn
	write  func(commands.Writer)
	unpark bool
}

// post leaves p for the loop's next round (resume), from any goroutine.
func (l *loop) post(p posted) {
	l.mu.Lock()
	first := len(l.posted) == 0
	l.posted = append(l.posted, p)
	l.hasPosted.Store(true)
	l.mu.Unlock()
	if first { // a wake-up is already pending otherwise
		l.wakeUp()
	}
}

// deliver queues a published message for lc.
func (l *loop) deliver(lc *lconn, m *node.Message) {
	l.post(posted{lc: lc, write: m.WriteTo})
}

// park runs wait, a command's deferred reply, on a goroutine of its own;
// the connection reads nothing until resume writes the reply. A hang-up
// meanwhile closes it (handle).
func (l *loop) park(lc *lconn, wait func(gone <-chan struct{}) func(commands.Writer)) {
	lc.parked = true
	gone := make(chan struct{})
	lc.gone = gone
	if !lc.busy {
		l.interest(lc, syscall.EPOLLRDHUP)
	}
	go func() { l.post(posted{lc: lc, write: wait(gone), unpark: true}) }()
}

// resume writes what was posted, in order: published messages (closing a
// subscriber whose unread output passes the limit) and parked commands'
// replies, whose connections then go on with what they sent meanwhile.
func (l *loop) resume() {
	l.mu.Lock()
	list := l.posted
	l.posted = nil
	l.hasPosted.Store(false)
	l.mu.Unlock()
	limit := l.s.node.Limits().MaxOutput
	for _, p := range list {
		lc := p.lc
		if lc.dead || !p.unpark && lc.closing {
			continue
		}
		p.write(lc.w)
		if !p.unpark && len(lc.w.Bytes()) > limit { // a subscriber that does not read
			l.s.node.Logger().Warn("client output limit reached by published messages, closing connection", "addr", lc.c.Addr, "bytes", len(lc.w.Bytes()))
			l.close(lc)
			continue
		}
		if !lc.seen {
			lc.seen = true
			l.round = append(l.round, lc)
		}
		if p.unpark {
			lc.parked, lc.gone = false, nil
			if again := lc.c.TakePark(); again != nil { // the command was held again (node/hold.go)
				l.park(lc, again)
				continue
			}
			if !lc.busy {
				l.interest(lc, syscall.EPOLLIN|syscall.EPOLLRDHUP)
				if !lc.dead && lc.rd.Buffered() > 0 {
					l.handle(lc, 0)
				}
			}
		}
	}
}

func (l *loop) wakeUp() {
	l.mu.Lock()
	defer l.mu.Unlock()
	if !l.exited {
		var b [1]byte
		syscall.Write(l.wake[1], b[:])
	}
}

// adopt moves an accepted connection onto a loop. It reports false if
// the connection is not one a loop can serve (the caller keeps it).
func (s *Server) adopt(nc net.Conn) bool {
	switch nc.(type) {
	case *net.TCPConn, *net.UnixConn:
	default:
		return false
	}
	rc, err := nc.(syscall.Conn).SyscallConn()
	if err != nil {
		return false
	}
	// The loop owns a duplicate of the socket, made with a bare system
	// call so that Go's poller never watches it (an os.File would be
	// registered there too, and every packet would wake a second thread
	// on the core); closing the original takes it out of the poller.
	fd := -1
	rc.Control(func(sfd uintptr) {
		r, _, e := syscall.Syscall(syscall.SYS_FCNTL, sfd, syscall.F_DUPFD_CLOEXEC, 0)
		if e == 0 {
			fd = int(r)
		}
	})
	if fd < 0 {
		return false
	}
	addr, laddr := nc.RemoteAddr().String(), nc.LocalAddr().String()
	nc.Close()
	if err := syscall.SetNonblock(fd, true); err != nil {
		syscall.Close(fd)
		return true
	}
	srv := s.node
	lc := &lconn{fd: fd, src: pollSource{fd: fd}}
	c, err := srv.NewClient(addr, laddr, lc.kill)
	if err != nil {
		msg := []byte("-" + err.Error() + "\r\n")
		syscall.Write(fd, msg)
		syscall.Close(fd)
		return true
	}
	lc.c, lc.w = c, NewWriter(c.Proto)
	c.SetFD(fd)
	lim := srv.Limits()
	lc.rd = NewReader(&lc.src, lim.MaxArgs, lim.MaxArgLen)
	lc.rd.Unauthenticated = func() bool { return srv.Unauthenticated(c) }
	s.mu.Lock()
	if s.closed {
		s.mu.Unlock()
		srv.RemoveClient(c)
		lc.mu.Lock() // a CLIENT KILL that listed it may still call lc.kill
		lc.dead = true
		syscall.Close(fd)
		lc.mu.Unlock()
		return true
	}
	l := s.loops[s.next%len(s.loops)]
	s.next++
	c.SetStripe(l.index) // before the loop can see the connection
	c.SetLooped()
	c.SetDeliver(func(m *node.Message) { l.deliver(lc, m) })
	s.lconns[lc] = struct{}{}
	s.spareLocked()
	s.wg.Add(1)
	s.mu.Unlock()
	// Register under the loop's lock: a loop that Close stopped has
	// closed its epoll descriptor, and one that is stopping must not be
	// left a connection it will never see.
	l.mu.Lock()
	err = syscall.EBADF
	if !l.exited {
		l.conns[fd] = lc
		err = syscall.EpollCtl(l.epfd, syscall.EPOLL_CTL_ADD, fd, &syscall.EpollEvent{Events: syscall.EPOLLIN | syscall.EPOLLRDHUP, Fd: int32(fd)})
		if err != nil {
			delete(l.conns, fd)
		}
	}
	l.mu.Unlock()
	if err != nil {
		srv.Logger().Warn("event loop refused a connection", "addr", addr, "err", err)
		lc.mu.Lock()
		lc.dead = true
		syscall.Close(fd)
		lc.mu.Unlock()
		srv.RemoveClient(c)
		s.mu.Lock()
		delete(s.lconns, lc)
		s.spareLocked()
		s.mu.Unlock()
		s.wg.Done()
	}
	return true
}

// kill closes the connection from any goroutine (CLIENT KILL, Close): the
// socket is shut down, and the loop, seeing it hang up, closes it.
func (lc *lconn) kill() {
	lc.mu.Lock()
	if !lc.dead {
		syscall.Shutdown(lc.fd, syscall.SHUT_RDWR)
	}
	lc.mu.Unlock()
}

// Waiting. A goroutine blocked in a system call gives up its P, and the
// runtime hands the P to another thread; when the call returns, the loop
// must get a P back. On a server pinned to one core that is a thread
// switch per round and the p99 of c=50 P=1 doubled (1.8 ms against 0.8
// ms). So while requests keep coming the loop waits up to rawWaitMs in
// epoll holding its P (the runtime preempts it by a signal, which ends
// the wait, when it must), and yields to other goroutines after every
// round; only after idleWaits empty waits does it park (block), so an
// idle server costs nothing.
const (
	rawWaitMs       = 1
	idleWaits       = 20
	spareYieldEvery = 64
)

// wait fills l.events and returns how many there are, and sets l.hot:
// whether it found them at once (hotWait).
func (l *loop) wait(idle int) int {
	start := time.Now()
	if !l.began.IsZero() {
		l.busyNs += int64(start.Sub(l.began))
	}
	n := l.waitEvents(idle)
	end := time.Now()
	waited := end.Sub(start)
	l.hot = n > 0 && waited < hotWait
	l.idleNs += int64(waited)
	for l.busyNs+l.idleNs > int64(2*loadWindow) {
		l.busyNs, l.idleNs = l.busyNs/2, l.idleNs/2
	}
	l.began = end
	return n
}

// waitEvents is wait's work, without the timing: it first sends held
// changes unless requests are at hand.
func (l *loop) waitEvents(idle int) int {
	if !l.held.IsZero() {
		// Changes wait for the replicas: they go now, before the
		// loop waits, unless more requests are at hand.
		if n, _ := l.rawWait(0); n > 0 {
			return n
		}
		l.sendHeld()
	}
	timeout := rawWaitMs
	if idle >= idleWaits {
		timeout = 0 // a last look before blocking
	}
	if n, _ := l.rawWait(timeout); n > 0 {
		return n
	}
	if idle < idleWaits {
		return 0
	}
	if l.parked != nil {
		if n, ok := l.block(); ok {
			return n
		}
	}
	// At most a second, so the idle-connection sweep runs even when
	// CONFIG SET timeout comes while the loop sleeps.
	m, err := syscall.EpollWait(l.epfd, l.events, 1000)
	if err != nil && err != syscall.EINTR {
		l.s.node.Logger().Error("event loop wait failed", "err", err)
	}
	return max(m, 0)
}

// rawWait fills l.events from epoll, waiting at most timeout ms, holding
// the loop's P (a raw system call, which Go's scheduler does not see),
// and returns how many there are: 0 with the error, if any.
func (l *loop) rawWait(timeout int) (int, syscall.Errno) {
	n, _, e := syscall.RawSyscall6(syscall.SYS_EPOLL_PWAIT, uintptr(l.epfd), uintptr(unsafe.Pointer(&l.events[0])), uintptr(len(l.events)), uintptr(timeout), 0, 0)
	if e != 0 {
		return 0, e
	}
	return int(n), 0
}

// busyHold is the longest a busy loop keeps its rounds' changes from
// its replicas, in the time since the first round it kept. A send to a
// replica costs about as much as ten requests (bench/RESULTS.md); held
// while requests keep coming, the changes of a loaded server's rounds
// share one.
//
// hotWait is the longest wait for a round's requests after which the
// loop still counts as busy (hot): a wait that found them at hand takes
// a system call's time, about a microsecond here.
//
// Both are variables for tests only.
var (
	busyHold = 200 * time.Microsecond
	hotWait  = 10 * time.Microsecond
)

// loadWindow is about how far back hold looks at the loop's load.
const loadWindow = 10 * time.Millisecond

// hold reports whether the round's changes wait for the replicas instead
// of going before its replies (holds), and keeps when the first round
// held ended. Held changes go before the loop next waits with nothing at
// hand (wait), or at the end of the first round past busyHold.
func (l *loop) hold() bool {
	now := time.Now()
	if l.held.IsZero() {
		l.held = now
	}
	if holds(l.hot, l.busyNs, l.idleNs, now.Sub(l.held)) {
		return true
	}
	l.held = time.Time{}
	return false
}

// holds reports whether a loop holds its changes from its replicas after
// a round: only while it is busy, and for less than busyHold since the
// first round it held (heldFor). Busy: the round's requests were at hand
// when it began (hot), or the loop spent more of its recent time in
// rounds (busyNs) than in waits (idleNs). A loop that waits for its
// requests sends each round's changes before the round's replies.
func holds(hot bool, busyNs, idleNs int64, heldFor time.Duration) bool {
	return (hot || busyNs > idleNs) && heldFor < busyHold
}

// sendHeld runs the replication pump for the changes the loop holds, if
// they are still waiting (another loop, or the pump's goroutine, may have
// sent them), and yields to the pump's goroutine where that has them.
func (l *loop) sendHeld() {
	l.held = time.Time{}
	if l.repl.ReplicationPending() && !l.repl.PumpReplication() {
		runtime.Gosched()
	}
}

// block parks an idle loop in Go's network poller until its epoll
// descriptor has events, or a second has passed (the idle-connection
// sweep runs even when CONFIG SET timeout comes while the loop sleeps),
// and returns how many events it read; ok is false if epfd could not be
// added to the parker's descriptor, and the loop did not wait. Parked,
// the loop holds no P and is in no system call. A blocking epoll_wait is
// a system call that keeps its P until Go's monitor thread takes it back,
// 10 ms on, and meanwhile the monitor, which sleeps while every P is idle,
// wakes every 20 µs: some 50 wake-ups each time an idle loop blocked (on
// an idle replica, at each of its primary's heartbeats).
func (l *loop) block() (n int, ok bool) {
	if l.parkCtl(syscall.EPOLL_CTL_ADD) != 0 {
		return 0, false
	}
	defer l.parkCtl(syscall.EPOLL_CTL_DEL)
	l.parker.SetReadDeadline(time.Now().Add(time.Second))
	var failed syscall.Errno
	err := l.parked.Read(func(uintptr) bool { // the parker's descriptor, which holds l.epfd
		n, failed = l.rawWait(0)
		if failed == syscall.EINTR {
			failed = 0
		}
		return failed != 0 || n > 0 // none: park until the descriptor polls readable
	})
	if failed != 0 {
		err = failed
	}
	if err != nil && !errors.Is(err, os.ErrDeadlineExceeded) {
		l.s.node.Logger().Error("event loop wait failed", "err", err)
		time.Sleep(rawWaitMs * time.Millisecond) // a failing descriptor must not spin
	}
	return n, true
}

func (l *loop) run() {
	defer l.s.wg.Done()
	defer addLoops(-1)
	idle := 0
	for {
		n := l.wait(idle)
		// A round that only read the watched link (a replica's stream)
		// counts as idle: a replica without clients goes back to blocking
		// waits between its primary's heartbeats.
		if n == l.serveWatch(l.events[:n]) {
			idle++
		} else {
			idle = 0
			l.catchUp()
		}
		for _, ev := range l.events[:n] {
			fd := int(ev.Fd)
			if fd == l.wake[0] {
				var b [64]byte
				for {
					if k, err := syscall.Read(fd, b[:]); k <= 0 || err != nil {
						break
					}
				}
				l.resume()
				continue
			}
			l.mu.Lock()
			lc := l.conns[fd]
			l.mu.Unlock()
			if lc == nil {
				continue
			}
			if l.hasPosted.Load() {
				l.resume()
			}
			l.handle(lc, ev.Events)
		}
		if l.repl.ReplicationPending() && !l.hold() && !l.repl.PumpReplication() && len(l.round) > 0 {
			// The round wrote: the replication pump sends its changes
			// before its replies go, so a client that reads its write
			// back from a replica finds it there more often, and a
			// replica lags by the pump, not by the replies' sends. A
			// busy loop holds them for a later round instead (hold).
			// The loop pumps itself; where the pump's goroutine has the
			// changes, it yields to it.
			runtime.Gosched()
		}
		for i := 0; i < len(l.round); i++ { // by index: a write may queue more
			lc := l.round[i]
			lc.seen = false
			if !lc.dead && !lc.busy {
				l.write(lc)
			}
		}
		clear(l.round)
		l.round = l.round[:0]
		l.sweepIdle()
		// Timers and other goroutines get their turn every round. With a
		// spare P they run on it as soon as they are ready, and a yield
		// would only wake its thread to find nothing (Gosched wakes an
		// idle P's thread): the loop then yields every spareYieldEvery
		// rounds, in case.
		if l.rounds++; !spare.up.Load() || l.rounds%spareYieldEvery == 0 {
			runtime.Gosched()
		}
		if l.stop.Load() {
			l.mu.Lock()
			if len(l.conns) == 0 {
				l.exited = true
				syscall.Close(l.epfd)
				if l.parker != nil {
					l.parker.Close()
				}
				syscall.Close(l.wake[0])
				syscall.Close(l.wake[1])
				l.mu.Unlock()
				return
			}
			l.mu.Unlock()
		}
	}
}

// handle serves one connection's event: writes what was pending if it is
// writable, else runs every complete command it sent.
func (l *loop) handle(lc *lconn, events uint32) {
	if lc.dead {
		return
	}
	if lc.parked {
		if events&(syscall.EPOLLERR|syscall.EPOLLHUP|syscall.EPOLLRDHUP) != 0 {
			l.close(lc) // gone while waiting: its reply has nowhere to go
		} else if lc.busy && events&syscall.EPOLLOUT != 0 {
			l.write(lc)
		}
		return
	}
	if lc.busy {
		if events&(syscall.EPOLLERR|syscall.EPOLLHUP) != 0 {
			l.close(lc)
		} else if events&syscall.EPOLLOUT != 0 {
			l.write(lc)
		}
		return
	}
	srv := l.s.node
	lim := srv.Limits()
	lc.src.ready = true
	lc.c.Mark()
	lc.c.BeginBatch()
	defer lc.c.EndBatch()
	for first := true; ; first = false {
		args, err := lc.rd.Next()
		if err == errWouldBlock {
			break
		}
		if first && err == nil && lc.rd.Buffered() > 0 && srv.Prefetches() {
			l.prefetch(lc, args)
		}
		if err != nil {
			var pe ProtocolError
			if errors.As(err, &pe) {
				lc.w.Error(string(pe))
				srv.Logger().Debug("protocol error, closing connection", "addr", lc.c.Addr, "err", string(pe))
			} else if !errors.Is(err, io.EOF) {
				srv.Logger().Debug("connection read failed", "addr", lc.c.Addr, "err", err)
			}
			l.closeAfterWrite(lc)
			return
		}
		if lc.c.Killed() { // CLIENT KILL from another connection: run nothing more
			l.close(lc)
			return
		}
		srv.Exec(lc.c, args, lc.w)
		if h := lc.c.TakeHandoff(); h != nil {
			l.handoff(lc, h)
			return
		}
		if p := lc.c.TakePark(); p != nil {
			l.park(lc, p)
			break // the replies before it are written this round
		}
		if len(lc.w.Bytes()) > lim.MaxOutput {
			srv.Logger().Warn("client output limit reached, closing connection", "addr", lc.c.Addr, "bytes", len(lc.w.Bytes()), "limit", lim.MaxOutput)
			lc.w.Reset()
			lc.out = 0
			lc.w.Error("ERR output buffer limit reached")
			l.closeAfterWrite(lc)
			return
		}
		if lc.c.CloseAfterReply() {
			l.closeAfterWrite(lc)
			return
		}
		if len(lc.w.Bytes()) >= flushThreshold {
			if l.write(lc); lc.dead || lc.busy {
				return // the client reads slowly: read nothing more until it has
			}
		}
	}
	if len(lc.w.Bytes()) > 0 && !lc.seen {
		lc.seen = true
		l.round = append(l.round, lc)
	}
}

// prefetch loads the state of the keys of a pipelined batch (args, the
// first command, and those buffered after it) into the CPU cache before
// the batch runs, so that their cache misses overlap.
func (l *loop) prefetch(lc *lconn, args [][]byte) {
	srv := l.s.node
	keys := srv.AppendKey(l.keys[:0], lc.c, args)
	n := 0 // commands looked at: keyless ones end the look too
	lc.rd.Lookahead(func(a [][]byte) bool {
		keys = srv.AppendKey(keys, lc.c, a)
		n++
		return len(keys) < node.PrefetchMax && n < 2*node.PrefetchMax
	})
	if len(keys) > 1 {
		srv.Prefetch(keys)
	}
	clear(keys) // they point into the reader's buffer
	l.keys = keys[:0]
}

// write sends the connection's pending replies. What the socket does not
// take now waits for writability, and the connection's input waits too.
func (l *loop) write(lc *lconn) {
	// The requests these replies answer count before the replies go:
	// a client that has a reply finds its request in INFO.
	l.s.node.CountTraffic(lc.c, lc.rd.TakeCount(), 0)
	b := lc.w.Bytes()
	sent := 0
	for lc.out < len(b) {
		n, e := sysSend(uintptr(lc.fd), b[lc.out:])
		switch e {
		case 0:
			lc.out += n
			sent += n
			continue
		case syscall.EAGAIN:
			lc.c.SetBuffers(lc.rd.Buffered(), len(b)-lc.out)
			l.s.node.CountTraffic(lc.c, lc.rd.TakeCount(), sent)
			// The socket is full: what the client has not read is ours
			// left to send and what the socket holds.
			if unread := int64(len(b) - lc.out + sendQueued(lc.fd)); l.s.node.OutputOver(lc.c, unread, &lc.overSoft, time.Now()) {
				l.close(lc)
				return
			}
			if !lc.busy {
				lc.busy = true
				l.interest(lc, syscall.EPOLLOUT)
			}
			return
		}
		l.s.node.CountTraffic(lc.c, lc.rd.TakeCount(), sent)
		l.close(lc)
		return
	}
	l.s.node.CountTraffic(lc.c, lc.rd.TakeCount(), sent)
	lc.c.SetBuffers(lc.rd.Buffered(), 0)
	// The socket took it all, but may hold it unread: every quarter of
	// the limit written, what it holds is checked against the limit (a
	// syscall, so not at every write).
	lc.unchecked += sent
	if at := l.s.node.OutputCheckAt(); at > 0 && lc.unchecked >= at {
		lc.unchecked = 0
		if l.s.node.OutputOver(lc.c, int64(sendQueued(lc.fd)), &lc.overSoft, time.Now()) {
			l.close(lc)
			return
		}
	} else {
		lc.overSoft = time.Time{}
	}
	lc.w.Reset()
	lc.out = 0
	if lc.closing {
		l.close(lc)
		return
	}
	if lc.busy {
		lc.busy = false
		if lc.parked {
			l.interest(lc, syscall.EPOLLRDHUP)
			return
		}
		l.interest(lc, syscall.EPOLLIN|syscall.EPOLLRDHUP)
		if lc.rd.Buffered() > 0 { // commands read before the pause
			l.handle(lc, 0)
		}
	}
}

func (l *loop) interest(lc *lconn, events uint32) {
	if err := syscall.EpollCtl(l.epfd, syscall.EPOLL_CTL_MOD, lc.fd, &syscall.EpollEvent{Events: events, Fd: int32(lc.fd)}); err != nil {
		l.s.node.Logger().Warn("event loop lost a connection", "addr", lc.c.Addr, "err", err)
		l.close(lc)
	}
}

// handoff passes the connection on (a replica's PSYNC): as a net.Conn of
// its own, after the replies still pending, with the bytes read but not
// parsed; the loop forgets it.
func (l *loop) handoff(lc *lconn, h func(net.Conn, []byte)) {
	out := append([]byte(nil), lc.w.Bytes()[lc.out:]...)
	pending := lc.rd.Unparsed()
	fd, err := syscall.Dup(lc.fd)
	var nc net.Conn
	if err == nil {
		f := os.NewFile(uintptr(fd), "")
		nc, err = net.FileConn(f) // a duplicate of its own, in Go's poller
		f.Close()
	}
	l.close(lc)
	if err != nil {
		l.s.node.Logger().Warn("could not hand a connection over", "addr", lc.c.Addr, "err", err)
		return
	}
	go func() {
		if len(out) > 0 {
			if _, err := nc.Write(out); err != nil {
				nc.Close()
				return
			}
		}
		h(nc, pending)
	}()
}

// closeAfterWrite closes the connection once its pending replies are
// written: now if the socket takes them, else when it drains.
func (l *loop) closeAfterWrite(lc *lconn) {
	lc.closing = true
	l.write(lc)
}

// close closes the connection (on the loop's goroutine only).
func (l *loop) close(lc *lconn) {
	if lc.dead {
		return
	}
	lc.mu.Lock()
	lc.dead = true
	if lc.gone != nil {
		close(lc.gone) // a parked command stops waiting
		lc.gone = nil
	}
	syscall.EpollCtl(l.epfd, syscall.EPOLL_CTL_DEL, lc.fd, nil)
	l.mu.Lock()
	delete(l.conns, lc.fd)
	l.mu.Unlock()
	syscall.Close(lc.fd)
	lc.mu.Unlock()
	l.s.node.RemoveClient(lc.c)
	l.s.mu.Lock()
	delete(l.s.lconns, lc)
	l.s.spareLocked()
	l.s.mu.Unlock()
	l.s.wg.Done()
}

// sweepIdle closes, at most once a second, connections idle past the
// timeout (CONFIG SET timeout) and those the loop cannot write to whose
// unread replies stayed over the soft output limit too long.
func (l *loop) sweepIdle() {
	if time.Since(l.swept) < time.Second {
		return
	}
	l.swept = time.Now()
	t := l.s.node.IdleTimeout()
	l.mu.Lock()
	var idle []*lconn
	for _, lc := range l.conns {
		switch {
		case t > 0 && lc.c.Idle() > t && !lc.busy:
			idle = append(idle, lc)
		case lc.busy && l.s.node.OutputSoftExpired(lc.c, lc.overSoft, l.swept):
			idle = append(idle, lc) // over the soft output limit too long
		}
	}
	l.mu.Unlock()
	for _, lc := range idle {
		l.close(lc)
	}
}

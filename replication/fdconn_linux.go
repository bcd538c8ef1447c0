package replication

import (
	"errors"
	"io"
	"net"
	"os"
	"sync"
	"syscall"
	"time"
	"unsafe"
)

// blocking returns c as a connection served by blocking system calls on a
// thread of its own instead of Go's network poller. A replica's link to
// its primary uses it: for its handshake and sync, and for its stream
// where no event loop reads it (looped.go). While a node's event loops
// are busy (a replica answering reads) they are always runnable, and the
// Go scheduler then looks at the poller only every 10 ms (sysmon): the
// stream would arrive up to 10 ms late, as measured (8 ms median lag
// with one core). A goroutine blocked in read(2) is runnable as soon as
// its data arrives, and the event loops yield every round. The primary's
// side stays on the poller: there the loops matter most, and a goroutine
// in a blocking read holds the only P (GOMAXPROCS=1) until sysmon takes
// it back, stalling them. c is closed; on failure c is returned as it
// was.
func blocking(c net.Conn) net.Conn {
	sc, ok := c.(syscall.Conn)
	if !ok {
		return c
	}
	raw, err := sc.SyscallConn()
	if err != nil {
		return c
	}
	fd := -1
	if cerr := raw.Control(func(f uintptr) { fd, err = syscall.Dup(int(f)) }); cerr != nil || err != nil {
		return c
	}
	// The flag belongs to the open file, which c shares until it is
	// closed just below.
	if err := syscall.SetNonblock(fd, false); err != nil {
		syscall.Close(fd)
		return c
	}
	b := &fdConn{fd: fd, local: c.LocalAddr(), remote: c.RemoteAddr()}
	c.Close()
	return b
}

// fdConn is a net.Conn over a blocking socket. Deadlines become the
// socket's receive and send timeouts (SO_RCVTIMEO, SO_SNDTIMEO): each
// read or write waits at most until the deadline set before it began.
type fdConn struct {
	fd            int
	local, remote net.Addr

	mu     sync.Mutex
	users  int  // reads and writes in progress
	closed bool // Close was called; the fd is closed once users is 0
}

// use marks an operation in progress, or reports that the conn is closed.
func (c *fdConn) use() bool {
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.closed {
		return false
	}
	c.users++
	return true
}

func (c *fdConn) done() {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.users--
	if c.closed && c.users == 0 {
		syscall.Close(c.fd)
	}
}

func (c *fdConn) Read(b []byte) (int, error) {
	if !c.use() {
		return 0, net.ErrClosed
	}
	defer c.done()
	for {
		n, err := syscall.Read(c.fd, b)
		switch {
		case err == syscall.EINTR:
			continue
		case err == syscall.EAGAIN:
			return 0, os.ErrDeadlineExceeded
		case err != nil:
			return 0, &net.OpError{Op: "read", Net: "tcp", Addr: c.remote, Err: err}
		case n == 0 && len(b) > 0:
			return 0, io.EOF
		}
		return n, nil
	}
}

func (c *fdConn) Write(b []byte) (int, error) {
	if !c.use() {
		return 0, net.ErrClosed
	}
	defer c.done()
	written := 0
	for written < len(b) {
		n, err := syscall.Write(c.fd, b[written:])
		switch {
		case err == syscall.EINTR:
			continue
		case err == syscall.EAGAIN:
			return written, os.ErrDeadlineExceeded
		case err != nil:
			return written, &net.OpError{Op: "write", Net: "tcp", Addr: c.remote, Err: err}
		}
		written += n
	}
	return written, nil
}

// Close shuts the socket down, which wakes a read or write blocked on
// it; the descriptor is closed when the last of them returns.
func (c *fdConn) Close() error {
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.closed {
		return net.ErrClosed
	}
	c.closed = true
	syscall.Shutdown(c.fd, syscall.SHUT_RDWR)
	if c.users == 0 {
		syscall.Close(c.fd)
	}
	return nil
}

func (c *fdConn) LocalAddr() net.Addr  { return c.local }
func (c *fdConn) RemoteAddr() net.Addr { return c.remote }

func (c *fdConn) SetDeadline(t time.Time) error {
	return errors.Join(c.SetReadDeadline(t), c.SetWriteDeadline(t))
}

func (c *fdConn) SetReadDeadline(t time.Time) error { return c.timeout(syscall.SO_RCVTIMEO, t) }

func (c *fdConn) SetWriteDeadline(t time.Time) error { return c.timeout(syscall.SO_SNDTIMEO, t) }

// timeout sets the socket option opt to the time left until t (none for
// the zero time; a deadline passed waits a microsecond).
func (c *fdConn) timeout(opt int, t time.Time) error {
	if !c.use() {
		return net.ErrClosed
	}
	defer c.done()
	var tv syscall.Timeval
	if !t.IsZero() {
		tv = syscall.NsecToTimeval(max(int64(time.Until(t)), int64(time.Microsecond)))
	}
	return syscall.SetsockoptTimeval(c.fd, syscall.SOL_SOCKET, opt, &tv)
}

// The event loop's side (looped.go): an fdConn is a loopLink.

// hold keeps the descriptor open until release, even past Close, and
// returns it; ok is false if the conn is closed.
func (c *fdConn) hold() (fd int, ok bool) {
	if !c.use() {
		return -1, false
	}
	return c.fd, true
}

func (c *fdConn) release() { c.done() }

// recvNow reads what the socket holds without waiting: errNoInput if it
// holds nothing.
func (c *fdConn) recvNow(b []byte) (int, error) {
	if !c.use() {
		return 0, net.ErrClosed
	}
	defer c.done()
	for {
		n, _, e := syscall.RawSyscall6(syscall.SYS_RECVFROM, uintptr(c.fd), uintptr(unsafe.Pointer(unsafe.SliceData(b))), uintptr(len(b)), syscall.MSG_DONTWAIT, 0, 0)
		switch e {
		case 0:
			if n == 0 && len(b) > 0 {
				return 0, io.EOF
			}
			return int(n), nil
		case syscall.EINTR:
			continue
		case syscall.EAGAIN:
			return 0, errNoInput
		}
		return 0, &net.OpError{Op: "read", Net: "tcp", Addr: c.remote, Err: e}
	}
}

// sendNow writes b if the socket has room for it, without waiting: false
// if it had none. If only part of b fits, it waits for the rest as Write
// does (b is a few bytes: it does not happen in practice).
func (c *fdConn) sendNow(b []byte) (bool, error) {
	if !c.use() {
		return false, net.ErrClosed
	}
	defer c.done()
	for {
		n, _, e := syscall.RawSyscall6(syscall.SYS_SENDTO, uintptr(c.fd), uintptr(unsafe.Pointer(unsafe.SliceData(b))), uintptr(len(b)), syscall.MSG_DONTWAIT|syscall.MSG_NOSIGNAL, 0, 0)
		switch e {
		case 0:
			if int(n) < len(b) {
				_, err := c.Write(b[n:])
				return true, err
			}
			return true, nil
		case syscall.EINTR:
			continue
		case syscall.EAGAIN:
			return false, nil
		}
		return false, &net.OpError{Op: "write", Net: "tcp", Addr: c.remote, Err: e}
	}
}

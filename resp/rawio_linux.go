package resp

import (
	"io"
	"net"
	"os"
	"syscall"
	"unsafe"
)

// rawIO reads and writes a TCP or Unix connection with raw system calls
// that never block (the socket is non-blocking; EAGAIN waits in Go's
// poller as net.Conn does). A plain net.Conn read or write tells the
// scheduler it entered a system call, and when one takes more than 20 µs
// (a loopback write that runs the receiver's TCP stack often does) the
// scheduler hands the P to another thread: on a server pinned to one core
// two threads then share it, and a request waits for an OS time slice,
// milliseconds, in the p99. A raw call keeps the P and its thread.
func rawIO(nc net.Conn) io.ReadWriter {
	sc, ok := nc.(syscall.Conn)
	if !ok {
		return nc
	}
	switch nc.(type) {
	case *net.TCPConn, *net.UnixConn:
	default:
		return nc
	}
	rc, err := sc.SyscallConn()
	if err != nil {
		return nc
	}
	return &rawConn{rc: rc}
}

type rawConn struct {
	rc syscall.RawConn
}

// sysRead is one read(2) of a non-blocking socket, retried on EINTR:
// n = 0 with errno 0 is the end of input, EAGAIN that nothing is ready.
func sysRead(fd uintptr, p []byte) (int, syscall.Errno) {
	for {
		n, _, e := syscall.RawSyscall(syscall.SYS_READ, fd, uintptr(unsafe.Pointer(&p[0])), uintptr(len(p)))
		if e != syscall.EINTR {
			return int(n), e
		}
	}
}

// sysSend is one send(2) with MSG_NOSIGNAL (a peer gone answers EPIPE, no
// signal), retried on EINTR; EAGAIN means the socket is full.
func sysSend(fd uintptr, p []byte) (int, syscall.Errno) {
	for {
		n, _, e := syscall.RawSyscall6(syscall.SYS_SENDTO, fd, uintptr(unsafe.Pointer(&p[0])), uintptr(len(p)),
			syscall.MSG_NOSIGNAL, 0, 0)
		if e != syscall.EINTR {
			return int(n), e
		}
	}
}

func (c *rawConn) Read(p []byte) (int, error) {
	if len(p) == 0 {
		return 0, nil
	}
	var n int
	var errno syscall.Errno
	err := c.rc.Read(func(fd uintptr) bool {
		n, errno = sysRead(fd, p)
		return errno != syscall.EAGAIN // else wait until readable
	})
	switch {
	case err != nil:
		return 0, err
	case errno != 0:
		return 0, os.NewSyscallError("read", errno)
	case n == 0:
		return 0, io.EOF
	}
	return n, nil
}

func (c *rawConn) Write(p []byte) (int, error) {
	written := 0
	var errno syscall.Errno
	err := c.rc.Write(func(fd uintptr) bool {
		for written < len(p) {
			n, e := sysSend(fd, p[written:])
			switch e {
			case 0:
				written += n
			case syscall.EAGAIN:
				return false // wait until writable
			default:
				errno = e
				return true
			}
		}
		return true
	})
	switch {
	case err != nil:
		return written, err
	case errno != 0:
		return written, os.NewSyscallError("write", errno)
	}
	return written, nil
}

// sendQueued is how many bytes the socket fd has queued but its peer has
// not yet acknowledged (SIOCOUTQ): replies written but unread. 0 if it
// cannot tell.
func sendQueued(fd int) int {
	var n int32
	const siocoutq = 0x5411 // TIOCOUTQ
	if _, _, e := syscall.Syscall(syscall.SYS_IOCTL, uintptr(fd), siocoutq, uintptr(unsafe.Pointer(&n))); e != 0 {
		return 0
	}
	return int(n)
}

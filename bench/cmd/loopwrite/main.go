// Command loopwrite measures what one write(2) on a loopback TCP socket
// costs its writer: the system call's time, in which the kernel also
// delivers the bytes into the reader's socket and, if the reader sleeps in
// read(2), wakes it. A primary pays this once an event-loop round for each
// replica (docs/replication.md), so it is the floor of a replica's cost per
// round on a given machine.
//
// The writer writes -size bytes every -every, -n times, on its own thread;
// the reader reads them on another, blocking in read(2) (-reader sleep, as
// an idle replica waits) or polling a non-blocking socket (-reader spin: no
// wakeup to pay). Pin the process to two cores (taskset -c 0,1) so that the
// two threads can run apart. It prints the median, p90 and mean of the
// write's time in µs; the writer does nothing else, so this is CPU time.
//
//	taskset -c 0,1 go run ./bench/cmd/loopwrite -reader sleep -size 1800
package main

import (
	"flag"
	"fmt"
	"net"
	"os"
	"runtime"
	"slices"
	"syscall"
	"time"
	"unsafe"
)

func main() {
	size := flag.Int("size", 1800, "bytes a write")
	every := flag.Duration("every", 150*time.Microsecond, "time between writes")
	n := flag.Int("n", 20000, "writes")
	reader := flag.String("reader", "sleep", "the reader: sleep (blocks in read(2)) or spin (polls)")
	flag.Parse()
	if *reader != "sleep" && *reader != "spin" {
		fail("-reader is sleep or spin")
	}
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		fail(err.Error())
	}
	go read(ln, *reader == "spin")
	c, err := net.Dial("tcp", ln.Addr().String())
	if err != nil {
		fail(err.Error())
	}
	fd := rawFD(c, false)
	runtime.LockOSThread()
	msg := make([]byte, *size)
	times := make([]time.Duration, 0, *n)
	next := time.Now()
	for range *n {
		for time.Now().Before(next) { // spin: no sleep's wakeup in the figure
		}
		next = next.Add(*every)
		t := time.Now()
		// A raw system call: Go's scheduler does not see it, so nothing
		// but the write itself is timed.
		if _, _, e := syscall.RawSyscall(syscall.SYS_WRITE, uintptr(fd), uintptr(unsafe.Pointer(&msg[0])), uintptr(len(msg))); e != 0 {
			fail(e.Error())
		}
		times = append(times, time.Since(t))
	}
	slices.Sort(times)
	var sum time.Duration
	for _, d := range times {
		sum += d
	}
	us := func(d time.Duration) float64 { return float64(d.Nanoseconds()) / 1e3 }
	fmt.Printf("reader=%s size=%d writes=%d p50_us=%.2f p90_us=%.2f mean_us=%.2f\n", *reader, *size, *n,
		us(times[len(times)/2]), us(times[len(times)*9/10]), us(sum/time.Duration(len(times))))
}

// read accepts one connection and reads it until it closes, on a thread of
// its own: blocking in read(2), or polling a non-blocking socket if spin.
func read(ln net.Listener, spin bool) {
	runtime.LockOSThread()
	c, err := ln.Accept()
	if err != nil {
		fail(err.Error())
	}
	fd := rawFD(c, spin)
	buf := make([]byte, 1<<16)
	for {
		k, _, e := syscall.RawSyscall(syscall.SYS_READ, uintptr(fd), uintptr(unsafe.Pointer(&buf[0])), uintptr(len(buf)))
		if e == 0 && k == 0 {
			return
		}
		if e != 0 && e != syscall.EAGAIN {
			fail(e.Error())
		}
	}
}

// rawFD returns a duplicate of c's socket, blocking unless nonblock.
func rawFD(c net.Conn, nonblock bool) int {
	f, err := c.(*net.TCPConn).File()
	if err != nil {
		fail(err.Error())
	}
	fd := int(f.Fd()) // f stays referenced through the process: main never returns early
	if err := syscall.SetNonblock(fd, nonblock); err != nil {
		fail(err.Error())
	}
	keep = append(keep, f)
	return fd
}

// keep holds the files rawFD made, so that the collector never closes
// their descriptors.
var keep []*os.File

func fail(msg string) {
	fmt.Fprintln(os.Stderr, "loopwrite:", msg)
	os.Exit(1)
}

package resp

import (
	"bufio"
	"net"
	"sync/atomic"
	"syscall"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
)

// countingPump stands in for replication: a round "writes" by setting
// pending, and each pump counts and clears it, once the gate, if any, is
// open.
type countingPump struct {
	pending atomic.Bool
	pumps   atomic.Int64
	entered atomic.Int64 // PumpReplication's calls, counted before the gate
	gate    atomic.Pointer[chan struct{}]
}

func (p *countingPump) ReplicationPending() bool { return p.pending.Load() }

func (p *countingPump) PumpReplication() bool {
	p.entered.Add(1)
	if g := p.gate.Load(); g != nil {
		<-*g
	}
	p.pumps.Add(1)
	p.pending.Store(false)
	return true
}

// TestBusyRoundsShareOneSend: a busy loop (its rounds' requests at hand)
// holds a round's changes while more requests wait, so two rounds back
// to back send once, after the second's replies, when the loop finds
// nothing more; busyHold bounds the hold (at zero, nothing is held, and
// each round sends before its replies).
//
// The loop is held in a watched descriptor's callback, the first thing
// of its round, while the test gives it more input: the callback
// "writes" (sets pending) in that round and in the next, which the
// input starts, and a PING answered in the next shows that round ran.
// hotWait is set to count every round busy, so the outcome does not
// depend on how long the loop's waits took; TestHolds covers a loop that
// is not busy.
func TestBusyRoundsShareOneSend(t *testing.T) {
	for _, tc := range []struct {
		name          string
		hot, hold     time.Duration
		atReply, sent int64 // pumps when the reply comes, and in all
	}{
		{"busy", time.Hour, time.Hour, 0, 1}, // held through both rounds, sent after the replies
		{"no-hold", time.Hour, 0, 2, 2},      // each round sends before its replies
	} {
		t.Run(tc.name, func(t *testing.T) {
			savedHot, savedHold := hotWait, busyHold
			hotWait, busyHold = tc.hot, tc.hold // before the loops start; restored after they end
			t.Cleanup(func() { hotWait, busyHold = savedHot, savedHold })
			pump := &countingPump{}
			s := newLoopServer(Options{})
			s.replOf = func(loop int) replPump {
				if loop == 0 {
					return pump
				}
				return &countingPump{} // never pending
			}
			_, addr := serveLoops(t, s)

			// A connection on the loop that Watch uses (loops[0]), and
			// its descriptor on the server's side.
			c, fd := connOnLoop(t, s, addr, 0)
			rd := bufio.NewReader(c)

			r, w := pipe(t)
			var stall atomic.Bool
			var calls atomic.Int64
			t.Cleanup(func() { t.Logf("callbacks %d pumps %d", calls.Load(), pump.pumps.Load()) })
			entered := make(chan struct{})
			release := make(chan struct{})
			stop, _, ok := s.Watch(r, func() bool {
				var b [64]byte
				syscall.Read(r, b[:])
				calls.Add(1)
				pump.pending.Store(true) // this round wrote
				if stall.CompareAndSwap(true, false) {
					entered <- struct{}{}
					<-release
				}
				return true
			})
			require.True(t, ok)
			defer stop()
			eventually(t, func() bool { return pump.pumps.Load() == 1 }, "the first call's round sends")
			pump.pumps.Store(0)
			gate := make(chan struct{})
			if tc.atReply == 0 {
				pump.gate.Store(&gate) // the pump waits until the reply is read
			} else {
				close(gate)
			}

			stall.Store(true)
			_, err := syscall.Write(w, []byte("a"))
			require.NoError(t, err)
			<-entered // the loop is in the first round, held in the callback
			_, err = syscall.Write(w, []byte("b"))
			require.NoError(t, err)
			_, err = c.Write([]byte("PING\r\n"))
			require.NoError(t, err)
			eventually(t, func() bool { return inq(t, r) > 0 && inq(t, fd) > 0 }, "the next round's input is there before the first round ends")
			close(release)

			line, err := rd.ReadString('\n')
			require.NoError(t, err)
			require.Equal(t, "+PONG\r\n", line, "the second round ran")
			require.Equal(t, tc.atReply, pump.pumps.Load(), "sends when the reply came")
			if tc.atReply == 0 {
				close(gate)
			}
			eventually(t, func() bool { return !pump.pending.Load() }, "the changes are sent once nothing more waits")
			require.Equal(t, tc.sent, pump.pumps.Load(), "sends in all")
		})
	}
}

// TestHolds: a loop holds its changes only while busy (hot, or more time
// in rounds than in waits) and for less than busyHold.
func TestHolds(t *testing.T) {
	ms := int64(time.Millisecond)
	for _, tc := range []struct {
		name       string
		hot        bool
		busy, idle int64
		heldFor    time.Duration
		want       bool
	}{
		{"hot", true, 0, 10 * ms, 0, true},
		{"mostly in rounds", false, 6 * ms, 4 * ms, 0, true},
		{"mostly waiting", false, 4 * ms, 6 * ms, 0, false},
		{"half and half", false, 5 * ms, 5 * ms, 0, false},
		{"idle", false, 0, 0, 0, false},
		{"hot, held long enough", true, 0, 0, busyHold, false},
		{"in rounds, held long enough", false, 6 * ms, 4 * ms, busyHold + 1, false},
		{"hot, held a while", true, 0, 0, busyHold - 1, true},
	} {
		require.Equal(t, tc.want, holds(tc.hot, tc.busy, tc.idle, tc.heldFor), tc.name)
	}
}

// connOnLoop connects to addr until a connection lands on s's loop i,
// and returns it with its descriptor on the server's side.
func connOnLoop(t *testing.T, s *Server, addr string, i int) (net.Conn, int) {
	t.Helper()
	for range 16 {
		c, err := net.Dial("tcp", addr)
		require.NoError(t, err)
		t.Cleanup(func() { c.Close() })
		pingOn(t, c, bufio.NewReader(c)) // the loop has it
		port := c.LocalAddr().(*net.TCPAddr).Port
		s.mu.Lock()
		l := s.loops[i]
		s.mu.Unlock()
		l.mu.Lock()
		for fd := range l.conns {
			if sa, err := syscall.Getpeername(fd); err == nil {
				if in4, ok := sa.(*syscall.SockaddrInet4); ok && in4.Port == port {
					l.mu.Unlock()
					return c, fd
				}
			}
		}
		l.mu.Unlock()
	}
	t.Fatalf("no connection landed on loop %d", i)
	return nil, 0
}

// inq returns how many bytes wait to be read on fd (FIONREAD).
func inq(t *testing.T, fd int) int {
	t.Helper()
	n, e := bytesIn(fd)
	require.Zero(t, e)
	return n
}

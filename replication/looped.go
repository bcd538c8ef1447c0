package replication

import (
	"bufio"
	"context"
	"errors"
	"fmt"
	"strconv"
	"sync"
	"sync/atomic"
	"time"
)

// A replica's stream read by an event loop. The link's goroutine reads
// the stream with blocking reads on a thread of its own (stream). With
// Options.Watch, the event loops that answer the replica's clients read
// it instead, first in each round in which it has input, as Redis's
// replica does in its one loop (the first loop is woken by it; another
// checks it before its clients: resp's catchUp):
//   - a change that reached the replica before a client's read is
//     applied before that read is answered, whatever the order in which
//     the kernel woke the threads;
//   - the stream costs no thread switch and no second runnable thread on
//     the replica's core.
// The goroutine then only acknowledges when the loop has not for a while
// (acker) and watches for a silent link.

// LinkOnLoop reports whether an event loop reads the stream from this
// replica's primary (Options.Watch): false when the link's goroutine
// reads it, the link is down, or the node is no replica.
func (m *Manager) LinkOnLoop() bool {
	m.mu.Lock()
	defer m.mu.Unlock()
	return m.up != nil && m.up.onLoop
}

// loopLink is a link an event loop can read for the stream: fdConn, on
// Linux.
type loopLink interface {
	hold() (fd int, ok bool)
	release()
	recvNow(b []byte) (int, error)
	sendNow(b []byte) (bool, error)
}

// errNoInput: the link holds nothing to read now.
var errNoInput = errors.New("replication: no input ready")

// minRead is the least room the loop's input buffer has before a read;
// maxReads is how many reads a round makes at most.
const (
	minRead  = 64 << 10
	maxReads = 4
)

// looped is the stream's state on the loops. ready runs on one loop at a time,
// under the watch's lock, so buf, off and unit need no lock of their own.
type looped struct {
	u    *upstream
	ctx  context.Context
	c    loopLink
	buf  []byte         // input read; buf[off:] is not yet applied
	off  int            // where the next frame starts
	unit []pendingFrame // the frames of a unit read so far, not applied yet (they point into buf)
	// stalled: unit is whole and waits for m.apply, which another
	// goroutine held (tryApplyUnit); waiting: a goroutine waits for it
	// and then kicks the loop.
	stalled bool
	waiting atomic.Bool
	kick    func()
	fail    chan error // the error that ended the stream, once (capacity 1)
	acks    *acker
}

// streamLooped serves the stream from an event loop. It reports false,
// having read nothing, if no loop took the link: stream serves it then.
// br holds what was read past the sync; the loop goes on from there.
func (u *upstream) streamLooped(ctx context.Context, c loopLink, br *bufio.Reader) (bool, error) {
	fd, ok := c.hold()
	if !ok {
		return false, nil
	}
	defer c.release() // after stop: the loop never reads a closed descriptor
	s := &looped{u: u, ctx: ctx, c: c, fail: make(chan error, 1), acks: u.m.newAcker(c.sendNow)}
	ahead, _ := br.Peek(br.Buffered())
	s.buf = append(make([]byte, 0, 2*minRead+len(ahead)), ahead...)
	stop, kick, ok := u.m.o.Watch(fd, s.ready)
	if !ok {
		return false, nil
	}
	s.kick = kick
	defer stop()
	u.m.mu.Lock()
	u.onLoop = true
	u.m.mu.Unlock()
	defer func() {
		u.m.mu.Lock()
		u.onLoop = false
		u.m.mu.Unlock()
	}()
	if err := s.acks.ack(u.m); err != nil {
		return true, err
	}
	t := time.NewTicker(s.acks.every)
	defer t.Stop()
	for {
		select {
		case err := <-s.fail:
			return true, err
		case <-ctx.Done():
			return true, ctx.Err()
		case <-t.C:
			u.m.mu.Lock()
			silent := time.Since(u.lastIO)
			u.m.mu.Unlock()
			if silent > replTimeout {
				return true, fmt.Errorf("replication: nothing from the primary for %s", silent.Round(time.Second))
			}
			if err := s.acks.ack(u.m); err != nil {
				return true, err
			}
		}
	}
}

// ready applies every whole unit of the input read before, then reads
// what the link holds and applies it, and acknowledges. It returns false
// when the stream ends (the error is in s.fail). It reads at most
// maxReads times (256 KB or more), so a primary that sends without pause
// never keeps the loop from its clients: what is left waits for the
// loop's next round.
func (s *looped) ready() bool {
	if err := s.apply(); err != nil {
		return s.end(err)
	}
	for range maxReads {
		s.reserve()
		room := cap(s.buf) - len(s.buf)
		n, err := s.c.recvNow(s.buf[len(s.buf):cap(s.buf)])
		if err == errNoInput {
			break
		}
		if err != nil {
			return s.end(err)
		}
		s.buf = s.buf[:len(s.buf)+n]
		if err := s.apply(); err != nil {
			return s.end(err)
		}
		if n < room {
			break // all it held, most likely; the loop's next wait says if more came
		}
	}
	if err := s.acks.ack(s.u.m); err != nil {
		return s.end(err)
	}
	return true
}

// reserve makes room for a read: minRead bytes at least, and twice the
// unapplied input, so a frame larger than the buffer fits in time. The
// unapplied input moves to the front of the buffer when no unit's frames
// point into it, else to a new buffer; so does it when a large frame left
// the buffer more than four times the size needed now.
func (s *looped) reserve() {
	rest := len(s.buf) - s.off
	want := max(minRead, 2*rest)
	if cap(s.buf)-len(s.buf) >= minRead && cap(s.buf)-s.off >= want {
		return
	}
	size := want + minRead
	if len(s.unit) == 0 && cap(s.buf) >= size && cap(s.buf) <= 4*size {
		s.buf = s.buf[:copy(s.buf, s.buf[s.off:])]
	} else {
		s.buf = append(make([]byte, 0, size), s.buf[s.off:]...)
	}
	s.off = 0
}

// apply applies every whole unit in the input. The loop never waits for
// m.apply: a full sync to this node's own replica holds it while it
// reads the keyspace (more than a second for a million keys), and the
// loop's clients would wait as long. A unit that finds it held stays
// whole in s.unit (stalled), a goroutine waits for the lock and kicks
// the loop, and apply tries again then, or when more input comes.
func (s *looped) apply() error {
	for {
		if !s.stalled {
			f, size, err := parseFrame(s.buf[s.off:])
			if err != nil || size == 0 {
				return err
			}
			raw := s.buf[s.off : s.off+size]
			s.off += size
			if frameRead != nil {
				frameRead(f.kind)
			}
			s.unit = append(s.unit, pendingFrame{raw, f})
			if f.kind == frameMore {
				continue // applied with the frame that ends the unit
			}
		}
		applied, err := s.u.tryApplyUnit(s.ctx, s.unit)
		if !applied {
			s.stalled = true
			s.await()
			return nil
		}
		s.stalled = false
		kind := s.unit[len(s.unit)-1].f.kind
		clear(s.unit)
		s.unit = s.unit[:0]
		if frameDone != nil {
			frameDone(kind, err)
		}
		if err != nil {
			return err
		}
		if kind == frameHeartbeat {
			s.acks.ask()
		}
	}
}

// await starts a goroutine that waits for m.apply to be free and then
// kicks the loop, unless one already waits.
func (s *looped) await() {
	if !s.waiting.CompareAndSwap(false, true) {
		return
	}
	go func() {
		s.u.m.apply.Lock()
		s.u.m.apply.Unlock()
		s.waiting.Store(false)
		s.kick()
	}()
}

// end records the error that ended the stream and reports false.
func (s *looped) end(err error) bool {
	select {
	case s.fail <- err:
	default:
	}
	return false
}

// acker acknowledges the stream to the primary: the offset applied. An
// ack costs the primary a wakeup, a read and a wakeup of its waiters, so
// it goes when the primary needs it, not after every burst:
//   - when a heartbeat was applied since the last ack: the primary sends
//     one for WAIT (after the records it waits for) and when its stream
//     is idle;
//   - when the offset moved and ackQuiet has passed since the last ack,
//     so the primary's view (INFO, ROLE) is never far behind;
//   - when ackEvery has passed, moved or not, so the primary knows the
//     link lives (min-replicas-max-lag; Redis's replica acks every
//     second).
//
// The loop and the link's goroutine both ack, so it has a lock.
type acker struct {
	every, quiet time.Duration // ackEvery and ackQuiet, as New read them
	mu           sync.Mutex
	acked        int64 // the offset last acknowledged; -1 before the first
	last         time.Time
	asked        bool // a heartbeat was applied since the last ack
	// send writes an ack; false if the link had no room for it (it is
	// sent again next time).
	send func([]byte) (bool, error)
}

func (m *Manager) newAcker(send func([]byte) (bool, error)) *acker {
	return &acker{every: m.ackEvery, quiet: m.ackQuiet, acked: -1, send: send}
}

// ask records that a heartbeat was applied: the next ack goes at once.
func (a *acker) ask() {
	a.mu.Lock()
	a.asked = true
	a.mu.Unlock()
}

// ack acknowledges m's offset if an ack is due (see acker).
func (a *acker) ack(m *Manager) error {
	m.mu.Lock()
	off := m.offset
	m.mu.Unlock()
	a.mu.Lock()
	defer a.mu.Unlock()
	since := time.Since(a.last)
	if since < a.every && (off == a.acked || !a.asked && since < a.quiet) {
		return nil
	}
	sent, err := a.send(appendCommand(nil, "REPLCONF", "ACK", strconv.FormatInt(off, 10)))
	if sent {
		a.acked, a.last, a.asked = off, time.Now(), false
	}
	return err
}

// stale reports whether an ack may be due without a heartbeat: ackQuiet
// has passed since the last one.
func (a *acker) stale() bool {
	a.mu.Lock()
	defer a.mu.Unlock()
	return time.Since(a.last) >= a.quiet
}

package resp

import (
	"context"
	"crypto/tls"
	"errors"
	"io"
	"net"
	"sync"
	"time"

	"github.com/rlserver/rlserver/internal/ascii"
	"github.com/rlserver/rlserver/node"
)

// flushThreshold is the pending output at which a connection writes even
// though more pipelined commands are waiting.
const flushThreshold = 64 << 10

// Server accepts connections for a node.
type Server struct {
	node *node.Node
	// replOf, if set, gives an event loop, by index, a stand-in for the
	// node's replication pump (tests); nil for the node's own.
	replOf     func(loop int) replPump
	tls        *tls.Config
	goroutines bool // Options.GoroutinePerConn

	mu     sync.Mutex
	ln     net.Listener
	conns  map[net.Conn]struct{} // served by goroutines
	lconns map[*lconn]struct{}   // served by event loops
	loops  []*loop
	next   int // the loop the next connection goes to
	closed bool
	spare  bool // askSpareP(true), guarded by spare.mu
	// watches counts the descriptors watched on the loops (Watch), and
	// linger lowers GOMAXPROCS once nothing was served for spareLinger
	// (spareLocked); both guarded by mu.
	watches int
	linger  *time.Timer
	wg      sync.WaitGroup
}

// replPump is what an event loop asks of replication after its rounds:
// whether a write's changes wait for the pump, and to run it
// (node.Node.ReplicationPending and PumpReplication).
type replPump interface {
	ReplicationPending() bool
	PumpReplication() bool
}

// Options choose how a Server serves.
type Options struct {
	// TLS, if set, serves TLS (each connection on a goroutine of its own).
	TLS *tls.Config
	// GoroutinePerConn serves plain connections with a goroutine each
	// instead of event loops (which Linux has; other platforms always
	// use goroutines).
	GoroutinePerConn bool
}

// NewServer returns a server for n.
func NewServer(n *node.Node, o Options) *Server {
	return &Server{node: n, tls: o.TLS, goroutines: o.GoroutinePerConn, conns: make(map[net.Conn]struct{}), lconns: make(map[*lconn]struct{})}
}

// Serve accepts connections on ln until Close; it returns nil after Close.
func (s *Server) Serve(ln net.Listener) error {
	if s.tls != nil {
		ln = tls.NewListener(ln, s.tls)
	}
	s.mu.Lock()
	if s.closed {
		s.mu.Unlock()
		ln.Close()
		return nil
	}
	s.ln = ln
	loops := s.tls == nil && !s.goroutines && (s.loops != nil || s.startLoops())
	s.mu.Unlock()
	var delay time.Duration
	for {
		nc, err := ln.Accept()
		if err != nil {
			s.mu.Lock()
			closed := s.closed
			s.mu.Unlock()
			if closed || errors.Is(err, net.ErrClosed) {
				return nil
			}
			// Temporary errors (out of file descriptors): back off, go on.
			delay = min(max(2*delay, 5*time.Millisecond), time.Second)
			s.node.Logger().Warn("accept failed", "err", err, "retry_in", delay)
			time.Sleep(delay)
			continue
		}
		delay = 0
		if loops && s.adopt(nc) {
			continue
		}
		s.mu.Lock()
		if s.closed {
			s.mu.Unlock()
			nc.Close()
			continue
		}
		s.conns[nc] = struct{}{}
		s.wg.Add(1)
		s.mu.Unlock()
		go s.serveConn(nc)
	}
}

// Close stops accepting, closes every connection and waits for their
// goroutines to finish or ctx to end.
func (s *Server) Close(ctx context.Context) error {
	s.mu.Lock()
	s.closed = true
	s.spareLocked()
	if s.ln != nil {
		s.ln.Close()
	}
	for c := range s.conns {
		c.Close()
	}
	for lc := range s.lconns {
		lc.kill()
	}
	for _, l := range s.loops {
		l.stop.Store(true)
		l.wakeUp()
	}
	s.mu.Unlock()
	done := make(chan struct{})
	go func() { s.wg.Wait(); close(done) }()
	select {
	case <-done:
		return nil
	case <-ctx.Done():
		return ctx.Err()
	}
}

func (s *Server) serveConn(nc net.Conn) {
	defer s.wg.Done()
	var handoff func(net.Conn, []byte)
	var pending []byte
	defer func() {
		s.mu.Lock()
		delete(s.conns, nc)
		s.mu.Unlock()
		if handoff == nil {
			nc.Close()
			return
		}
		nc.SetDeadline(time.Time{})
		handoff(nc, pending)
	}()
	srv := s.node
	c, err := srv.NewClient(nc.RemoteAddr().String(), nc.LocalAddr().String(), func() { nc.Close() })
	if err != nil {
		nc.Write([]byte("-" + err.Error() + "\r\n"))
		return
	}
	defer srv.RemoveClient(c)
	handoff, pending = Serve(srv, c, rawIO(nc), func() {
		if t := srv.IdleTimeout(); t > 0 {
			nc.SetReadDeadline(time.Now().Add(t))
		}
	})
}

// Serve runs client c's command loop: read commands from rw, execute them,
// write the replies, until the input ends, a protocol error or a limit
// closes the connection, or a command (QUIT, CLIENT KILL) asks to close.
// beforeRead, if not nil, runs before each blocking read. If a command
// hands the connection over (a replica's PSYNC, node.Client.TakeHandoff),
// Serve writes the pending replies and returns the handoff with the bytes
// read but not parsed: the caller passes the connection on instead of
// closing it.
func Serve(srv *node.Node, c *node.Client, rw io.ReadWriter, beforeRead func()) (handoff func(net.Conn, []byte), pending []byte) {
	lim := srv.Limits()
	rd := NewReader(rw, lim.MaxArgs, lim.MaxArgLen)
	rd.BeforeRead = beforeRead
	rd.Unauthenticated = func() bool { return srv.Unauthenticated(c) }
	w := NewWriter(c.Proto)
	// Messages published by other connections are written at once, from
	// the publisher's goroutine; wmu keeps them and the replies whole.
	var wmu sync.Mutex
	// A writer of its own writes them, in order, so a subscriber that
	// does not read never blocks the publisher; past the queue's room it
	// is disconnected, as Redis disconnects a pub/sub client over its
	// output limit.
	var (
		qmu    sync.Mutex
		queue  []*node.Message
		qbytes int
		wake   = make(chan struct{}, 1)
		done   = make(chan struct{})
	)
	limit := lim.MaxOutput
	c.SetDeliver(func(m *node.Message) {
		qmu.Lock()
		queue = append(queue, m)
		qbytes += m.Size()
		over := qbytes > limit
		qmu.Unlock()
		if over {
			if c.Close != nil {
				c.Close()
			}
			return
		}
		select {
		case wake <- struct{}{}:
		default:
		}
	})
	go func() {
		mw := NewWriter(c.Proto)
		for {
			select {
			case <-done:
				return
			case <-wake:
			}
			qmu.Lock()
			ms := queue
			queue, qbytes = nil, 0
			qmu.Unlock()
			mw.Reset()
			for _, m := range ms {
				m.WriteTo(mw)
			}
			wmu.Lock()
			_, err := rw.Write(mw.Bytes())
			wmu.Unlock()
			if err != nil {
				return
			}
		}
	}()
	defer close(done)
	flushLocked := func() bool { // wmu held
		if len(w.Bytes()) == 0 {
			return true
		}
		srv.CountTraffic(c, rd.TakeCount(), 0) // before the replies go, as the loops count
		n, err := rw.Write(w.Bytes())
		srv.CountTraffic(c, 0, n)
		w.Reset()
		return err == nil
	}
	// held: the connection holds wmu from a SUBSCRIBE or PSUBSCRIBE to
	// the end of its batch, so the message writer, waiting on wmu, sends
	// what the new subscriptions bring after the batch's replies, as
	// Redis (and the event loops) order them.
	held := false
	defer func() {
		if held {
			wmu.Unlock()
		}
	}()
	flush := func() bool {
		if held {
			return flushLocked()
		}
		wmu.Lock()
		defer wmu.Unlock()
		return flushLocked()
	}
	release := func() {
		if held {
			held = false
			wmu.Unlock()
		}
	}
	for {
		waited := rd.Buffered() == 0 // Next may block for input: time the batch from its arrival
		args, err := rd.Next()
		if waited {
			c.Mark()
		}
		if err != nil {
			var pe ProtocolError
			if errors.As(err, &pe) {
				w.Error(string(pe))
				srv.Logger().Debug("protocol error, closing connection", "addr", c.Addr, "err", string(pe))
			} else if !errors.Is(err, io.EOF) && !errors.Is(err, net.ErrClosed) {
				srv.Logger().Debug("connection read failed", "addr", c.Addr, "err", err)
			}
			flush()
			return nil, nil
		}
		if !held && subscribes(args[0]) {
			wmu.Lock() // before the subscription exists
			held = true
		}
		srv.Exec(c, args, w)
		if h := c.TakeHandoff(); h != nil {
			if !flush() {
				return nil, nil
			}
			return h, rd.Unparsed()
		}
		for p := c.TakePark(); p != nil; p = c.TakePark() { // this connection's goroutine waits, again if held again
			if !flush() {
				return nil, nil
			}
			release()
			p(nil)(w) // only this goroutine waits; it ends with its timeout, the acks or the hold's end
		}
		if len(w.Bytes()) > lim.MaxOutput {
			srv.Logger().Warn("client output limit reached, closing connection", "addr", c.Addr, "bytes", len(w.Bytes()), "limit", lim.MaxOutput)
			w.Reset()
			w.Error("ERR output buffer limit reached")
			flush()
			return nil, nil
		}
		if c.CloseAfterReply() {
			flush()
			return nil, nil
		}
		if rd.Buffered() == 0 || len(w.Bytes()) >= flushThreshold {
			if !flush() {
				return nil, nil
			}
			if rd.Buffered() == 0 {
				release() // the batch's replies are out
			}
		}
	}
}

// subscribes reports whether a command name is SUBSCRIBE or PSUBSCRIBE,
// whose confirmation must reach the client before the messages it
// subscribed to.
func subscribes(name []byte) bool {
	return ascii.EqualFold(name, "subscribe") || ascii.EqualFold(name, "psubscribe")
}

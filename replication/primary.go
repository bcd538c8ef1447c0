package replication

import (
	"bufio"
	"bytes"
	"errors"
	"fmt"
	"io"
	"net"
	"slices"
	"strconv"
	"syscall"
	"time"

	"github.com/rlserver/rlserver/engine"
	"github.com/rlserver/rlserver/internal/ascii"
)

// A link is a replica's connection to this node, after its PSYNC: this
// node writes the stream to it and reads its REPLCONF ACKs.
type link struct {
	m    *Manager
	conn net.Conn
	ip   string // the replica's address as it announced it, or its socket's
	port int    // the port it listens on (REPLCONF listening-port)
	// Guarded by m.mu:
	// out holds the stream bytes not yet written to the replica, and
	// spare the buffer written last, reused. A replica that lets out grow
	// past replicaOutputLimit is dropped (it resyncs when it returns).
	out, spare []byte
	// writing: the link's goroutine is writing (its sync, or bytes it
	// took from out), so nobody else may write to conn now: the bytes
	// would pass the ones it writes. True from the link's start.
	writing bool
	taken   int       // how many times the goroutine took bytes from out
	wakes   int       // how many times the goroutine woke from waiting for out
	ack     int64     // the offset it acknowledged
	ackAt   time.Time // when it last did
	online  bool      // past its full sync: it acknowledged once, or continued
	closed  bool
	// raw writes without waiting (sendLocked); nil if conn has no
	// descriptor, when only the link's goroutine writes.
	raw syscall.RawConn
}

// Replica describes an online replica (ROLE).
type Replica struct {
	IP     string
	Port   int
	Offset int64 // what it acknowledged
}

// Sync is a replica's PSYNC as the handshake left it.
type Sync struct {
	ReplID string // "?" for none
	Offset int64  // the first offset it lacks, -1 with ReplID "?"
	Port   int    // REPLCONF listening-port, 0 if not sent
	IP     string // REPLCONF ip-address, "" if not sent
}

// errNoMasterLink is Redis's answer to a PSYNC on a replica not in sync.
var errNoMasterLink = errors.New("NOMASTERLINK Can't SYNC while not connected with my master")

// errFailingOver is Redis's answer to a PSYNC while a FAILOVER runs.
var errFailingOver = errors.New("NOMASTERLINK Can't SYNC while failing over")

// Serve makes conn, whose PSYNC the dispatcher has read, a replica link:
// it answers +FULLRESYNC (then the full sync) or +CONTINUE, and streams
// until the link closes. pending holds the bytes already read from conn
// after the PSYNC. It returns at once; the link has goroutines of its own.
func (m *Manager) Serve(conn net.Conn, pending []byte, s Sync) {
	l := &link{m: m, conn: conn, ip: s.IP, port: s.Port, writing: true}
	if sc, ok := conn.(syscall.Conn); ok {
		l.raw, _ = sc.SyscallConn()
	}
	if l.ip == "" {
		l.ip = hostOf(conn.RemoteAddr())
	}
	go l.run(s, pending)
}

// run is the link's writer: the sync, then the stream.
func (l *link) run(s Sync, pending []byte) {
	m := l.m
	defer l.close()
	head, snap, err := m.attach(l, s)
	if err != nil {
		fmt.Fprintf(l.conn, "-%s\r\n", err)
		return
	}
	go l.readAcks(pending)
	first := net.Buffers{[]byte(head), snap} // one writev, no copy of the sync
	if _, err := first.WriteTo(l.conn); err != nil {
		return
	}
	for {
		m.mu.Lock()
		l.writing = false
		for !l.closed && len(l.out) == 0 {
			m.cond.Wait()
			l.wakes++
		}
		if l.closed {
			m.mu.Unlock()
			return
		}
		buf := l.out
		l.out = l.spare[:0]
		l.writing = true
		l.taken++
		m.mu.Unlock()
		if _, err := l.conn.Write(buf); err != nil {
			return
		}
		m.mu.Lock()
		if cap(buf) <= 4<<20 { // a burst's large buffer is let go
			l.spare = buf[:0]
		} else {
			l.spare = nil
		}
		m.mu.Unlock()
	}
}

// replicaOutputLimit is how many stream bytes may wait for one replica
// before its link is dropped: Redis's client-output-buffer-limit for
// replicas (256mb hard). A variable for tests.
var replicaOutputLimit = 256 << 20

// queueLocked adds stream bytes to every link's output, dropping the
// links that are too far behind. m.mu must be held.
func (m *Manager) queueLocked(p []byte) {
	// From the last: closeLocked removes a link from m.links, which
	// moves only the links after it, already served.
	for i := len(m.links) - 1; i >= 0; i-- {
		l := m.links[i]
		l.out = append(l.out, p...)
		if len(l.out) > replicaOutputLimit {
			m.log.Warn("replica too far behind, dropping its link", "addr", l.conn.RemoteAddr(), "pending_bytes", len(l.out))
			l.closeLocked()
		}
	}
}

// sendLocked writes each link's waiting bytes from the caller's
// goroutine, as far as its socket takes them without waiting, where the
// link's goroutine is not writing: a pump (an event loop's, or the
// pump's goroutine's) then wakes no other goroutine. It reports whether
// bytes are left for a link's goroutine to write (its socket was full,
// or the link cannot be written to here): the caller must then wake it.
// m.mu must be held.
func (m *Manager) sendLocked() (left bool) {
	for _, l := range m.links {
		if len(l.out) == 0 || l.writing {
			continue // a writing goroutine takes out when it is done
		}
		n := l.writeNow(l.out)
		if n == len(l.out) {
			l.out = l.out[:0]
			continue
		}
		l.out = l.out[:copy(l.out, l.out[n:])]
		left = true
	}
	return left
}

// writeNow writes what the socket takes of p now, and returns how much.
// An error writes nothing: the link's goroutine meets it again and closes
// the link.
func (l *link) writeNow(p []byte) int {
	if l.raw == nil {
		return 0
	}
	n := 0
	l.raw.Write(func(fd uintptr) bool {
		if k, err := syscall.Write(int(fd), p); err == nil {
			n = k
		}
		return true // never wait for the socket: the link's goroutine does
	})
	return n
}

// attach decides the replica's sync and registers the link: the reply
// line, and for a full sync the snapshot frames. The snapshot is taken
// under m.serial and m.apply, so neither the pump nor a primary's frame
// moves the offset meanwhile: the changes so far are pumped first, and
// a key written while the snapshot is read is in the stream after the
// offset it names (perhaps in the snapshot too: records are absolute,
// applying one twice is harmless).
func (m *Manager) attach(l *link, s Sync) (head string, snap []byte, err error) {
	m.apply.Lock()
	defer m.apply.Unlock()
	m.serial.Lock()
	defer m.serial.Unlock()
	m.mu.Lock()
	if m.up != nil && !m.up.synced() {
		m.mu.Unlock()
		return "", nil, errNoMasterLink
	}
	if m.fo != nil { // as Redis: no new replica while a failover chooses one
		m.mu.Unlock()
		return "", nil, errFailingOver
	}
	partial := m.bl != nil && s.ReplID != "?" &&
		(s.ReplID == m.replid || (s.ReplID == m.replid2 && s.Offset <= m.second)) &&
		m.bl.covers(s.Offset)
	if partial {
		m.syncPartialOK.Add(1)
		l.out = make([]byte, m.bl.end-s.Offset+1)
		l.out = l.out[:m.bl.read(l.out, s.Offset)]
		l.online, l.ack, l.ackAt = true, s.Offset-1, time.Now()
		m.addLinkLocked(l)
		m.log.Info("replica continues", "addr", l.conn.RemoteAddr(), "offset", s.Offset)
		m.mu.Unlock()
		return "+CONTINUE " + m.replid + "\r\n", nil, nil
	}
	if s.ReplID != "?" {
		m.syncPartialErr.Add(1)
	}
	m.syncFull.Add(1)
	primary := m.up == nil
	m.ensureBacklogLocked()
	m.mu.Unlock()
	if primary {
		m.feed.Mute(false)
		m.pump(false) // the changes so far go to the stream of the replicas already linked
	}
	var fw frameWriter
	fw.start = -1
	// The sync's bytes in one allocation, sized from the engine's
	// records (a record travels in about its size there, slack included,
	// plus its entry's framing). Grown by append, they would be copied
	// several times into fresh pages, whose faults cost most of the build,
	// with the pump held.
	st := m.e.Store()
	fw.buf = make([]byte, 0, st.Memory().Records+16*int64(st.Len())+64)
	now := max(m.clk.Now(), m.e.TokenHigh()) // as pump's
	fw.frame(frameSyncStart, now)
	keys := 0
	m.e.Dump(now, func(r engine.Record) {
		fw.record(r, now)
		keys++
	})
	fw.close()
	fw.frame(frameSyncEnd, now)
	m.mu.Lock()
	defer m.mu.Unlock()
	m.addLinkLocked(l)
	m.log.Info("replica full sync", "addr", l.conn.RemoteAddr(), "keys", keys, "bytes", len(fw.buf), "offset", m.offset)
	return "+FULLRESYNC " + m.replid + " " + strconv.FormatInt(m.offset, 10) + "\r\n", fw.buf, nil
}

// readAcks reads the replica's REPLCONF ACKs until the link closes.
func (l *link) readAcks(pending []byte) {
	defer l.close()
	br := bufio.NewReader(io.MultiReader(bytes.NewReader(pending), l.conn))
	for {
		args, err := readCommand(br)
		if err != nil {
			return
		}
		if len(args) == 3 && ascii.EqualFold(args[0], "replconf") && ascii.EqualFold(args[1], "ack") {
			off, err := strconv.ParseInt(args[2], 10, 64)
			if err != nil {
				continue
			}
			l.m.mu.Lock()
			l.ack = max(l.ack, off)
			l.ackAt = time.Now()
			l.online = true // a full sync is installed once acknowledged (Redis 7 too)
			if l.m.ackWaiters > 0 {
				l.m.cond.Broadcast() // only WAIT waits for an ack: links and Position do not
			}
			l.m.mu.Unlock()
		}
	}
}

// close closes the link and forgets it.
func (l *link) close() {
	l.m.mu.Lock()
	l.closeLocked()
	l.m.mu.Unlock()
}

func (l *link) closeLocked() {
	if l.closed {
		return
	}
	l.closed = true
	l.out, l.spare = nil, nil
	l.conn.Close()
	m := l.m
	m.log.Info("replica link down", "addr", l.conn.RemoteAddr())
	m.links = slices.DeleteFunc(m.links, func(o *link) bool { return o == l })
	m.linked.Store(len(m.links) > 0)
	m.cond.Broadcast()
}

// addLinkLocked lists a link, after the others: INFO's slave0, slave1, ...
// are in the order replicas attached.
func (m *Manager) addLinkLocked(l *link) {
	m.links = append(m.links, l)
	m.linked.Store(true)
	select {
	case m.kick <- struct{}{}: // the tick may be idleEvery away: heartbeats start now
	default:
	}
}

// countLocked counts the links for which f holds. m.mu must be held.
func (m *Manager) countLocked(f func(*link) bool) int {
	k := 0
	for _, l := range m.links {
		if f(l) {
			k++
		}
	}
	return k
}

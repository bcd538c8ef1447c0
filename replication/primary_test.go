package replication

import (
	"bufio"
	"fmt"
	"io"
	"net"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/rlserver/rlserver/clock"
	"github.com/rlserver/rlserver/engine"
	"github.com/stretchr/testify/require"
)

// TestReplicaTooFarBehindIsDropped: a replica that stops reading is
// dropped once more than replicaOutputLimit bytes wait for it, and the
// replica attached after it still gets every change, before the drop and
// after. The stalled replica is attached first, so a drop that moved the
// other link while the links were being served would skip its share.
// The pump runs on its goroutine, or as an event loop runs it (PumpNow):
// the loop writes what each socket takes and leaves the rest, the
// stalled replica's most of all, to the links' goroutines.
func TestReplicaTooFarBehindIsDropped(t *testing.T) {
	for _, onLoop := range []bool{false, true} {
		t.Run(fmt.Sprintf("onLoop=%v", onLoop), func(t *testing.T) { testTooFarBehind(t, onLoop) })
	}
}

func testTooFarBehind(t *testing.T, onLoop bool) {
	was := replicaOutputLimit
	replicaOutputLimit = 64 << 10
	t.Cleanup(func() { replicaOutputLimit = was })
	e := engine.New(4)
	m := running(t, New(Options{Engine: e, Clock: clock.NewTimeline(clock.NewManual(t0), 0)}))
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	require.NoError(t, err)
	t.Cleanup(func() { ln.Close() })

	links := func() int {
		m.mu.Lock()
		defer m.mu.Unlock()
		return len(m.links)
	}
	stalled, stalledBr := attachReplica(t, m, ln, true)
	_, br := attachReplica(t, m, ln, false)
	require.Equal(t, 2, links())

	// The reading replica collects the keys its records frames carry.
	seen := make(chan string, 1<<16)
	go func() {
		defer close(seen)
		for {
			_, f, err := readFrame(br)
			if err != nil {
				return
			}
			if f.kind == frameRecords {
				_ = f.records(func(r engine.Record) error { seen <- r.Key; return nil })
			}
		}
	}()
	// Each round writes 500 keys and pumps them, some 20 KB of stream,
	// and waits until the reading replica has them all: only the stalled
	// one falls behind.
	const rounds, perRound = 20, 500
	round := func(r int) {
		t.Helper()
		want := map[string]bool{}
		for i := range perRound {
			key := fmt.Sprintf("r%d:k%d", r, i)
			want[key] = true
			_, err := e.Store().Limit(engine.KindFixed, []byte(key),
				engine.Params{Limit: 10, Window: int64(time.Minute), Cost: 1}, t0)
			require.NoError(t, err)
		}
		if onLoop {
			m.ChangedOnLoop()
			require.True(t, m.PumpNow(), "the loop pumps")
		} else {
			m.serial.Lock()
			m.pump(false)
			m.serial.Unlock()
		}
		deadline := time.After(10 * time.Second)
		for len(want) > 0 {
			select {
			case k, ok := <-seen:
				require.True(t, ok, "round %d: the reading replica's link closed with %d keys not seen", r, len(want))
				delete(want, k)
			case <-deadline:
				t.Fatalf("round %d: the reading replica never saw %d keys", r, len(want))
			}
		}
	}
	r := 0
	for ; links() == 2; r++ {
		require.Less(t, r, rounds, "the replica that stopped reading is still attached after %d bytes", rounds*perRound*40)
		round(r)
	}
	round(r) // after the drop

	// The stalled replica's link was closed: what it was sent ends.
	require.NoError(t, stalled.SetReadDeadline(time.Now().Add(10*time.Second)))
	_, err = io.Copy(io.Discard, stalledBr)
	require.NoError(t, err, "the dropped replica's link ends (EOF), rather than stalling")
	require.Equal(t, 1, links(), "the reading replica stays attached")
}

// TestPumpNowWritesOnTheLoop: a write on an event loop leaves its pump
// to the loop (ChangedOnLoop), which writes the stream to a replica
// whose socket takes it (PumpNow): the link's goroutine is not woken to
// write it, so the round wakes no thread. The replica gets the change;
// with BatchInterval set, the loop leaves it to the pump's goroutine.
func TestPumpNowWritesOnTheLoop(t *testing.T) {
	e, m, _, br := syncedLink(t)
	taken := func() (n int) {
		withLink(m, func(l *link) { n = l.taken })
		return n
	}
	before := taken()
	write := func(key string) {
		t.Helper()
		_, err := e.Store().Limit(engine.KindFixed, []byte(key), engine.Params{Limit: 10, Window: int64(time.Minute), Cost: 1}, t0)
		require.NoError(t, err)
		m.ChangedOnLoop()
	}
	write("k1")
	require.True(t, m.Pending(), "the write waits for the loop's pump")
	require.True(t, m.PumpNow())
	require.False(t, m.Pending())
	require.Equal(t, "k1", nextRecord(t, br))
	require.Equal(t, before, taken(), "the loop wrote the stream: the link's goroutine took nothing")
	require.False(t, m.PumpNow(), "nothing waits: nothing pumped")

	m.SetBatchInterval(time.Hour)
	write("k2")
	require.False(t, m.PumpNow(), "held for the interval: the pump's goroutine has it")
}

// TestIdleLinkSleeps: what an idle primary sends its replica, a
// heartbeat from the pump's tick or a change no loop pumped, the pump's
// goroutine writes itself; the link's goroutine neither takes it nor
// wakes for it, nor for the replica's acks (only WAIT waits for those).
// Each wake-up is a thread's, on an idle node (bench/idle.sh).
func TestIdleLinkSleeps(t *testing.T) {
	e, m, replica, br := syncedLink(t)
	link := func() (taken, wakes int, ack int64) {
		withLink(m, func(l *link) { taken, wakes, ack = l.taken, l.wakes, l.ack })
		return taken, wakes, ack
	}
	taken, wakes, _ := link()

	for range 2 { // heartbeats, every pumpEvery
		for {
			_, f, err := readFrame(br)
			require.NoError(t, err)
			if f.kind == frameHeartbeat {
				break
			}
		}
	}
	_, err := e.Store().Limit(engine.KindFixed, []byte("k1"), engine.Params{Limit: 10, Window: int64(time.Minute), Cost: 1}, t0)
	require.NoError(t, err)
	m.Changed() // a write no loop pumps: the pump's goroutine does
	require.Equal(t, "k1", nextRecord(t, br))

	const last = 1 << 40
	for off := int64(1); off <= 20; off++ {
		if off == 20 {
			off = last
		}
		o := strconv.FormatInt(off, 10)
		_, err := fmt.Fprintf(replica, "*3\r\n$8\r\nREPLCONF\r\n$3\r\nACK\r\n$%d\r\n%s\r\n", len(o), o)
		require.NoError(t, err)
	}
	require.Eventually(t, func() bool { _, _, ack := link(); return ack == last }, 10*time.Second, time.Millisecond, "every ack read")

	gotTaken, gotWakes, _ := link()
	require.Equal(t, taken, gotTaken, "the pump's goroutine wrote the heartbeats and the change")
	require.Equal(t, wakes, gotWakes, "the link's goroutine slept through heartbeats, the change and 20 acks")
}

// syncedLink attaches a replica to a running primary over loopback and
// waits until the link's goroutine has written the full sync and waits.
// It returns the primary's engine, the primary, and the replica's end.
func syncedLink(t *testing.T) (*engine.Engine, *Manager, net.Conn, *bufio.Reader) {
	t.Helper()
	e := engine.New(4)
	m := running(t, New(Options{Engine: e, Clock: clock.NewTimeline(clock.NewManual(t0), 0)}))
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	require.NoError(t, err)
	t.Cleanup(func() { ln.Close() })
	replica, br := attachReplica(t, m, ln, false)
	require.Eventually(t, func() (done bool) {
		withLink(m, func(l *link) { done = !l.writing })
		return done
	}, 10*time.Second, time.Millisecond, "the link's goroutine has written the sync")
	return e, m, replica, br
}

// withLink runs f on m's first link under m.mu.
func withLink(m *Manager, f func(*link)) {
	m.mu.Lock()
	defer m.mu.Unlock()
	f(m.links[0])
}

// nextRecord returns the key of the next record the replica reads,
// skipping heartbeats.
func nextRecord(t *testing.T, br *bufio.Reader) string {
	t.Helper()
	for {
		_, f, err := readFrame(br)
		require.NoError(t, err)
		if f.kind != frameRecords {
			continue
		}
		var keys []string
		require.NoError(t, f.records(func(r engine.Record) error { keys = append(keys, r.Key); return nil }))
		require.Len(t, keys, 1)
		return keys[0]
	}
}

// attachReplica connects a replica to m through ln and reads its full
// sync: the reply line, then the frames up to the sync's end. With small
// socket buffers, a replica that stops reading fills them soon.
func attachReplica(t *testing.T, m *Manager, ln net.Listener, small bool) (net.Conn, *bufio.Reader) {
	t.Helper()
	replica, err := net.Dial("tcp", ln.Addr().String())
	require.NoError(t, err)
	t.Cleanup(func() { replica.Close() })
	conn, err := ln.Accept()
	require.NoError(t, err)
	if small {
		require.NoError(t, replica.(*net.TCPConn).SetReadBuffer(4096))
		require.NoError(t, conn.(*net.TCPConn).SetWriteBuffer(4096))
	}
	m.Serve(conn, nil, Sync{ReplID: "?", Offset: -1})
	br := bufio.NewReader(replica)
	line, err := br.ReadString('\n')
	require.NoError(t, err)
	require.True(t, strings.HasPrefix(line, "+FULLRESYNC "), line)
	for {
		_, f, err := readFrame(br)
		require.NoError(t, err)
		if f.kind == frameSyncEnd {
			return replica, br
		}
	}
}

// TestHostOf: a link's address as ROLE and INFO show it, from its
// connection's remote address. A replica that hung up right after its
// PSYNC leaves a connection without one, which crashed the primary.
func TestHostOf(t *testing.T) {
	for _, c := range []struct {
		addr net.Addr
		want string
	}{
		{&net.TCPAddr{IP: net.IPv4(127, 0, 0, 1), Port: 6380}, "127.0.0.1"},
		{&net.TCPAddr{IP: net.ParseIP("::1"), Port: 6380}, "::1"},
		{&net.UnixAddr{Name: "/tmp/r.sock", Net: "unix"}, "/tmp/r.sock"},
		{nil, ""},
	} {
		require.Equal(t, c.want, hostOf(c.addr), "%v", c.addr)
	}
	m := running(t, New(Options{Engine: engine.New(4), Clock: clock.NewTimeline(clock.NewManual(t0), 0)}))
	conn, replica := net.Pipe()
	defer replica.Close()
	m.Serve(peerless{conn}, nil, Sync{ReplID: "?", Offset: -1})
	line, err := bufio.NewReader(replica).ReadString('\n')
	require.NoError(t, err)
	require.True(t, strings.HasPrefix(line, "+FULLRESYNC "), line)
}

// peerless is a connection without a remote address.
type peerless struct{ net.Conn }

func (peerless) RemoteAddr() net.Addr { return nil }

// TestTickEvery: Run's tick wakes an idle node only where it has work.
// A primary that never had a replica, and a replica without its own,
// tick every idleEvery; a link that attaches kicks the tick at once
// (TestIdleLinkSleeps reads heartbeats every pumpEvery after it).
func TestTickEvery(t *testing.T) {
	for _, c := range []struct {
		name  string
		o     Options
		setup func(m *Manager)
		want  time.Duration
	}{
		{"a primary alone", Options{}, func(*Manager) {}, idleEvery},
		{"a replica without replicas", Options{}, func(m *Manager) { m.up = &upstream{}; m.ensureBacklogLocked() }, idleEvery},
		{"min-replicas-to-write counts good replicas", Options{MinReplicas: 1}, func(*Manager) {}, goodEvery},
		{"a primary's backlog takes the changes", Options{}, func(m *Manager) { m.ensureBacklogLocked() }, goodEvery},
		{"a replica attached: heartbeats", Options{}, func(m *Manager) { m.linked.Store(true) }, pumpEvery},
	} {
		c.o.Engine = engine.New(4)
		c.o.Clock = clock.NewTimeline(clock.NewManual(t0), 0)
		m := New(c.o)
		m.mu.Lock()
		c.setup(m)
		m.mu.Unlock()
		require.Equal(t, c.want, m.tickEvery(), c.name)
	}
}

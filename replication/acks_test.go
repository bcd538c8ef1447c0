package replication

import (
	"bufio"
	"fmt"
	"net"
	"strconv"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/rlserver/rlserver/clock"
	"github.com/rlserver/rlserver/engine"
	"github.com/stretchr/testify/require"
)

// TestReplicaAcksWhenAsked: a replica acknowledges its stream when a
// heartbeat asks, not after every burst of records. With ackEvery and
// ackQuiet an hour, thirty records frames, each applied before the next
// is sent, bring no ack; the heartbeat after them brings one, of the
// offset past it. Before, the replica acked every burst: the first ack
// after the sync's was the first records frame's offset.
func TestReplicaAcksWhenAsked(t *testing.T) {
	for _, mode := range linkModes {
		t.Run(mode.name, func(t *testing.T) { replicaAcksWhenAsked(t, mode) })
	}
}

func replicaAcksWhenAsked(t *testing.T, mode linkMode) {
	wasEvery, wasQuiet := ackEvery, ackQuiet
	ackEvery, ackQuiet = time.Hour, time.Hour // only a heartbeat asks (read by New)
	clk := clock.NewTimeline(clock.NewManual(t0), 0)
	var looped atomic.Bool
	o := Options{Engine: engine.New(4), Clock: clk}
	if mode.watch != nil {
		o.Watch = mode.watch(&looped)
	}
	applied := make(chan byte, 64)
	frameDone = func(kind byte, err error) {
		if err == nil {
			applied <- kind
		}
	}
	t.Cleanup(func() { frameDone = nil }) // after the Manager's stop (cleanups run last first)
	m := running(t, New(o))
	ackEvery, ackQuiet = wasEvery, wasQuiet

	port, accept := scriptedPrimary(t)
	require.False(t, m.ReplicaOf("127.0.0.1", port))
	conn := accept()
	acks := make(chan int64, 64)
	go func() {
		defer close(acks)
		br := bufio.NewReader(conn)
		for {
			args, err := readCommand(br)
			if err != nil {
				return
			}
			if len(args) == 3 && strings.EqualFold(args[1], "ack") {
				off, err := strconv.ParseInt(args[2], 10, 64)
				if err == nil {
					acks <- off
				}
			}
		}
	}()
	nextAck := func(what string) int64 {
		t.Helper()
		select {
		case off, ok := <-acks:
			require.True(t, ok, "the link closed before %s", what)
			return off
		case <-time.After(10 * time.Second):
			t.Fatalf("no ack for %s", what)
			return 0
		}
	}

	fw := frameWriter{start: -1}
	fw.frame(frameSyncStart, t0)
	fw.frame(frameSyncEnd, t0)
	_, err := conn.Write(fw.buf)
	require.NoError(t, err)
	require.Equal(t, int64(0), nextAck("the full sync"), "the ack that puts the replica online")

	var offset int64
	send := func(fw frameWriter) {
		t.Helper()
		_, err := conn.Write(fw.buf)
		require.NoError(t, err)
		offset += int64(len(fw.buf))
	}
	applies := func(kind byte, what string) {
		t.Helper()
		select {
		case k := <-applied:
			require.Equal(t, kind, k, what)
		case <-time.After(10 * time.Second):
			t.Fatalf("%s never applied", what)
		}
	}
	for i := range 30 {
		fw := frameWriter{start: -1}
		fw.record(fixedRecord(t, fmt.Sprint("k", i), t0), t0)
		fw.close()
		send(fw)
		applies(frameRecords, fmt.Sprint("records frame ", i))
	}
	fw = frameWriter{start: -1}
	fw.frame(frameHeartbeat, t0)
	send(fw)
	require.Equal(t, offset, nextAck("the heartbeat"), "the first ack after the records is the heartbeat's")
	// The heartbeat was applied before its ack went; this also orders the
	// replica's last read of frameDone before the cleanup's write.
	applies(frameHeartbeat, "the heartbeat")
	require.Equal(t, mode.watch != nil, looped.Load(), "the stream was read the way the mode says")
}

// TestWaitSendsAHeartbeatAfterItsRecords: WAIT pumps the changes not sent
// yet and a heartbeat after them, which replicas ack at once; an ack of
// it covers the changes. Before, WAIT sent a heartbeat only when it had
// no changes to send, and its replicas acked the records only on their
// own time.
func TestWaitSendsAHeartbeatAfterItsRecords(t *testing.T) {
	e := engine.New(4)
	m := running(t, New(Options{Engine: e, Clock: clock.NewTimeline(clock.NewManual(t0), 0)}))
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	require.NoError(t, err)
	t.Cleanup(func() { ln.Close() })
	replica, _ := attachReplica(t, m, ln, false)
	_, err = replica.Write(appendCommand(nil, "REPLCONF", "ACK", "0"))
	require.NoError(t, err)
	require.Eventually(t, func() bool { n, _ := m.Wait(1, 0, false, false); return n == 1 },
		10*time.Second, time.Millisecond, "the replica is online")

	m.serial.Lock() // no pump between the offset read and the write
	m.mu.Lock()
	before := m.offset
	m.mu.Unlock()
	_, err = e.Store().Limit(engine.KindFixed, []byte("k"), engine.Params{Limit: 10, Window: int64(time.Minute), Cost: 1}, t0)
	m.serial.Unlock()
	require.NoError(t, err)
	now, later := m.Wait(1, 0, true, true)
	require.Equal(t, 0, now, "the replica has not acked the write yet")
	require.NotNil(t, later)

	m.mu.Lock()
	stream := make([]byte, m.offset-before)
	stream = stream[:m.bl.read(stream, before+1)]
	m.mu.Unlock()
	var kinds []byte
	for len(stream) > 0 {
		f, n, err := parseFrame(stream)
		require.NoError(t, err)
		require.NotZero(t, n, "a frame cut short")
		kinds = append(kinds, f.kind)
		stream = stream[n:]
	}
	// The pump's tick may send the records first, and on a slow machine
	// an idle heartbeat may come between: records, then heartbeats only.
	require.Greater(t, len(kinds), 1, "what was sent: %q", kinds)
	require.Equal(t, byte(frameRecords), kinds[0], "what was sent: %q", kinds)
	for _, k := range kinds[1:] {
		require.Equal(t, byte(frameHeartbeat), k, "what was sent: %q", kinds)
	}
}

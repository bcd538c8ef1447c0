package replication

import (
	"bufio"
	"context"
	"encoding/binary"
	"errors"
	"fmt"
	"hash/crc32"
	"log/slog"
	"net"
	"slices"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/rlserver/rlserver/clock"
	"github.com/rlserver/rlserver/engine"
	"github.com/rlserver/rlserver/internal/rltest"
	"github.com/rlserver/rlserver/persist"
	"github.com/stretchr/testify/require"
)

// t0 is the scripted primary's clock at the full sync, Unix ns.
const t0 = int64(1_700_000_000_000_000_000)

// scriptedPrimary accepts one replica on loopback, answers its handshake
// as a primary does (PING, AUTH, REPLCONF, then +FULLRESYNC to PSYNC),
// and returns the connection, positioned where the frames go.
func scriptedPrimary(t *testing.T) (port int, accept func() net.Conn) {
	t.Helper()
	port, acceptPsync := scriptedPrimaryPsync(t)
	return port, func() net.Conn {
		t.Helper()
		conn, _ := acceptPsync()
		return conn
	}
}

// scriptedPrimaryPsync is scriptedPrimary whose accept also returns the
// replica's PSYNC command, its arguments as sent.
func scriptedPrimaryPsync(t *testing.T) (port int, accept func() (net.Conn, []string)) {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	require.NoError(t, err)
	t.Cleanup(func() { ln.Close() })
	return ln.Addr().(*net.TCPAddr).Port, func() (net.Conn, []string) {
		t.Helper()
		ln.(*net.TCPListener).SetDeadline(time.Now().Add(10 * time.Second))
		conn, err := ln.Accept()
		require.NoError(t, err)
		t.Cleanup(func() { conn.Close() })
		br := bufio.NewReader(conn)
		for {
			args, err := readCommand(br)
			require.NoError(t, err)
			switch strings.ToUpper(args[0]) {
			case "PING":
				conn.Write([]byte("+PONG\r\n"))
			case "PSYNC":
				conn.Write([]byte("+FULLRESYNC " + strings.Repeat("ab", 20) + " 0\r\n"))
				return conn, args
			default:
				conn.Write([]byte("+OK\r\n"))
			}
		}
	}
}

// running runs m until the test ends, and returns it.
func running(t *testing.T, m *Manager) *Manager {
	t.Helper()
	ctx, cancel := context.WithCancel(context.Background())
	ran := make(chan struct{})
	go func() { m.Run(ctx); close(ran) }()
	t.Cleanup(func() { cancel(); <-ran })
	return m
}

// linkMode is a way for a replica to read its stream (linkModes): watch
// makes Options.Watch, which sets used when a loop takes the link; nil
// leaves the link's goroutine to read it.
type linkMode struct {
	name  string
	watch func(used *atomic.Bool) func(fd int, ready func() bool) (stop, kick func(), ok bool)
}

// fixedRecord is the record RL.FIXED key 10 1m leaves after one
// admission at now, decided by an engine of its own.
func fixedRecord(t *testing.T, key string, now int64) engine.Record {
	t.Helper()
	e := engine.New(1)
	_, err := e.Store().Limit(engine.KindFixed, []byte(key), engine.Params{Limit: 10, Window: int64(time.Minute), Cost: 1}, now)
	require.NoError(t, err)
	var rec engine.Record
	e.Dump(now, func(r engine.Record) { rec = r })
	require.Equal(t, key, rec.Key)
	return rec
}

// records is what e holds at now, by key.
func records(e *engine.Engine, now int64) map[string]engine.Record {
	m := map[string]engine.Record{}
	e.Dump(now, func(r engine.Record) { m[r.Key] = r })
	return m
}

// TestStoppedLinkAppliesNothing reproduces the promotion race without
// sleeping: the replica's link has read a frame from its primary and is
// held (a hook) before applying it; the primary goes, and the replica is
// promoted (REPLICAOF NO ONE) or switched to another primary (REPLICAOF
// host port); the promoted node's clock moves and it decides; then the
// held frame is released. The frame must be refused: the clock must not
// go back to the old primary's reading and the key written after the
// promotion must not be replaced. Before the fix the link applied it
// (the clock walked back 9 s and the key was the old primary's).
func TestStoppedLinkAppliesNothing(t *testing.T) {
	for _, mode := range linkModes {
		for _, how := range []string{"promote", "switch", "promote mid-unit"} {
			t.Run(mode.name+"/"+how, func(t *testing.T) { stoppedLinkAppliesNothing(t, mode, how) })
		}
	}
}

func stoppedLinkAppliesNothing(t *testing.T, mode linkMode, how string) {
	own := clock.NewManual(t0 - int64(time.Hour)) // the replica's wall clock is an hour behind
	clk := clock.NewTimeline(own, 0)
	e := engine.New(4)
	var looped atomic.Bool
	o := Options{Engine: e, Clock: clk}
	if mode.watch != nil {
		o.Watch = mode.watch(&looped)
	}
	m := running(t, New(o))

	held, release := make(chan struct{}), make(chan struct{})
	done := make(chan error, 1)
	first := true
	frameRead = func(kind byte) {
		if kind == frameRecords && first {
			first = false
			close(held)
			<-release
		}
	}
	frameDone = func(kind byte, err error) {
		if kind == frameRecords {
			select {
			case done <- err:
			default:
			}
		}
	}
	t.Cleanup(func() { frameRead, frameDone = nil, nil })

	port, accept := scriptedPrimary(t)
	require.False(t, m.ReplicaOf("127.0.0.1", port))
	conn := accept()
	var fw frameWriter
	fw.start = -1
	fw.frame(frameSyncStart, t0)
	fw.record(fixedRecord(t, "synced", t0), t0)
	fw.close()
	fw.frame(frameSyncEnd, t0)
	late := fixedRecord(t, "k", t0+int64(time.Second))
	if how == "promote mid-unit" {
		// One pump cut in two frames: an 'm' with another key,
		// then the 'r' that ends the unit, held. Neither half may
		// be applied: the replica takes a unit whole or not at all.
		fw.open(frameMore, t0+int64(time.Second))
		fw.buf = persist.AppendEntry(fw.buf, engine.Record{Key: "k0", Kind: engine.KindFixed, Deadline: late.Deadline, A: late.A, B: late.B, C: late.C})
		fw.close()
	}
	fw.record(late, t0+int64(time.Second)) // decided after the sync, read but held
	fw.close()
	_, err := conn.Write(fw.buf)
	require.NoError(t, err)

	select {
	case <-held:
	case <-time.After(10 * time.Second):
		t.Fatal("the replica never read the records frame")
	}
	require.Equal(t, t0, clk.Now(), "the replica follows the primary's timeline")
	conn.Close() // the primary goes, its frame in flight

	switch how {
	case "promote", "promote mid-unit":
		m.NoOne()
		require.False(t, clk.Following())
		require.Equal(t, t0, clk.Now(), "promoted at the primary's last reading applied")
		_, err := own.Advance(int64(10 * time.Second))
		require.NoError(t, err)
		ours := clk.Now()
		_, err = e.Store().Limit(engine.KindFixed, []byte("k"), engine.Params{Limit: 10, Window: int64(time.Minute), Cost: 3}, ours)
		require.NoError(t, err)
	case "switch":
		other, _ := scriptedPrimary(t) // never answers past accept: the new link waits in its handshake
		require.False(t, m.ReplicaOf("127.0.0.1", other))
	}
	before := records(e, clk.Now())
	now := clk.Now()

	close(release)
	select {
	case err := <-done:
		require.True(t, errors.Is(err, context.Canceled), "the held frame was applied (err %v)", err)
	case <-time.After(10 * time.Second):
		t.Fatal("the held frame never finished")
	}
	require.Equal(t, now, clk.Now(), "the clock moved after the link was stopped")
	require.Equal(t, before, records(e, now), "the keyspace changed after the link was stopped")
	require.NotContains(t, before, "k0", "half of a unit was applied")
	if how != "switch" {
		require.NotEqual(t, late, before["k"], "k holds the promoted node's own decision")
	} else {
		require.NotContains(t, before, "k")
	}
	require.Contains(t, before, "synced")
	require.Equal(t, mode.watch != nil, looped.Load(), "the stream was read the way the mode says")
}

// TestRefusedUnitAppliesNothing: a unit of the stream that holds a record
// the replica cannot apply (a malformed state, a later version's record)
// is refused whole. The records ahead of the bad one, in its frame and in
// the unit's first frame, stay unapplied, the clock stays at the reading
// before the unit, and the link comes back asking for the stream from the
// cut before the unit. Without the check the records ahead of the bad one
// were applied: half of an RL.ALL call could land on a replica.
func TestRefusedUnitAppliesNothing(t *testing.T) {
	good := fixedRecord(t, "state", t0)
	src := engine.New(1)
	feed := src.NewEncodedFeed(persist.AppendStateEntry, 1<<20)
	src.Apply(good, t0)
	entry, _ := feed.Append(nil)
	_, stateRec, _, ok := persist.NextEntry(entry) // version 3: the engine's layout
	require.True(t, ok)
	later := persist.AppendRecord(nil, good)
	later[0] = 9 // a record version this build does not know, its checksum right
	tab := crc32.MakeTable(crc32.Castagnoli)
	sum := crc32.Update(crc32.Checksum([]byte("bad"), tab), tab, later[:len(later)-4])
	binary.LittleEndian.PutUint32(later[len(later)-4:], sum)
	for _, tc := range []struct {
		name string
		rec  []byte
		err  error
	}{
		{"state longer than its bytes", append(slices.Clone(stateRec), 5), engine.ErrState}, // a slack of 5 bytes, none there
		{"unknown kind", persist.AppendStateRecord(nil, engine.Kind(7), stateRec[2:]), engine.ErrState},
		{"later version", later, persist.ErrVersion},
	} {
		for _, mode := range linkModes {
			t.Run(mode.name+"/"+tc.name, func(t *testing.T) { refusedUnitAppliesNothing(t, mode, tc.rec, tc.err) })
		}
	}
}

func refusedUnitAppliesNothing(t *testing.T, mode linkMode, bad []byte, want error) {
	clk := clock.NewTimeline(clock.NewManual(t0-int64(time.Hour)), 0)
	e := engine.New(4)
	var logged rltest.SyncBuffer
	o := Options{Engine: e, Clock: clk, Logger: slog.New(slog.NewTextHandler(&logged, nil))}
	var looped atomic.Bool
	if mode.watch != nil {
		o.Watch = mode.watch(&looped)
	}
	done := make(chan error, 16)
	frameDone = func(kind byte, err error) {
		if kind == frameRecords {
			done <- err
		}
	}
	t.Cleanup(func() { frameDone = nil }) // after the Manager's stop (cleanups run last first)
	m := running(t, New(o))

	port, accept := scriptedPrimaryPsync(t)
	require.False(t, m.ReplicaOf("127.0.0.1", port))
	conn, _ := accept()
	var fw frameWriter
	fw.start = -1
	fw.frame(frameSyncStart, t0)
	fw.record(fixedRecord(t, "synced", t0), t0)
	fw.close()
	fw.frame(frameSyncEnd, t0)
	// One unit in two frames: k0 in an 'm', then k1 and the bad record
	// in the 'r' that ends it.
	t1 := t0 + int64(time.Second)
	fw.open(frameMore, t1)
	fw.buf = persist.AppendEntry(fw.buf, fixedRecord(t, "k0", t1))
	fw.close()
	fw.open(frameRecords, t1)
	fw.buf = persist.AppendEntry(fw.buf, fixedRecord(t, "k1", t1))
	fw.buf = binary.AppendUvarint(fw.buf, 3)
	fw.buf = append(fw.buf, "bad"...)
	fw.buf = binary.AppendUvarint(fw.buf, uint64(len(bad)))
	fw.buf = append(fw.buf, bad...)
	fw.close()
	_, err := conn.Write(fw.buf)
	require.NoError(t, err)

	select {
	case err := <-done:
		require.ErrorIs(t, err, errRefused)
		require.ErrorIs(t, err, want)
	case <-time.After(10 * time.Second):
		t.Fatal("the replica never finished the unit")
	}
	held := records(e, t0)
	require.Contains(t, held, "synced")
	for _, k := range []string{"k0", "k1", "bad"} {
		require.NotContains(t, held, k, "a record of the refused unit was applied")
	}
	require.Equal(t, t0, clk.Now(), "the clock moved to the refused unit's reading")

	// The link comes back, and asks for the stream from the byte after
	// the full sync's offset (0): the refused unit is not in its backlog.
	// Before, the replica said why, and counted a failure to back off by.
	_, psync := accept()
	require.Equal(t, []string{"PSYNC", strings.Repeat("ab", 20), "1"}, psync)
	require.Contains(t, logged.String(), `level=WARN msg="a unit of the primary's stream refused, none of it applied"`)
	require.Contains(t, logged.String(), `record of \"bad\"`)
	require.Contains(t, logged.String(), "failed_in_a_row=1")
	refused, syncs := m.Failures()
	require.Equal(t, [2]int64{1, 0}, [2]int64{refused, syncs}, "the refused unit counted (rlserver_replication_failures_total), no failed sync")
	require.Equal(t, mode.watch != nil, looped.Load(), "the stream was read the way the mode says")
}

// TestCutFullSyncKeepsTheKeyspace: a full sync cut short (its primary gone
// after its first records) leaves the replica's keys as they were.
// Promoted then, it holds every limit it held
// before. Before, the replica dropped its keys at the sync's first frame
// and applied each frame as it came: cut short, it held a few of the
// primary's keys and none of its own.
func TestCutFullSyncKeepsTheKeyspace(t *testing.T) {
	clk := clock.NewTimeline(clock.NewManual(t0), 0)
	e := engine.New(4)
	for i := range 20 {
		_, err := e.Store().Limit(engine.KindFixed, fmt.Appendf(nil, "own:%d", i), engine.Params{Limit: 10, Window: int64(time.Hour), Cost: 1}, t0)
		require.NoError(t, err)
	}
	before := records(e, t0)
	m := running(t, New(Options{Engine: e, Clock: clk}))

	port, accept := scriptedPrimary(t)
	require.False(t, m.ReplicaOf("127.0.0.1", port))
	conn := accept()
	primaryNow := t0 + int64(time.Minute) // the primary's clock is a minute ahead
	var fw frameWriter
	fw.start = -1
	fw.frame(frameSyncStart, primaryNow)
	for i := range 10 {
		fw.record(fixedRecord(t, fmt.Sprint("new:", i), primaryNow), primaryNow)
		fw.close()
	}
	_, err := conn.Write(fw.buf)
	require.NoError(t, err)
	field := func(name string) string {
		for _, f := range m.Info(0) {
			if f.Name == name {
				return f.Value
			}
		}
		return ""
	}
	require.Eventually(t, func() bool { return field("master_sync_read_bytes") == fmt.Sprint(len(fw.buf)) },
		10*time.Second, time.Millisecond, "the replica read the sync's frames")
	conn.Close() // the primary goes before the sync's end
	require.Eventually(t, func() bool { return m.Role().State != stateSync }, 10*time.Second, time.Millisecond, "the link noticed")
	require.Eventually(t, func() bool { _, syncs := m.Failures(); return syncs == 1 }, 10*time.Second, time.Millisecond,
		"the failed sync counted (rlserver_replication_failures_total{kind=\"full_sync\"})")
	refused, _ := m.Failures()
	require.Zero(t, refused)

	m.NoOne()
	require.Equal(t, before, records(e, t0), "the keyspace after a cut full sync and a promotion")
}

// TestFailedSyncsBackOff: a replica whose full syncs keep failing (here a
// frame it cannot read, as from a primary of a later version) waits twice
// as long before each new attempt, so it does not cost its primary a full
// sync every retryEvery. Without the back-off the attempts came
// retryEvery apart.
func TestFailedSyncsBackOff(t *testing.T) {
	was, wasMax := retryEvery, retryMax
	retryEvery, retryMax = 20*time.Millisecond, 10*time.Second
	m := running(t, New(Options{Engine: engine.New(1), Clock: clock.NewTimeline(clock.NewManual(t0), 0)}))
	retryEvery, retryMax = was, wasMax

	port, accept := scriptedPrimary(t)
	require.False(t, m.ReplicaOf("127.0.0.1", port))
	var at []time.Time
	for range 4 {
		conn := accept()
		at = append(at, time.Now())
		var fw frameWriter
		fw.start = -1
		fw.frame(frameSyncStart, t0)
		fw.buf = append(fw.buf, '?', 1, 0) // a frame of an unknown kind
		_, err := conn.Write(fw.buf)
		require.NoError(t, err)
	}
	// The waits after the first, second and third failure: 40, 80, 160 ms.
	last := at[3].Sub(at[2])
	require.GreaterOrEqual(t, last, m.retryAfter(3), "the wait after three failed syncs")
	require.Equal(t, 160*time.Millisecond, m.retryAfter(3))
	require.Equal(t, 10*time.Second, m.retryAfter(40))
}

// TestPositionWaitsForAnInstall: Position, which a replica's snapshot
// reads first, waits while a full sync is installed and then returns the
// new position. Before, it answered at once that there was none, and the
// snapshot went on to store the part of the sync installed so far.
func TestPositionWaitsForAnInstall(t *testing.T) {
	e := engine.New(4)
	m := running(t, New(Options{Engine: e, Clock: clock.NewTimeline(clock.NewManual(t0), 0)}))

	type answer struct {
		p  persist.Position
		ok bool
	}
	waiting, stepped := make(chan struct{}, 1), make(chan struct{})
	answers := make(chan answer, 1)
	positionWaits = func() {
		select {
		case waiting <- struct{}{}:
		default:
		}
	}
	installStep = func() { // the keys flushed, the sync's records not yet installed
		go func() {
			p, ok := m.Position()
			answers <- answer{p, ok}
		}()
		defer close(stepped)
		select {
		case <-waiting:
		case a := <-answers:
			t.Errorf("Position answered during the install: %+v", a)
			answers <- a
		}
	}
	t.Cleanup(func() { installStep, positionWaits = nil, nil })

	port, accept := scriptedPrimary(t)
	require.False(t, m.ReplicaOf("127.0.0.1", port))
	conn := accept()
	var fw frameWriter
	fw.start = -1
	fw.frame(frameSyncStart, t0)
	for i := range 10 {
		fw.record(fixedRecord(t, fmt.Sprint("new:", i), t0), t0)
		fw.close()
	}
	fw.frame(frameSyncEnd, t0)
	_, err := conn.Write(fw.buf)
	require.NoError(t, err)
	select {
	case <-stepped:
	case <-time.After(10 * time.Second):
		t.Fatal("the install never began")
	}
	select {
	case a := <-answers:
		require.True(t, a.ok, "Position after the install")
		require.Equal(t, persist.Position{ReplID: strings.Repeat("ab", 20), Offset: 0}, a.p)
	case <-time.After(10 * time.Second):
		t.Fatal("Position never answered")
	}
	require.Len(t, records(e, t0), 10, "the sync installed")
}

package replication

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"log/slog"
	"net"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/rlserver/rlserver/clock"
	"github.com/rlserver/rlserver/engine"
	"github.com/rlserver/rlserver/persist"
)

// Options configure a Manager.
type Options struct {
	Engine *engine.Engine
	Clock  *clock.Timeline
	Logger *slog.Logger
	// BacklogSize is the backlog's capacity in bytes (--repl-backlog-size);
	// under MinBacklog it is raised to MinBacklog.
	BacklogSize int
	// Port is the port this node listens on, which it tells a primary
	// (REPLCONF listening-port) unless AnnouncePort is set; AnnounceIP,
	// if set, is the address it tells (REPLCONF ip-address).
	Port         int
	AnnounceIP   string
	AnnouncePort int
	// MasterAuth is the password a replica gives its primary (AUTH).
	MasterAuth string
	// Resume, if set, is the position a replica's store was left at: the
	// node asks its primary to continue from there (persist.Position).
	Resume *persist.Position
	// MinReplicas, if not 0, is how many good replicas a primary needs to
	// take writes: online, and acknowledged within MinReplicasMaxLag
	// seconds (Redis's min-replicas-to-write and -max-lag).
	MinReplicas, MinReplicasMaxLag int
	// Writes is called whenever whether the node takes writes changes:
	// WritesOK, WritesReadOnly (a replica) or WritesNoReplicas.
	Writes func(Writes)
	// BatchInterval is the least time between two pumps that a write
	// wakes (--repl-batch-interval). 0, the default, pumps as soon as a
	// write is made: each event-loop round's changes go out together, in
	// one write(2) per replica. Longer, a write made less than
	// BatchInterval after the last pump waits until it has passed, so the
	// changes of many rounds share one write: less of the primary's CPU,
	// up to BatchInterval more lag. A write after a quiet spell goes at
	// once. WAIT never waits for it. SetBatchInterval changes it.
	BatchInterval time.Duration
	// Watch, if set, has an event loop call ready whenever fd has input,
	// or kick was called (resp.Server.Watch). A replica's link is then
	// read and applied by the loop that answers its clients, not by the
	// link's goroutine (looped.go). ok is false if no loop can; the
	// goroutine reads it.
	Watch func(fd int, ready func() bool) (stop, kick func(), ok bool)
}

// Writes is whether a node takes writes.
type Writes int

const (
	WritesOK         Writes = iota
	WritesReadOnly          // a replica
	WritesNoReplicas        // a primary with too few good replicas
)

// DefaultBacklog and MinBacklog are Redis's repl-backlog-size default and
// floor, in bytes.
const (
	DefaultBacklog = 1 << 20
	MinBacklog     = 16 << 10
)

// pumpEvery is how often a primary with a replica attached reads the
// engine's changes into the stream when nothing woke it sooner, and
// heartbeatEvery how long an idle stream waits before a heartbeat carries
// the clock (docs/replication.md). A write wakes the pump at once
// (Changed), as does an expiry sweep that dropped keys, so the tick
// carries only what changed otherwise (a key expired as a read found it,
// which the replica's own clock expires too) and the heartbeat. The ticks
// and heartbeats are what an idle primary and its replica wake for:
// every 250 ms they cost 0.6% and 0.9% of a core, every 10 ms and 50 ms
// 1.3% and 2.6% (bench/idle.sh). Time needs no heartbeat: a replica's
// clock runs on from the last reading it got, and every change carries
// its own. Without a replica attached the tick runs every goodEvery
// where it has work: counting the good replicas (MinReplicas), or moving
// the changes a primary's backlog keeps for a replica that may return.
// Elsewhere (a primary that never had a replica, a replica with none of
// its own) it has none, and runs every idleEvery; a link that attaches
// wakes it at once.
const (
	pumpEvery      = 250 * time.Millisecond
	heartbeatEvery = 250 * time.Millisecond
	idleEvery      = time.Second
)

// feedHistory is how many bytes of kept changes a shard holds between two
// pumps (engine.NewEncodedFeed) before it lists all further changes, read
// back by the next pump: at some 40 bytes a change, thousands of changes a
// shard, far more than a pump's interval holds under load. It bounds what
// a stalled pump (a full sync's snapshot) leaves in memory, a shard.
const feedHistory = 128 << 10

// noReplID is Redis's replication id of nothing (master_replid2 unset).
const noReplID = "0000000000000000000000000000000000000000"

// Manager owns a node's replication: as a primary, the stream of its
// engine's changes, the backlog and the links to its replicas; as a
// replica, the link to its primary (follow.go). It reads the engine's
// effects through a Feed of its own. Safe for concurrent use.
type Manager struct {
	o    Options
	e    *engine.Engine
	clk  *clock.Timeline
	log  *slog.Logger
	feed *engine.Feed
	// retryEvery and retryMax are the package's, read at New: a test
	// that sets those is not racing with the links of earlier tests.
	retryEvery, retryMax time.Duration
	// ackEvery and ackQuiet are the package's, read at New (acker).
	ackEvery, ackQuiet time.Duration

	// apply is held by a replica's link goroutine while it applies one
	// frame (the clock, the keyspace, the stream position), and by
	// whatever ends that link before it changes the node's role
	// (ReplicaOf, NoOne, Run's end). The link checks under it that it
	// was not stopped, so once the link is stopped under apply, no
	// frame of it is ever applied: a promoted node's clock and keys
	// cannot be moved by its former primary. Lock order: apply, then
	// mu. Nobody holds apply while waiting for a network read.
	apply sync.Mutex

	// serial is held by whatever reads the engine into the stream or
	// changes what the feed listens to: the pump, a full sync's
	// snapshot, role changes. Its fields (body, fw) are the pump's
	// buffers.
	//
	// Lock order: apply, serial, the engine's shard locks, mu. mu is a
	// leaf: nothing holding it takes a shard lock, because commands
	// running under every shard's lock (EXEC) call into the Manager
	// (WAIT, INFO, ROLE) and take mu.
	serial sync.Mutex
	fw     frameWriter
	body   []byte // the pump's changes, entries of a records frame (Feed.Append)

	mu   sync.Mutex
	cond *sync.Cond // signalled when the stream grows, an ack arrives that WAIT waits for, or a link closes
	// refusedUnits and failedSyncs count, on a replica, the units of its
	// primary's stream it refused and the full syncs that failed: each
	// drops the link, and a cause that lasts (a primary of a later
	// version) repeats it with backoff. Failures reads them.
	refusedUnits, failedSyncs int64
	// ackWaiters counts the WAITs blocked in waitAcks: an ack wakes the
	// cond's waiters only for them, so an idle link's goroutine sleeps
	// through its replica's acks.
	ackWaiters int
	// replid is this node's replication id; replid2 and second the
	// previous one and the first offset it does not cover (Redis 4+'s
	// PSYNC after a failover). offset is master_repl_offset.
	replid, replid2 string
	second          int64
	offset          int64
	// history: the node has a stream behind offset (it served replicas or
	// followed a primary), so it can ask for a partial resync with it.
	history bool
	// installing: a full sync is being installed (fullSync). Position
	// waits for its end, so a snapshot never stores half of one.
	installing bool
	// lastState is the offset at the end of the last frame that changed
	// state (records, flush, the end of a full sync): what follows it
	// is heartbeats only.
	lastState int64
	bl        *backlog  // nil until a replica attaches or the node follows
	last      time.Time // when the last frame was written
	links     []*link   // in the order they attached
	up        *upstream // non-nil while a replica
	stopped   bool      // Run has returned: nothing waits any more
	// stopping: the node is stopping (EndWaits), so WAIT answers at once
	// with the acks so far; Drain still waits for the replicas.
	stopping bool

	syncFull, syncPartialOK, syncPartialErr atomic.Int64

	// kick wakes the pump after a write, so changes go out at once
	// rather than at the next tick; kicked says one is pending (a write
	// then costs one atomic load). linked: some replica is attached.
	kick           chan struct{}
	kicked, linked atomic.Bool
	// holding: the pump a write woke waits for batch to pass (Run's held
	// timer), so yielding to it is no use (Pending is false meanwhile).
	holding atomic.Bool
	// batch is the least time between two pumps that writes wake, in ns
	// (Options.BatchInterval, SetBatchInterval).
	batch atomic.Int64

	writes    Writes    // as last told (Options.Writes)
	lastCheck time.Time // when the good replicas were last counted
	fo        *failover // the FAILOVER in progress, nil for none (failover.go)
}

// New returns a Manager for a primary; call Run to start it.
func New(o Options) *Manager {
	if o.Logger == nil {
		o.Logger = slog.New(slog.DiscardHandler)
	}
	if o.BacklogSize <= 0 {
		o.BacklogSize = DefaultBacklog
	}
	o.BacklogSize = max(o.BacklogSize, MinBacklog)
	if o.Writes == nil {
		o.Writes = func(Writes) {}
	}
	m := &Manager{o: o, e: o.Engine, clk: o.Clock, log: o.Logger,
		feed:   o.Engine.NewEncodedFeed(persist.AppendStateEntry, feedHistory),
		replid: newReplID(), replid2: noReplID, second: -1, retryEvery: retryEvery, retryMax: retryMax,
		ackEvery: ackEvery, ackQuiet: ackQuiet}
	m.cond = sync.NewCond(&m.mu)
	m.kick = make(chan struct{}, 1)
	m.batch.Store(int64(o.BatchInterval))
	m.fw.start = -1
	m.feed.Mute(true) // until a replica attaches (attach)
	if r := o.Resume; r != nil {
		m.replid, m.offset, m.history, m.lastState = r.ReplID, r.Offset, true, r.Offset
	}
	return m
}

// Position is what a replica's snapshot stores with its records: its
// primary's replication id and the offset applied so far. Every record
// at or before it has been applied to the engine when Position returns.
// While a full sync is installed, Position waits for the install's end
// (a second or less for a million keys): a snapshot that began meanwhile
// would store part of the sync. While the sync is only read, the node
// holds its old keys and its old position. ok is false on a primary and
// on a replica without history (a sync never installed).
func (m *Manager) Position() (p persist.Position, ok bool) {
	m.mu.Lock()
	defer m.mu.Unlock()
	for m.installing {
		if positionWaits != nil {
			positionWaits()
		}
		m.cond.Wait()
	}
	if m.up == nil || !m.history {
		return persist.Position{}, false
	}
	return persist.Position{ReplID: m.replid, Offset: m.offset}, true
}

// newReplID returns 40 random hex digits.
func newReplID() string {
	var b [20]byte
	_, _ = rand.Read(b[:])
	return hex.EncodeToString(b[:])
}

// CheckWrites tells the node now whether it takes writes: a primary with
// MinReplicas refuses them from its first request. Call it before
// serving (Run does too, in its own time: a request could come first).
func (m *Manager) CheckWrites() {
	m.mu.Lock()
	defer m.mu.Unlock()
	m.setWritesLocked()
}

// Run pumps the engine's changes into the stream until ctx ends, then
// closes every link, its primary's included.
func (m *Manager) Run(ctx context.Context) {
	m.CheckWrites()
	tick := m.tickEvery()
	t := time.NewTimer(tick)
	defer t.Stop()
	// held fires when a write that came within BatchInterval of the last
	// pump may go; nil while none waits. Meanwhile kicked stays set, so
	// the writes that follow do not kick again.
	var held <-chan time.Time
	hold := time.NewTimer(time.Hour)
	hold.Stop()
	defer hold.Stop()
	pump := func() {
		m.serial.Lock()
		m.pump(false)
		m.serial.Unlock()
	}
	var pumped time.Time // when a pump that a write woke last ran
	woken := func() {
		m.holding.Store(false)
		m.kicked.Store(false)
		pump()
		pumped = time.Now()
	}
	for {
		select {
		case <-ctx.Done():
			m.apply.Lock()
			m.mu.Lock() // nothing here takes a shard lock: serial is not needed
			if m.up != nil {
				m.up.stop() // m.up stays: the final snapshot stores the position
			}
			m.apply.Unlock()
			m.dropLinksLocked()
			m.stopped = true
			m.cond.Broadcast()
			m.mu.Unlock()
			return
		case <-m.kick:
			if tick != pumpEvery && m.linked.Load() { // a link attached
				tick = pumpEvery
				t.Reset(tick)
			}
			if wait := time.Duration(m.batch.Load()) - time.Since(pumped); wait > 0 {
				hold.Reset(wait)
				held = hold.C
				m.holding.Store(true)
				continue
			}
			woken()
		case <-held:
			held = nil
			woken()
		case <-t.C:
			pump()
			m.mu.Lock()
			if time.Since(m.lastCheck) >= goodEvery {
				m.setWritesLocked()
			}
			m.mu.Unlock()
			tick = m.tickEvery()
			t.Reset(tick)
		}
	}
}

// tickEvery is how long Run's tick waits: pumpEvery with a replica
// attached, goodEvery where it counts good replicas or moves changes
// into a primary's backlog, else idleEvery.
func (m *Manager) tickEvery() time.Duration {
	switch {
	case m.linked.Load():
		return pumpEvery
	case m.o.MinReplicas > 0:
		return goodEvery
	}
	m.mu.Lock()
	defer m.mu.Unlock()
	if m.bl != nil && m.up == nil {
		return goodEvery
	}
	return idleEvery
}

// pump moves the engine's changes since the last pump into the stream:
// a flush if the keyspace was flushed, then the records, all tagged with
// the clock read after the changes were taken; a heartbeat when nothing
// changed for heartbeatEvery, or after them if beat (WAIT: a heartbeat
// asks the replicas to ack at once, and gives them this node's time when
// nothing else carries it). Whoever pumps (an event loop, or the pump's
// goroutine) writes the stream to the replicas' sockets as far as they
// take it without waiting; a link's goroutine is woken only for what a
// full socket left, so a heartbeat wakes one goroutine, not two. A
// replica pumps nothing: its stream is its primary's. m.serial must be
// held, and m.mu not: the feed is read under shard locks, and mu taken
// after.
func (m *Manager) pump(beat bool) {
	m.mu.Lock()
	idle := m.up != nil || m.bl == nil // role and backlog change only under serial
	m.mu.Unlock()
	if idle {
		return // the feed is muted: a replica's stream is its primary's, and without a backlog there is no stream
	}
	// The changes come encoded (a key's first change since the last
	// pump as it was made, the others read back now); the frames around
	// them, which carry the clock read after, are built next.
	var flushed bool
	m.body, flushed = m.feed.Append(m.body[:0])
	m.mu.Lock()
	defer m.mu.Unlock()
	if len(m.body) == 0 && !flushed && (len(m.links) == 0 || (!beat && time.Since(m.last) < heartbeatEvery)) {
		return // heartbeats are for replicas: without any the stream stays put
	}
	// The time a replica follows covers every lease token issued, which
	// may run a few ns ahead of the clock (engine/lease.go): promoted, it
	// never issues one again.
	now := max(m.clk.Now(), m.e.TokenHigh())
	m.fw.buf, m.fw.start = m.fw.buf[:0], -1
	if flushed {
		m.fw.frame(frameFlush, now)
	}
	m.fw.entries(m.body, now)
	if len(m.fw.buf) == 0 || beat {
		// A heartbeat asks the replicas for an ack (acker): after
		// the records, so an ack of it covers them (WAIT).
		m.fw.frame(frameHeartbeat, now)
	}
	m.appendLocked(m.fw.buf, true)
	if len(m.body) > 0 || flushed {
		m.lastState = m.offset
	}
	if cap(m.fw.buf) > 1<<20 { // a burst's large buffers are let go
		m.fw.buf, m.body = nil, nil
	}
}

// askAcks sends the replicas the changes so far, then a heartbeat that
// asks them to ack it (WAIT, Drain, a FAILOVER's wait). m.serial and m.mu
// must not be held.
func (m *Manager) askAcks() {
	m.serial.Lock()
	m.pump(true)
	m.serial.Unlock()
}

// appendLocked adds stream bytes to the backlog and the links' output,
// and wakes the links' goroutines; with send, it first writes what the
// links' sockets take now (sendLocked), and wakes them only if bytes are
// left.
func (m *Manager) appendLocked(p []byte, send bool) {
	m.bl.write(p)
	m.queueLocked(p)
	m.offset = m.bl.end
	m.history = true
	m.last = time.Now()
	if send && !m.sendLocked() {
		return
	}
	m.cond.Broadcast()
}

// ensureBacklogLocked makes the backlog, starting at the current offset,
// if there is none. (A primary's feed stays muted until a replica
// attaches: it pays for replication only then; the caller unmutes it,
// outside m.mu.) m.mu must be held.
func (m *Manager) ensureBacklogLocked() {
	if m.bl == nil {
		m.bl = newBacklog(m.o.BacklogSize, m.offset)
	}
}

// SetBatchInterval changes Options.BatchInterval (CONFIG SET
// repl-batch-interval): the writes from now on wait for it. Safe for
// concurrent use.
func (m *Manager) SetBatchInterval(d time.Duration) { m.batch.Store(int64(d)) }

// Changed tells the Manager the engine changed (a write ran): with a
// replica attached, the pump runs as soon as it is scheduled instead of
// at its next tick. Cheap when nothing is attached; safe for concurrent
// use.
func (m *Manager) Changed() {
	if m.linked.Load() && !m.kicked.Load() && m.kicked.CompareAndSwap(false, true) {
		select {
		case m.kick <- struct{}{}:
		default:
		}
	}
}

// ChangedOnLoop is Changed for a write that ran on an event loop, which
// calls PumpNow after its round: the pump's goroutine is not
// woken, so the round wakes no other goroutine, and no thread with it
// (resp/spare.go). With BatchInterval set, the pump's goroutine holds
// the changes as for Changed. Cheap; safe for concurrent use.
func (m *Manager) ChangedOnLoop() {
	if m.batch.Load() > 0 {
		m.Changed()
		return
	}
	if m.linked.Load() && !m.kicked.Load() {
		m.kicked.Store(true)
	}
}

// PumpNow runs the pump on the caller's goroutine, an event loop after
// a round, if writes wait for it: their changes, then the
// stream's bytes to the replicas' sockets, as far as those take them
// without waiting (Redis's event loop writes to its replicas the same
// way). It reports false if it left them to the pump's goroutine: with
// BatchInterval set, or while that goroutine pumps (it is then woken
// again, so the changes go at once). Safe for concurrent use.
func (m *Manager) PumpNow() bool {
	if !m.kicked.Load() || m.batch.Load() > 0 {
		return false
	}
	if !m.serial.TryLock() {
		m.kicked.Store(false)
		m.Changed() // the goroutine may have read the feed before this round's writes
		return false
	}
	m.kicked.Store(false) // before the feed's read: a write after it kicks again
	m.pump(false)
	m.serial.Unlock()
	return true
}

// Pending reports whether a write is waiting for the pump (Changed, with
// a replica attached) and the pump may run now: a goroutine that yields
// lets it run. It is false while the pump holds for BatchInterval.
// Cheap; safe for concurrent use.
func (m *Manager) Pending() bool { return m.kicked.Load() && !m.holding.Load() }

// IsReplica reports whether the node follows a primary.
func (m *Manager) IsReplica() bool {
	m.mu.Lock()
	defer m.mu.Unlock()
	return m.up != nil
}

// Follows reports whether the node follows the primary at host:port.
func (m *Manager) Follows(host string, port int) bool {
	m.mu.Lock()
	defer m.mu.Unlock()
	return m.up != nil && m.up.host == host && m.up.port == port
}

// ReplicaOf makes the node follow the primary at host:port (REPLICAOF
// host port). already reports that it follows that primary already, and
// changes nothing then. A primary that becomes a replica first writes
// what it decided into its own stream, so that its offset tells the new
// primary whether its history is a prefix of the new primary's; it
// disconnects its replicas.
func (m *Manager) ReplicaOf(host string, port int) (already bool) {
	return m.replicaOf(host, port, nil)
}

// replicaOf is ReplicaOf. With result set (a failover), the link asks
// its first PSYNC with FAILOVER, so that the replica at host:port takes
// over, and reports on result whether it was accepted.
func (m *Manager) replicaOf(host string, port int, result chan<- error) (already bool) {
	m.apply.Lock() // the old link, if any, applies nothing after this
	defer m.apply.Unlock()
	m.serial.Lock()
	defer m.serial.Unlock()
	m.mu.Lock()
	up := m.up
	m.mu.Unlock()
	if up != nil && up.host == host && up.port == port {
		return true
	}
	if up == nil {
		m.pump(false)
		m.feed.Mute(true)
	}
	m.mu.Lock()
	defer m.mu.Unlock()
	if m.up != nil {
		m.up.stop()
	} else {
		m.clk.Yield() // the new primary's timeline may be behind ours
		m.dropLinksLocked()
		// Heartbeats after the last change decide nothing, and the new
		// primary may not have received them (it was promoted in
		// between): offer the history up to the last change only.
		if bl := m.bl; bl != nil && m.lastState < m.offset && m.lastState >= bl.base && m.lastState >= bl.first-1 {
			bl.truncate(m.lastState)
			m.offset = m.lastState
		}
	}
	m.up = m.startFollowing(host, port, result)
	m.setWritesLocked() // read-only from now: a write admitted after REPLICAOF would be lost to the sync
	return false
}

// NoOne promotes the node (REPLICAOF NO ONE): it stops following, starts
// a new replication id, keeping the old one as replid2 up to this offset
// (so the other replicas of its former primary continue partially), and
// its clock continues from its primary's timeline. Its own replicas are
// disconnected and continue partially with the new id. On a primary it
// changes nothing. When it returns, no frame of the old link is applied
// any more: the promoted clock and keys are the node's own.
func (m *Manager) NoOne() {
	m.apply.Lock() // waits for a frame being applied; the link applies no other
	defer m.apply.Unlock()
	m.serial.Lock()
	defer m.serial.Unlock()
	m.mu.Lock()
	if m.up == nil {
		m.mu.Unlock()
		return
	}
	m.up.stop()
	m.up = nil
	m.shiftIDLocked()
	m.ensureBacklogLocked()
	// As Redis: its own replicas reconnect, and learn the new id from
	// +CONTINUE; kept on, they would ask later with the old id past
	// second_repl_offset and need a full sync.
	m.dropLinksLocked()
	now := m.clk.Promote()
	m.mu.Unlock()
	// Shard locks, so outside mu. Writes are still refused (the node
	// is told below), so nothing decides before the shards' time moves.
	m.e.ResetTime(now)
	m.feed.Mute(false)
	m.mu.Lock()
	defer m.mu.Unlock()
	m.setWritesLocked()
	m.log.Info("promoted to primary", "replid", m.replid, "replid2", m.replid2, "offset", m.offset, "clock", now)
}

// shiftIDLocked starts a new replication id, the old one becoming
// replid2, valid up to the current offset.
func (m *Manager) shiftIDLocked() {
	m.replid2, m.second = m.replid, m.offset+1
	m.replid = newReplID()
}

// dropLinksLocked closes every replica link.
func (m *Manager) dropLinksLocked() {
	for _, l := range slices.Clone(m.links) { // closeLocked removes from m.links
		l.closeLocked()
	}
}

// KillReplicas closes the links of the replicas of this node (CLIENT
// KILL TYPE replica) and returns how many.
func (m *Manager) KillReplicas() int {
	m.mu.Lock()
	defer m.mu.Unlock()
	n := len(m.links)
	m.dropLinksLocked()
	return n
}

// KillPrimary closes the link to the primary (CLIENT KILL TYPE master); the
// replica reconnects and resyncs, partially when it can. It returns 1 if
// there was a live link, else 0.
func (m *Manager) KillPrimary() int {
	m.mu.Lock()
	defer m.mu.Unlock()
	if m.up == nil {
		return 0
	}
	return m.up.cut()
}

// Wait is WAIT: how many online replicas have acknowledged the stream up
// to what the engine holds now (wrote: the caller made a write), or how
// many are online (it made none), as Redis 7.0's waitCommand counts them.
// When n of them have already, or it may not block (inside EXEC, whose
// shards are locked: no pump either), the answer is now and later is
// nil. Otherwise later blocks until n have, timeout passes (0: no
// limit), gone closes (the client went) or the Manager stops, and
// returns how many have: as Redis, a WAIT for more replicas than exist
// waits out its timeout.
func (m *Manager) Wait(n int, timeout time.Duration, wrote, block bool) (now int, later func(gone <-chan struct{}) int) {
	if block && wrote && m.linked.Load() {
		m.askAcks()
	}
	m.mu.Lock()
	defer m.mu.Unlock()
	target := int64(-1) // no write: every online replica counts
	if wrote {
		target = m.offset
	}
	if k := m.ackedLocked(target); k >= n || !block {
		return k, nil
	}
	return 0, func(gone <-chan struct{}) int { return m.waitAcks(n, target, timeout, gone) }
}

// ackedLocked counts the online replicas that acknowledged offset target.
func (m *Manager) ackedLocked(target int64) int {
	return m.countLocked(func(l *link) bool { return l.online && l.ack >= target })
}

// waitAcks blocks until n replicas acknowledged target, timeout passes
// (0: no limit), gone closes, the Manager stops or the node begins to
// stop (EndWaits), and returns how many have.
func (m *Manager) waitAcks(n int, target int64, timeout time.Duration, gone <-chan struct{}) int {
	m.mu.Lock()
	defer m.mu.Unlock()
	m.awaitLocked(func() bool { return m.ackedLocked(target) >= n || m.stopping }, timeout, gone)
	return m.ackedLocked(target)
}

// awaitLocked blocks until done holds, timeout passes (0: no limit),
// gone closes or the Manager stops: WAIT's wait, and a stop's for its
// replicas (Drain). Acks wake it (ackWaiters). m.mu must be held.
func (m *Manager) awaitLocked(done func() bool, timeout time.Duration, gone <-chan struct{}) {
	expired := false
	if gone != nil {
		stop := make(chan struct{})
		defer close(stop) // before the caller's unlock: the watcher then waits for m.mu, then sees nothing to do
		go func() {
			select {
			case <-gone:
				m.mu.Lock()
				expired = true
				m.cond.Broadcast()
				m.mu.Unlock()
			case <-stop:
			}
		}()
	}
	if timeout > 0 {
		t := time.AfterFunc(timeout, func() {
			m.mu.Lock()
			expired = true
			m.cond.Broadcast()
			m.mu.Unlock()
		})
		defer t.Stop()
	}
	m.ackWaiters++
	defer func() { m.ackWaiters-- }()
	for !done() && !expired && !m.stopped {
		m.cond.Wait()
	}
}

// EndWaits answers every WAIT now, with the replicas that have
// acknowledged so far, and every later one at once. A node calls it as
// it begins to stop, before it closes its clients' connections: a WAIT
// that blocks a connection's own goroutine would otherwise hold the stop
// up until its timeout.
func (m *Manager) EndWaits() {
	m.mu.Lock()
	m.stopping = true
	m.cond.Broadcast()
	m.mu.Unlock()
}

// Drain sends the replicas every change made so far, then a heartbeat
// that asks for an ack, and blocks until every linked replica has
// acknowledged all of it, its link closes, ctx ends or wait passes.
// With wait 0 it returns once the changes are written to the sockets
// that take them now (SHUTDOWN NOW, shutdown-timeout 0). It returns
// how many replicas acknowledged everything and how many did not.
//
// A node calls it as it stops, after its clients' connections are
// closed, so that no change comes after it, and before Run's context
// ends, which closes the links. Changes an event loop or BatchInterval
// held back are in the feed and go too. So a replica promoted after a
// graceful stop holds every decision its primary answered. Redis 7
// waits for its replicas at shutdown the same way (shutdown-timeout).
func (m *Manager) Drain(ctx context.Context, wait time.Duration) (caughtUp, lagging int) {
	m.askAcks()
	m.mu.Lock()
	defer m.mu.Unlock()
	target := m.offset
	behind := func() int { return m.countLocked(func(l *link) bool { return l.ack < target }) }
	if wait > 0 {
		m.awaitLocked(func() bool { return behind() == 0 }, wait, ctx.Done())
	}
	lagging = behind()
	return len(m.links) - lagging, lagging
}

// goodEvery is how often a primary counts its good replicas.
const goodEvery = 100 * time.Millisecond

// setWritesLocked works out whether the node takes writes and tells the
// node when that changed. m.mu must be held.
func (m *Manager) setWritesLocked() {
	m.lastCheck = time.Now()
	w := WritesOK
	switch {
	case m.up != nil:
		w = WritesReadOnly
	case m.o.MinReplicas > 0 && m.goodLocked() < m.o.MinReplicas:
		w = WritesNoReplicas
	}
	if w != m.writes {
		m.writes = w
		m.o.Writes(w)
	}
}

// goodLocked counts the online replicas whose last acknowledgement is at
// most MinReplicasMaxLag whole seconds old, as Redis counts good replicas.
func (m *Manager) goodLocked() int {
	return m.countLocked(func(l *link) bool {
		return l.online && int(time.Since(l.ackAt)/time.Second) <= m.o.MinReplicasMaxLag
	})
}

// announce is what a replica tells its primary: its port and address.
func (m *Manager) announce() (port int, ip string) {
	port = m.o.Port
	if m.o.AnnouncePort != 0 {
		port = m.o.AnnouncePort
	}
	return port, m.o.AnnounceIP
}

// hostOf is the address part of a connection's remote address, "" for
// none: a connection handed over after its peer had gone has none (Go
// asks the socket for its peer when it makes the net.Conn).
func hostOf(a net.Addr) string {
	if a == nil {
		return ""
	}
	h, _, err := net.SplitHostPort(a.String())
	if err != nil {
		return a.String()
	}
	return strings.TrimPrefix(h, "::ffff:")
}

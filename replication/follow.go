package replication

import (
	"bufio"
	"context"
	"encoding/binary"
	"errors"
	"fmt"
	"io"
	"net"
	"strconv"
	"strings"
	"time"

	"github.com/rlserver/rlserver/engine"
)

// The replica's side: a link to the primary, kept up by one goroutine
// that connects, shakes hands as Redis's replicas do, takes a full or a
// partial sync, applies the stream and acknowledges it, and reconnects
// when the link drops.

// Link states as ROLE names them.
const (
	stateConnect    = "connect"
	stateConnecting = "connecting"
	stateHandshake  = "handshake"
	stateSync       = "sync"
	stateConnected  = "connected"
)

// Timing of the replica's side.
const (
	dialTimeout = 5 * time.Second
	replTimeout = 60 * time.Second // a link silent this long is dropped (Redis's repl-timeout)
)

// retryEvery is the wait between connection attempts, and retryMax the
// longest. After a sync that failed (an error in its data, or its primary
// gone in the middle) the wait doubles at each failure: each attempt
// costs the primary a full sync, and a sync that cannot succeed (a primary
// of a later version, whose data this one refuses) would cost it one every
// retryEvery. Vars for tests, read by New.
var (
	retryEvery = 250 * time.Millisecond
	retryMax   = 16 * time.Second
)

// ackEvery is the longest a replica goes without acknowledging its
// stream, and ackQuiet the least time between two acks that no heartbeat
// asked for (acker). Vars for tests, read by New.
var (
	ackEvery = time.Second
	ackQuiet = 100 * time.Millisecond
)

// retryAfter is the wait before the next attempt after failed syncs in a
// row: m.retryEvery, doubled for each, up to m.retryMax.
func (m *Manager) retryAfter(failed int) time.Duration {
	d := m.retryEvery
	for range min(failed, 16) {
		d = min(2*d, m.retryMax)
	}
	return d
}

// upstream is a replica's link to its primary. Its fields after host and
// port are guarded by m.mu.
type upstream struct {
	m      *Manager
	host   string
	port   int
	cancel context.CancelFunc

	state     string
	conn      net.Conn
	upSince   time.Time // when the link came up; zero while down
	downSince time.Time // when it went down; zero if it never was up
	lastIO    time.Time // the last data from the primary
	syncRead  int64     // bytes of the full sync read so far
	onLoop    bool      // an event loop reads the stream (looped.go)
	// failover, set for a primary that hands over (FAILOVER), hears
	// whether the first PSYNC, sent with FAILOVER, was accepted. The
	// link's goroutine reports once, and clears it.
	failover chan<- error
	tookOver bool // the target accepted the handover (failover's PSYNC)
	// checked is room for what a unit's check finds in its records
	// (applyFrames), kept from one unit to the next; m.apply guards it.
	checked []engine.Checked
}

// startFollowing starts the link's goroutine. m.mu must be held.
func (m *Manager) startFollowing(host string, port int, failover chan<- error) *upstream {
	ctx, cancel := context.WithCancel(context.Background())
	u := &upstream{m: m, host: host, port: port, cancel: cancel, state: stateConnect, failover: failover}
	m.log.Info("following a primary", "host", host, "port", port)
	go u.run(ctx)
	return u
}

// stop ends the link for good. m.mu must be held.
func (u *upstream) stop() {
	u.cancel()
	if u.conn != nil {
		u.conn.Close()
	}
}

// cut closes a live link, which the goroutine then re-establishes. m.mu
// must be held.
func (u *upstream) cut() int {
	if u.conn == nil || u.state != stateConnected {
		return 0
	}
	u.conn.Close()
	return 1
}

// synced reports whether the link is up and past its sync. m.mu must be
// held.
func (u *upstream) synced() bool { return u.state == stateConnected }

func (u *upstream) run(ctx context.Context) {
	failed := 0 // syncs failed in a row
	for ctx.Err() == nil {
		handover := u.failover != nil
		err := u.session(ctx)
		if u.failover != nil { // the handover failed before its PSYNC was answered
			u.tellFailover(fmt.Errorf("link to the target: %w", err))
		}
		// A handover the target did not take: the failover makes the
		// node a primary again. The link must not ask again without
		// FAILOVER: a target that refused may be another primary,
		// whose full sync would replace every limit here.
		abandoned := handover && !u.tookOver
		refused := errors.Is(err, errRefused)
		u.m.mu.Lock()
		switch {
		case !u.upSince.IsZero():
			u.downSince = time.Now()
			if refused {
				failed++ // the primary will send the same unit again
				u.m.refusedUnits++
			} else {
				failed = 0
			}
		case u.state == stateSync:
			failed++
			u.m.failedSyncs++
		}
		u.upSince = time.Time{}
		u.conn = nil
		u.state = stateConnect
		u.m.mu.Unlock()
		if ctx.Err() != nil || abandoned {
			return
		}
		wait := u.m.retryAfter(failed)
		switch {
		case refused:
			u.m.log.Warn("a unit of the primary's stream refused, none of it applied", "host", u.host, "port", u.port, "err", err, "failed_in_a_row", failed, "retry_in", wait)
		case failed > 0:
			u.m.log.Warn("full sync failed", "host", u.host, "port", u.port, "err", err, "failed_in_a_row", failed, "retry_in", wait)
		default:
			u.m.log.Info("link to the primary down", "host", u.host, "port", u.port, "err", err)
		}
		select {
		case <-ctx.Done():
			return
		case <-time.After(wait):
		}
	}
}

// tellFailover reports the handover's outcome (err nil: the target took
// over), once.
func (u *upstream) tellFailover(err error) {
	u.tookOver = err == nil
	u.failover <- err
	u.failover = nil
}

// set changes the link's state unless it was stopped.
func (u *upstream) set(ctx context.Context, state string) error {
	u.m.mu.Lock()
	defer u.m.mu.Unlock()
	if ctx.Err() != nil {
		return ctx.Err()
	}
	u.state = state
	return nil
}

// session is one connection: handshake, sync, stream, until it fails.
func (u *upstream) session(ctx context.Context) error {
	m := u.m
	if err := u.set(ctx, stateConnecting); err != nil {
		return err
	}
	d := net.Dialer{Timeout: dialTimeout}
	conn, err := d.DialContext(ctx, "tcp", net.JoinHostPort(u.host, strconv.Itoa(u.port)))
	if err != nil {
		return err
	}
	conn = blocking(conn)
	m.mu.Lock()
	if ctx.Err() != nil {
		m.mu.Unlock()
		conn.Close()
		return ctx.Err()
	}
	u.conn, u.state = conn, stateHandshake
	m.mu.Unlock()
	defer conn.Close()
	conn.SetDeadline(time.Now().Add(replTimeout))
	br := bufio.NewReaderSize(conn, 64<<10)
	ask := func(args ...string) (string, error) {
		if _, err := conn.Write(appendCommand(nil, args...)); err != nil {
			return "", err
		}
		return readLine(br)
	}
	// The handshake, as Redis's replicas send it.
	r, err := ask("PING")
	if err != nil {
		return err
	}
	if strings.HasPrefix(r, "-") && !strings.HasPrefix(r, "-NOAUTH") && !strings.HasPrefix(r, "-NOPERM") && !strings.HasPrefix(r, "-ERR operation not permitted") {
		return fmt.Errorf("PING: %s", r)
	}
	if m.o.MasterAuth != "" {
		if r, err = ask("AUTH", m.o.MasterAuth); err != nil {
			return err
		}
		if r != "+OK" {
			return fmt.Errorf("AUTH: %s", r)
		}
	}
	port, ip := m.announce()
	if _, err = ask("REPLCONF", "listening-port", strconv.Itoa(port)); err != nil {
		return err
	}
	if ip != "" {
		if _, err = ask("REPLCONF", "ip-address", ip); err != nil {
			return err
		}
	}
	if _, err = ask("REPLCONF", "capa", "eof", "capa", "psync2"); err != nil {
		return err
	}
	m.mu.Lock()
	replid, off := "?", int64(-1)
	if m.history {
		replid, off = m.replid, m.offset+1
	}
	m.mu.Unlock()
	psync := []string{"PSYNC", replid, strconv.FormatInt(off, 10)}
	if u.failover != nil {
		psync = append(psync, "FAILOVER") // take over from me (Redis 6.2's)
	}
	if r, err = ask(psync...); err != nil {
		return err
	}
	if u.failover != nil {
		if strings.HasPrefix(r, "+") {
			u.tellFailover(nil)
		} else {
			u.tellFailover(fmt.Errorf("PSYNC: %s", r))
			return fmt.Errorf("PSYNC FAILOVER: %s", r)
		}
	}
	switch f := strings.Fields(r); {
	case len(f) == 3 && f[0] == "+FULLRESYNC":
		start, err := strconv.ParseInt(f[2], 10, 64)
		if err != nil {
			return fmt.Errorf("PSYNC: %s", r)
		}
		if err := u.set(ctx, stateSync); err != nil {
			return err
		}
		if err := u.fullSync(ctx, br, f[1], start); err != nil {
			return err
		}
	case len(f) >= 1 && f[0] == "+CONTINUE":
		m.mu.Lock()
		if len(f) == 2 && f[1] != m.replid { // the primary changed id (a failover): ours becomes replid2
			m.replid2, m.second, m.replid = m.replid, m.offset+1, f[1]
		}
		m.ensureBacklogLocked()
		m.mu.Unlock()
		m.log.Info("partial resync", "host", u.host, "port", u.port, "offset", off)
	default:
		return fmt.Errorf("PSYNC: %s", r)
	}
	m.mu.Lock()
	if ctx.Err() != nil {
		m.mu.Unlock()
		return ctx.Err()
	}
	u.state, u.upSince, u.lastIO = stateConnected, time.Now(), time.Now()
	m.mu.Unlock()
	if lc, ok := conn.(loopLink); ok && m.o.Watch != nil {
		if taken, err := u.streamLooped(ctx, lc, br); taken {
			return err
		}
	}
	return u.stream(ctx, conn, br)
}

// fullSync reads a full sync's frames and installs them: the keyspace is
// flushed and refilled, the clock follows the primary's, and the stream
// goes on from offset start with the primary's id. The frames are read
// and checked whole before any is installed, and installed under m.apply
// at once (not at all if the link was stopped). So a sync cut short (its
// primary gone, the link stopped by a promotion) leaves the replica as it
// was, every key it held and its position: promoted then, it holds every
// limit it held, never part of its new primary's keys and none of its
// own. The cost: the sync's bytes wait in memory until its end (some 35
// bytes a key), as a Redis replica keeps its old keys until the whole RDB
// file has arrived.
func (u *upstream) fullSync(ctx context.Context, br *bufio.Reader, replid string, start int64) error {
	m := u.m
	var head, end frame // the sync's start and end
	var frames []frame  // its records, in order; each holds raw, read into a buffer of its own
	total := 0          // records in frames
	for end.kind == 0 {
		raw, f, err := readFrame(br)
		if err != nil {
			return err
		}
		m.mu.Lock()
		u.syncRead += int64(len(raw))
		m.mu.Unlock()
		switch {
		case f.kind == frameSyncStart && head.kind == 0:
			head = f
		case f.kind == frameRecords && head.kind != 0:
			n, err := f.verify()
			if err != nil {
				return err
			}
			total += n
			frames = append(frames, f)
		case f.kind == frameSyncEnd && head.kind != 0:
			end = f
		default:
			return fmt.Errorf("%w: %q in a full sync", errFrame, f.kind)
		}
	}
	return u.applying(ctx, func() error {
		m.mu.Lock()
		m.history, m.installing = false, true
		m.mu.Unlock()
		defer func() {
			m.mu.Lock()
			m.installing = false
			m.cond.Broadcast() // Position's waiters
			m.mu.Unlock()
		}()
		if !keysFresh(m.e) {
			m.e.Store().Flush()
		}
		u.follow(head.now)
		if installStep != nil {
			installStep()
		}
		m.e.Fill(total, func() {
			for _, f := range frames {
				f.applyTo(m.e, f.now) // checked above: never fails
			}
		})
		u.follow(end.now)
		m.mu.Lock()
		defer m.mu.Unlock()
		m.replid, m.replid2, m.second = replid, noReplID, -1
		m.offset, m.history, m.lastState = start, true, start
		m.bl = newBacklog(m.o.BacklogSize, start)
		u.syncRead = 0
		m.log.Info("full sync done", "host", u.host, "port", u.port, "keys", total, "offset", start)
		return nil
	})
}

// applying runs fn, which applies one frame, under m.apply unless the
// link was stopped (ctx ended): then it returns ctx's error and fn does
// not run. Whoever stops the link holds m.apply meanwhile, so a frame
// is applied either wholly before the stop or not at all.
func (u *upstream) applying(ctx context.Context, fn func() error) error {
	u.m.apply.Lock()
	defer u.m.apply.Unlock()
	return appliedLocked(ctx, fn)
}

// appliedLocked is applying's body, for a caller that holds m.apply.
func appliedLocked(ctx context.Context, fn func() error) error {
	if err := ctx.Err(); err != nil {
		return err
	}
	return fn()
}

// Test hooks, nil outside tests. frameRead runs in the stream right
// after a frame was read, before it is applied (the window in which the
// link may be stopped); frameDone after the frame was applied, or
// refused with err.
var (
	frameRead func(kind byte)
	frameDone func(kind byte, err error)
	// installStep runs in a full sync's install, after the flush and
	// before the records; positionWaits in Position, before it waits
	// for an install.
	installStep   func()
	positionWaits func()
)

// keysFresh reports whether the keyspace is empty (no flush needed).
func keysFresh(e *engine.Engine) bool { return e.Store().Len() == 0 }

// follow takes the primary's clock reading p: the first after being on its
// own clock moves the node's time to the primary's, shards included. It
// is called under m.apply by a link that was not stopped, so the
// Timeline was told to Yield (ReplicaOf) and takes p.
func (u *upstream) follow(p int64) {
	m := u.m
	if !m.clk.Following() {
		if m.clk.Follow(p) {
			m.e.ResetTime(m.clk.Now())
		}
		return
	}
	m.clk.Follow(p)
}

// stream applies the primary's stream, keeps it in the backlog and
// acknowledges it (acker says when).
func (u *upstream) stream(ctx context.Context, conn net.Conn, br *bufio.Reader) error {
	m := u.m
	acks := m.newAcker(func(b []byte) (bool, error) {
		_, err := conn.Write(b)
		return true, err
	})
	if err := acks.ack(m); err != nil {
		return err
	}
	var unit []pendingFrame // the frames of a unit read so far ('m'...), not applied yet
	for {
		conn.SetReadDeadline(time.Now().Add(min(replTimeout, acks.every)))
		raw, f, err := readFrame(br)
		var ne net.Error
		if errors.As(err, &ne) && ne.Timeout() {
			m.mu.Lock()
			silent := time.Since(u.lastIO)
			m.mu.Unlock()
			if silent > replTimeout {
				return err
			}
			if err := acks.ack(m); err != nil {
				return err
			}
			continue
		}
		if err != nil {
			return err
		}
		if frameRead != nil {
			frameRead(f.kind)
		}
		unit = append(unit, pendingFrame{raw, f})
		if f.kind == frameMore {
			continue // applied with the frame that ends the unit
		}
		err = u.applyUnit(ctx, unit)
		unit = unit[:0]
		if frameDone != nil {
			frameDone(f.kind, err)
		}
		if err != nil {
			return err
		}
		if f.kind == frameHeartbeat {
			acks.ask()
		}
		if br.Buffered() == 0 || acks.stale() {
			if err := acks.ack(m); err != nil {
				return err
			}
		}
	}
}

// applyUnit applies a unit's frames, all or (the link stopped) none.
func (u *upstream) applyUnit(ctx context.Context, unit []pendingFrame) error {
	return u.applying(ctx, func() error { return u.applyFrames(unit) })
}

// tryApplyUnit is applyUnit if m.apply is free; applied is false, and
// nothing is applied, if another goroutine holds it.
func (u *upstream) tryApplyUnit(ctx context.Context, unit []pendingFrame) (applied bool, err error) {
	if !u.m.apply.TryLock() {
		return false, nil
	}
	defer u.m.apply.Unlock()
	return true, appliedLocked(ctx, func() error { return u.applyFrames(unit) })
}

// applyFrames applies a unit's frames in order, once every frame has
// verified: a unit with a record that cannot be applied is refused
// whole, and the link drops at the cut before it. What the check found
// in each record is applied as found (applyChecked): a state is parsed
// once. m.apply is held.
func (u *upstream) applyFrames(unit []pendingFrame) error {
	checked := u.checked[:0]
	for _, p := range unit {
		var err error
		if checked, _, err = p.f.check(checked, true); err != nil {
			return fmt.Errorf("%w: %w", errRefused, err)
		}
	}
	if cap(checked) <= maxCheckedKept {
		u.checked = checked[:0]
	}
	for _, p := range unit {
		var err error
		if checked, err = u.applyFrame(p.raw, p.f, checked); err != nil {
			return err
		}
	}
	return nil
}

// maxCheckedKept bounds the room a link keeps from one unit's check to
// the next (48 bytes a record): a larger unit's is let go.
const maxCheckedKept = 4096

// pendingFrame is a frame read and not yet applied: its bytes as sent
// and decoded.
type pendingFrame struct {
	raw []byte
	f   frame
}

// applyFrame applies one frame of the stream: the clock, the keyspace,
// then the frame's bytes to this node's stream (backlog, its own
// replicas). checked is what the unit's check found in the records of
// this frame and the next ones (frame.applyChecked); it returns the rest.
// m.apply is held.
func (u *upstream) applyFrame(raw []byte, f frame, checked []engine.Checked) ([]engine.Checked, error) {
	m := u.m
	u.follow(f.now)
	switch f.kind {
	case frameHeartbeat:
	case frameFlush:
		m.e.Store().Flush()
	case frameRecords, frameMore:
		var err error
		if checked, err = f.applyChecked(m.e, f.now, checked); err != nil {
			return checked, err
		}
	default:
		return checked, fmt.Errorf("%w: %q in the stream", errFrame, f.kind)
	}
	m.mu.Lock()
	m.appendLocked(raw, false)
	if f.kind != frameHeartbeat {
		m.lastState = m.offset
	}
	u.lastIO = time.Now()
	m.mu.Unlock()
	return checked, nil
}

// readFrame reads one whole frame: its bytes as sent, and decoded.
func readFrame(br *bufio.Reader) ([]byte, frame, error) {
	kind, err := br.ReadByte()
	if err != nil {
		return nil, frame{}, err
	}
	n, err := binary.ReadUvarint(br)
	if err != nil {
		if errors.Is(err, io.EOF) {
			err = io.ErrUnexpectedEOF
		}
		return nil, frame{}, err
	}
	if n > maxFrame {
		return nil, frame{}, errFrame
	}
	raw := make([]byte, 0, 1+binary.MaxVarintLen64+int(n))
	raw = append(raw, kind)
	raw = binary.AppendUvarint(raw, n)
	head := len(raw)
	raw = raw[:head+int(n)]
	if _, err := io.ReadFull(br, raw[head:]); err != nil {
		return nil, frame{}, err
	}
	f, size, err := parseFrame(raw)
	if err == nil && size != len(raw) {
		err = errFrame
	}
	return raw, f, err
}

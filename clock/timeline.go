package clock

import (
	"sync"
	"sync/atomic"
)

// Own is a clock a node can run on by itself: Real or Manual.
type Own interface {
	Clock
	NowAt(mono int64) int64
	// Resume sets the reading to ns, earlier or later, and goes on from
	// there (Real.Resume).
	Resume(ns int64)
}

// Timeline is the server clock of a node that can follow another node's
// time (docs/clock.md, property 3). On its own it reads its Own clock.
// Following a primary, it reads the primary's timeline as last seen: the
// primary's latest reading plus the time the own clock has run since that
// reading arrived. Promote makes it its own again from exactly there,
// whatever the wall clock says: an Own Real clock then slews toward the
// wall clock at its bounded rate, so a replica whose wall clock is an
// hour fast does not mint an hour of tokens, nor one an hour slow replay
// an hour of windows.
//
// Readings never go back while the Timeline stays in one mode. Starting
// to follow may move them back (a node that follows decides nothing; its
// shards adopt the primary's time, engine.Engine.ResetTime). Safe for
// concurrent use; on its own a reading costs one atomic load more than
// the Own clock's.
type Timeline struct {
	own       Own
	following atomic.Bool

	mu      sync.Mutex
	off     int64 // primary - own reading, while following
	last    int64 // the latest reading given while following
	primary int64 // the primary's latest reading seen
	floor   int64 // Promote never goes below it (the stored high-water mark)
}

// NewTimeline returns a Timeline on its own clock own, never promoted
// below floor (Unix ns; the stored high-water mark).
func NewTimeline(own Own, floor int64) *Timeline {
	return &Timeline{own: own, floor: floor}
}

// Own is the node's own clock (DEBUG CLOCK moves a Manual one).
func (t *Timeline) Own() Own { return t.own }

// Now returns the reading, Unix ns.
func (t *Timeline) Now() int64 {
	if !t.following.Load() {
		return t.own.Now()
	}
	return t.followNow(t.own.Now())
}

// NowAt is Now at the monotonic reading m (Real.NowAt).
func (t *Timeline) NowAt(m int64) int64 {
	if !t.following.Load() {
		return t.own.NowAt(m)
	}
	return t.followNow(t.own.NowAt(m))
}

func (t *Timeline) followNow(own int64) int64 {
	t.mu.Lock()
	defer t.mu.Unlock()
	if !t.following.Load() { // promoted meanwhile
		return t.own.Now()
	}
	t.last = max(t.last, own+t.off)
	return t.last
}

// Following reports whether the Timeline follows a primary.
func (t *Timeline) Following() bool { return t.following.Load() }

// Follow sets the primary's latest reading p (Unix ns), just received.
// The first call after Promote or NewTimeline starts following: the
// reading becomes p, earlier or later than before. Later calls keep
// readings from going back.
func (t *Timeline) Follow(p int64) {
	t.mu.Lock()
	defer t.mu.Unlock()
	own := t.own.Now()
	t.off = p - own
	if !t.following.Load() {
		t.last = p
		t.following.Store(true)
	}
	t.primary = max(t.primary, p)
	t.floor = max(t.floor, p)
}

// Primary returns the primary's latest reading seen (0 if none).
func (t *Timeline) Primary() int64 {
	t.mu.Lock()
	defer t.mu.Unlock()
	return t.primary
}

// Promote makes the Timeline its own clock again, continuing from the
// primary's timeline as it reads now (never below the floor nor below a
// reading already given): the Own clock resumes from there. It returns
// that reading. On its own already, it changes nothing.
func (t *Timeline) Promote() int64 {
	t.mu.Lock()
	defer t.mu.Unlock()
	if !t.following.Load() {
		return t.own.Now()
	}
	now := max(t.own.Now()+t.off, t.last, t.floor)
	t.own.Resume(now)
	t.following.Store(false)
	return now
}

// Offset is the reading minus the wall clock the Own clock follows, in
// ns (INFO server's clock_offset_ms): the Own Real clock's offset, plus
// the primary's while following. ok is false for an Own clock that
// follows no wall clock (Manual).
func (t *Timeline) Offset() (ns int64, ok bool) {
	o, ok := t.own.(interface{ Offset() int64 })
	if !ok {
		return 0, false
	}
	off := o.Offset()
	if t.following.Load() {
		t.mu.Lock()
		off += t.off
		t.mu.Unlock()
	}
	return off, true
}

// Raise moves a Timeline on its own clock forward to at least p (Unix
// ns): a primary taking in records decided on another node's clock
// (a slot moving between shards) never reads earlier than that clock.
// Following a primary, or already at p or later, it changes nothing.
func (t *Timeline) Raise(p int64) {
	t.mu.Lock()
	defer t.mu.Unlock()
	if t.following.Load() {
		return
	}
	if t.own.Now() < p {
		t.own.Resume(p)
	}
	t.floor = max(t.floor, p)
}

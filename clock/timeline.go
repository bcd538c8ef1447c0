package clock

import (
	"fmt"
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
// Readings never go back, but at one point: the first Follow after Yield,
// where the node starts following a primary (a node that follows decides
// nothing; its shards adopt the primary's time, engine.Engine.ResetTime).
// A node on its own clock that was not told to Yield refuses to follow:
// a late frame from a former primary can never move a promoted node's
// clock. With Invariants on, a reading that goes back anywhere else, or a
// refused Follow, panics. Safe for concurrent use; on its own a reading
// costs one atomic load more than the Own clock's.
type Timeline struct {
	own       Own
	following atomic.Bool
	given     atomic.Int64 // with Invariants: the latest reading given since the last Follow that started following

	mu      sync.Mutex
	off     int64 // primary - own reading, while following
	last    int64 // the latest reading given while following
	primary int64 // the primary's latest reading seen
	floor   int64 // Promote never goes below it (the stored high-water mark)
	yielded bool  // Yield was called since the last Promote: Follow may start following
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
	var before int64
	if Invariants {
		before = t.given.Load()
	}
	var now int64
	if !t.following.Load() {
		now = t.own.Now()
	} else {
		now = t.followNow(t.own.Now())
	}
	if Invariants {
		t.check(before, now)
	}
	return now
}

// NowAt is Now at the monotonic reading m (Real.NowAt).
func (t *Timeline) NowAt(m int64) int64 {
	var before int64
	if Invariants {
		before = t.given.Load()
	}
	var now int64
	if !t.following.Load() {
		now = t.own.NowAt(m)
	} else {
		now = t.followNow(t.own.NowAt(m))
	}
	if Invariants {
		t.check(before, now)
	}
	return now
}

// check panics if now, a reading that began after before was given, is
// earlier than before, then records now as given. A Follow that starts
// following lowers given (the one point where readings may go back), so
// a reading that raced with it is not held against it.
func (t *Timeline) check(before, now int64) {
	if now < before && t.given.Load() >= before {
		panic(fmt.Sprintf("clock: invariant: the reading went back from %d to %d", before, now))
	}
	for {
		g := t.given.Load()
		if now <= g || t.given.CompareAndSwap(g, now) {
			return
		}
	}
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

// Yield tells the Timeline that the node now follows a primary: the next
// Follow may start following, and so move readings back. Promote undoes
// it. Following already, it changes nothing.
func (t *Timeline) Yield() {
	t.mu.Lock()
	defer t.mu.Unlock()
	t.yielded = true
}

// Follow sets the primary's latest reading p (Unix ns), just received,
// and reports whether it was taken. The first call after Yield starts
// following: the reading becomes p, earlier or later than before. Later
// calls keep readings from going back. On its own clock with no Yield
// since NewTimeline or Promote, it changes nothing and reports false: the
// caller is a link that should have stopped (with Invariants, it panics).
func (t *Timeline) Follow(p int64) bool {
	t.mu.Lock()
	defer t.mu.Unlock()
	if !t.following.Load() {
		if !t.yielded {
			if Invariants {
				panic(fmt.Sprintf("clock: invariant: Follow(%d) on a timeline on its own clock, not told to Yield", p))
			}
			return false
		}
		t.last = p
		t.given.Store(min(t.given.Load(), p))
		t.following.Store(true)
	}
	t.off = p - t.own.Now()
	t.primary = max(t.primary, p)
	t.floor = max(t.floor, p)
	return true
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
	t.yielded = false
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

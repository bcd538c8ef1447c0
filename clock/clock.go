package clock

import (
	"context"
	"errors"
	"fmt"
	"strconv"
	"sync"
	"sync/atomic"
	"time"

	"github.com/rlserver/rlserver/internal/sat"
)

// Clock is the server clock. Now returns Unix time in nanoseconds; successive
// calls never return a smaller value. Implementations are safe for
// concurrent use.
type Clock interface {
	Now() int64
}

// ErrBackwards is returned by Manual.Set when the new time is earlier than
// the current one: the server clock never goes back.
var ErrBackwards = errors.New("clock: time would move backwards")

// DefaultSlewPPM is the default bound, in parts per million, on how much
// faster or slower than the monotonic clock a Real clock runs while it
// converges to the wall clock: 10000 ppm = 1%, so an offset of one hour is
// absorbed in 100 hours (docs/clock.md, property 4).
const DefaultSlewPPM = 10_000

// maxSlewPPM caps SlewPPM: at 1e6 ppm (100%) the clock may stand still while
// the wall clock catches up, but never runs backwards.
const maxSlewPPM = 1_000_000

// RealOptions configure a Real clock. Zero fields take defaults. Wall and
// Mono exist so that tests can drive the clock deterministically; production
// code leaves both nil.
type RealOptions struct {
	// Wall returns the wall clock, in Unix ns. It may step backwards or
	// forwards at any time; the clock slews toward it without jumping. A
	// custom Wall is called on every reading. Default: time.Now().UnixNano(),
	// read by Now at most once per millisecond of monotonic time (see Real).
	Wall func() int64
	// Mono returns a monotonic reading in ns from any fixed origin. The
	// clock advances with it (at 1 ± SlewPPM/1e6 times its rate). A reading
	// smaller than the previous one counts as no time elapsed. Default: ns
	// elapsed since a time.Now() taken at construction (Go's monotonic
	// clock).
	Mono func() int64
	// HighWater is the clock's stored high-water mark, in Unix ns (from the
	// last snapshot): the clock starts at max(Wall(), HighWater), so it never
	// goes back across a restart (docs/clock.md, property 2).
	HighWater int64
	// SlewPPM bounds, in parts per million, how much faster or slower than
	// Mono the clock runs while it differs from the wall clock. Default
	// (zero or negative): DefaultSlewPPM. Values above 1e6 are treated as
	// 1e6.
	SlewPPM int64
}

// wallEvery is how often, in monotonic ns, a default Real clock (Wall nil)
// reads the wall clock on the Now path. Reading it costs about as much as
// the rest of Now together; noticing a wall-clock step up to 1 ms late
// changes nothing that matters, as the clock only slews toward it at 1%. In
// between reads, the wall clock is taken to have advanced with the
// monotonic clock. Offset always reads it.
const wallEvery = int64(time.Millisecond)

// Real is the production clock (docs/clock.md, properties 1, 2 and 4). It is
// driven by a monotonic source, so a wall-clock step never makes it jump;
// it starts at max(wall clock, high-water mark); and wherever it differs from
// the wall clock it slews toward it, running at most SlewPPM parts per
// million faster or slower than the monotonic source and never backwards.
// Once it has met the wall clock it follows it, as long as the wall clock
// moves within that rate bound.
//
// Each reading (Now or Offset) computes, with dm the monotonic ns since the
// previous reading and w the wall clock:
//
//	free = last + dm
//	now  = free + clamp(w - free, -bound, +bound), bound ≈ dm*SlewPPM/1e6
//
// The fractional part of the bound is carried from reading to reading while
// the clock is slewing, so the slew is exact however often the clock is
// read: over a monotonic span M spent converging the clock moves exactly
// M ± floor(M*SlewPPM/1e6). All arithmetic is integer and saturating.
//
// With the default wall clock, Now reads it at most once per millisecond of
// monotonic time and otherwise extrapolates it with the monotonic clock, for
// speed; a custom Wall is read on every reading.
//
// Real is safe for concurrent use and does not allocate. Readings that
// change its state are serialized by a mutex. While the clock follows the
// wall clock, which is nearly always, a reading changes no state: between
// two reads of the wall clock, the reading at monotonic m is m + (wall -
// mono at the last wall read). That line is published for lock-free
// readers (the fast path), so event loops on many cores reading the clock
// for every command do not queue on one mutex. The zero value is not
// usable; use NewRealWith or NewReal.
type Real struct {
	mu   sync.Mutex
	mono func() int64              // monotonic ns
	both func() (wall, mono int64) // wall clock and monotonic ns, read together
	ppm  int64                     // SlewPPM, in [1, 1e6]

	// Wall-clock cache: with wallEvery > 0, Now reads the wall clock only
	// once mono reaches wallNext, and otherwise estimates it as mono +
	// wallMono.
	wallEvery int64
	wallNext  int64
	wallMono  int64 // wall - mono at the last wall-clock read

	last     int64 // the previous reading, Unix ns
	lastMono int64 // mono at the previous reading
	procMono bool  // mono is Mono (NowAt may take the caller's reading)
	frac     int64 // unused slew budget carried over, in 1e-6 ns; in [0, 1e6)

	// The fast path, a seqlock over (from, until, off): seq is odd while a
	// writer (holding mu) changes them. A reading at m in [from, until)
	// is m + off. from is maxInt64 while the path is closed: the clock is
	// slewing, reads a custom Wall every time, or a writer is at work.
	// Invariant: while open, the clock follows the wall clock (following),
	// from == lastMono, until == wallNext and off == wallMono.
	seq              atomic.Uint64
	from, until, off atomic.Int64
}

// NewRealWith returns a Real clock configured by o (zero fields take
// defaults). It reads Wall and Mono once, now, and starts at
// max(Wall(), o.HighWater).
func NewRealWith(o RealOptions) *Real {
	mono := o.Mono
	if mono == nil {
		mono = Mono
	}
	var both func() (int64, int64)
	every := int64(0)
	switch {
	case o.Wall == nil && o.Mono == nil:
		// One time.Now() gives both readings, taken at the same instant.
		both = func() (int64, int64) {
			t := time.Now()
			return t.UnixNano(), int64(t.Sub(monoOrigin))
		}
		every = wallEvery
	case o.Wall == nil:
		both = func() (int64, int64) { return time.Now().UnixNano(), mono() }
		every = wallEvery
	default:
		wall := o.Wall
		both = func() (int64, int64) { return wall(), mono() }
	}
	c := newReal(mono, both, every, o.HighWater, o.SlewPPM)
	c.procMono = o.Wall == nil && o.Mono == nil
	return c
}

// monoOrigin is the origin of Mono.
var monoOrigin = time.Now()

// Mono returns monotonic ns since the process started. It is the source of
// a Real clock built without Wall and Mono, so that a reading taken for
// another purpose (the dispatcher times every command with it) can serve
// as the clock's reading too (NowAt), and the clock is read once, not
// twice, per command.
func Mono() int64 { return int64(time.Since(monoOrigin)) }

// monoOriginUnix is the wall clock at the origin of Mono, Unix ns.
var monoOriginUnix = monoOrigin.UnixNano()

// MonoUnix converts a Mono reading to Unix ns as the wall clock read when
// the process started, advanced by the monotonic clock since: a wall time
// without a second clock reading, for bookkeeping that only needs the
// wall clock's rough position (RL.TOP's ten-second slices). It drifts
// from the wall clock by whatever steps the wall clock took since.
func MonoUnix(mono int64) int64 { return monoOriginUnix + mono }

// NewReal returns a Real clock whose wall clock reads startNs (Unix ns) now
// and then advances with the monotonic clock; it backs --clock-start, and
// NewReal(time.Now().UnixNano()) behaves like the wall clock as it was at
// start. It is NewRealWith with Wall = startNs + monotonic ns elapsed and no
// high-water mark. Since that wall clock never steps, the clock simply
// reads startNs plus monotonic time elapsed, and Offset is 0.
func NewReal(startNs int64) *Real {
	origin := time.Now()
	mono := func() int64 { return int64(time.Since(origin)) }
	return newReal(mono, func() (int64, int64) {
		m := mono()
		return sat.Add(startNs, m), m
	}, 0, 0, 0)
}

func newReal(mono func() int64, both func() (int64, int64), every, highWater, ppm int64) *Real {
	switch {
	case ppm <= 0:
		ppm = DefaultSlewPPM
	case ppm > maxSlewPPM:
		ppm = maxSlewPPM
	}
	c := &Real{mono: mono, both: both, ppm: ppm, wallEvery: every}
	c.from.Store(maxInt64)
	w, m := c.sample(true)
	c.last, c.lastMono = max(w, highWater), m
	c.lock()
	c.unlock()
	return c
}

// Now returns the clock's reading in Unix ns. Successive calls, from any
// goroutines, never return a smaller value.
func (c *Real) Now() int64 {
	if c.wallEvery > 0 {
		if now, ok := c.fast(c.mono()); ok {
			return now
		}
	}
	c.lock()
	now, _ := c.read(false)
	c.unlock()
	return now
}

// NowAt is Now for a reading m of Mono that the caller has just taken: the
// clock reads at m instead of reading the monotonic clock again. It never
// returns less than a reading that had returned before m was taken, and
// readings at non-decreasing m never go back; a reading at an m older than
// the last change of the clock's rate reads as that moment. Across
// goroutines, readings at m taken in one order may return in another
// (event loops take m as a command starts; the engine holds each shard's
// time to the latest it has seen). A clock whose monotonic source is not
// Mono reads as Now.
func (c *Real) NowAt(m int64) int64 {
	if !c.procMono {
		return c.Now()
	}
	if now, ok := c.fast(m); ok {
		return now
	}
	c.lock()
	w, m := c.sampleAt(m)
	now := c.advance(w, m)
	c.unlock()
	return now
}

// fast is the lock-free reading at m, if the fast path is open and m lies
// in its span.
func (c *Real) fast(m int64) (int64, bool) {
	s := c.seq.Load()
	if s&1 != 0 {
		return 0, false
	}
	from, until, off := c.from.Load(), c.until.Load(), c.off.Load()
	if c.seq.Load() != s || m < from || m >= until {
		return 0, false
	}
	return sat.Add(m, off), true
}

// lock takes the mutex and closes the fast path. Every reading the fast
// path gave was at an m read before the path closed, so no later than a
// monotonic reading taken now, and below until: the clock first takes a
// reading at the latest such m, on the line the fast path read from (a
// step that follows the wall clock, as those readings did). Whatever the
// holder then does starts from there, and cannot go below a value the
// fast path has already given.
func (c *Real) lock() {
	c.mu.Lock()
	if c.from.Load() == maxInt64 {
		return // closed: every reading since it closed went through mu
	}
	c.seq.Add(1)
	c.from.Store(maxInt64)
	c.seq.Add(1)
	if v := min(c.mono(), c.until.Load()-1); v > c.lastMono {
		c.advance(sat.Add(v, c.wallMono), v)
	}
}

// following reports whether the clock's last reading lies on the cached
// wall clock's line (last == lastMono + wallMono, no slew budget carried):
// then, until the cache expires, the reading at m is m + wallMono, and
// taking it changes nothing but last and lastMono, which stay on the line.
// It is computed, not remembered: a fresh wall reading that moves the
// line (Offset, at an m equal to lastMono) must close the path. c.mu must
// be held.
func (c *Real) following() bool {
	return c.last == sat.Add(c.lastMono, c.wallMono) && c.frac == 0
}

// unlock opens the fast path if the clock follows the wall clock through a
// cached wall reading, and releases the mutex.
func (c *Real) unlock() {
	if c.wallEvery > 0 && c.lastMono < c.wallNext && c.following() {
		c.seq.Add(1)
		c.off.Store(c.wallMono)
		c.until.Store(c.wallNext)
		c.from.Store(c.lastMono)
		c.seq.Add(1)
	}
	c.mu.Unlock()
}

// Resume sets the clock's reading to ns and goes on from there: advancing
// with the monotonic clock and slewing toward the wall clock at most
// SlewPPM, as after a start at a high-water mark. Unlike every other
// method it may move the reading back. It is for a clock whose readings
// were not the server's time: a replica's own clock, set to its primary's
// timeline on promotion (docs/clock.md, property 3).
func (c *Real) Resume(ns int64) {
	c.lock()
	_, m := c.sample(true)
	c.last, c.lastMono, c.frac = ns, m, 0
	c.unlock()
}

// Offset returns the clock's current difference from the wall clock,
// clock - wall, in ns: positive while the clock is ahead (after starting at a
// high-water mark ahead of the wall clock, or after the wall clock stepped
// back), 0 once it has converged. It reads the wall clock now, and takes a
// reading, so it also advances the clock like Now. INFO server shows it as
// clock_offset_ms.
func (c *Real) Offset() int64 {
	c.lock()
	now, w := c.read(true)
	c.unlock()
	return sat.Sub(now, w)
}

// sample returns the wall clock and the monotonic clock, reading the wall
// clock only if fresh or the cache has expired (see wallEvery). c.mu must be
// held, or c not yet shared.
func (c *Real) sample(fresh bool) (wall, mono int64) {
	if !fresh && c.wallEvery > 0 {
		return c.sampleAt(c.mono())
	}
	return c.sampleBoth()
}

// sampleAt is sample for the monotonic reading m, with the wall clock
// estimated from the cache (wallEvery > 0) unless it has expired.
func (c *Real) sampleAt(m int64) (wall, mono int64) {
	if m < c.wallNext {
		return sat.Add(m, c.wallMono), m
	}
	return c.sampleBoth()
}

// sampleBoth reads the wall and the monotonic clock, refreshing the cache.
func (c *Real) sampleBoth() (wall, mono int64) {
	w, m := c.both()
	if c.wallEvery > 0 {
		c.wallMono, c.wallNext = sat.Sub(w, m), sat.Add(m, c.wallEvery)
	}
	return w, m
}

// read takes a reading and returns it with the wall clock it was steered
// by. c.mu must be held.
func (c *Real) read(fresh bool) (now, wall int64) {
	w, m := c.sample(fresh)
	return c.advance(w, m), w
}

// advance moves the clock to the monotonic reading m, steered by the wall
// clock w, and returns the reading. c.mu must be held.
func (c *Real) advance(w, m int64) (now int64) {
	dm := sat.Sub(m, c.lastMono)
	if dm <= 0 {
		// No monotonic time elapsed (or the source went back, which Go's
		// does not): the clock stands still.
		return c.last
	}
	c.lastMono = m
	// bound = floor((dm*ppm + frac) / 1e6) without overflowing dm*ppm.
	r := (dm%1e6)*c.ppm + c.frac // < 1e12 + 1e6
	bound := sat.Add((dm/1e6)*c.ppm, r/1e6)
	free := sat.Add(c.last, dm)
	diff := sat.Sub(w, free)
	switch {
	case diff > bound:
		now, c.frac = free+bound, r%1e6
	case diff < -bound:
		now, c.frac = free-bound, r%1e6
	default: // met the wall clock: follow it, drop the unused budget
		now, c.frac = w, 0
	}
	if now < c.last { // only after saturation: ppm <= 1e6 means bound <= dm
		now = c.last
	}
	c.last = now
	return now
}

// Manual is a clock that moves only when told. The zero value is not
// usable; use NewManual.
type Manual struct {
	mu sync.Mutex
	ns int64
}

// NewManual returns a manual clock reading startNs (Unix ns).
func NewManual(startNs int64) *Manual { return &Manual{ns: startNs} }

// Now returns the current reading.
func (c *Manual) Now() int64 {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.ns
}

// NowAt is Now: the manual clock ignores the monotonic clock.
func (c *Manual) NowAt(int64) int64 { return c.Now() }

// Set moves the clock to ns. An earlier value than the current reading is
// refused with ErrBackwards and changes nothing; the same value is accepted.
func (c *Manual) Set(ns int64) error {
	c.mu.Lock()
	defer c.mu.Unlock()
	if ns < c.ns {
		return ErrBackwards
	}
	c.ns = ns
	return nil
}

// Resume sets the reading to ns, earlier or later (Real.Resume).
func (c *Manual) Resume(ns int64) {
	c.mu.Lock()
	c.ns = ns
	c.mu.Unlock()
}

// Advance moves the clock forward by d nanoseconds (d >= 0) and returns
// the new reading. A negative d or an overflow is refused.
func (c *Manual) Advance(d int64) (int64, error) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if d < 0 {
		return c.ns, ErrBackwards
	}
	if c.ns > maxInt64-d {
		return c.ns, errOverflow
	}
	c.ns += d
	return c.ns, nil
}

const (
	maxInt64 = 1<<63 - 1
	minInt64 = -1 << 63
)

var errOverflow = errors.New("clock: time out of range")

// ParseDuration parses a DEBUG CLOCK time or duration: a decimal integer,
// in milliseconds when bare, or with a unit suffix ns, us, ms or s. The
// result is in nanoseconds; values that overflow int64 are errors.
//
// Bare numbers are milliseconds here and seconds in ParsePeriod, on
// purpose: a DEBUG CLOCK time pairs with --clock-start, in Unix ms, while
// an RL.* period pairs with CL.THROTTLE's, in seconds (docs/clock.md,
// docs/algorithms.md). Both contracts are public; a unit suffix is never
// ambiguous.
func ParseDuration(s string) (int64, error) {
	mult := int64(time.Millisecond)
	num := s
	for _, u := range units {
		if len(s) > len(u.suffix) && s[len(s)-len(u.suffix):] == u.suffix {
			mult, num = u.mult, s[:len(s)-len(u.suffix)]
			break
		}
	}
	n, err := strconv.ParseInt(num, 10, 64)
	if err != nil {
		return 0, fmt.Errorf("clock: invalid time %q", s)
	}
	if n > maxInt64/mult || n < -maxInt64/mult {
		return 0, errOverflow
	}
	return n * mult, nil
}

// units is ordered so that "ms", "us" and "ns" are tried before "s".
var units = []struct {
	suffix string
	mult   int64
}{
	{"ns", 1}, {"us", int64(time.Microsecond)}, {"ms", int64(time.Millisecond)}, {"s", int64(time.Second)},
}

// MaxPeriod is the longest RL.* window or period: 10 years of 365 days.
const MaxPeriod = 3650 * 24 * time.Hour

// ParsePeriod parses an RL.* window or period (docs/algorithms.md): a decimal
// integer with a unit suffix ms, s, m, h or d, or bare seconds, from 1ms to
// MaxPeriod. The result is in nanoseconds. It does not allocate unless it
// fails.
func ParsePeriod(b []byte) (int64, error) {
	mult, num := int64(time.Second), b
	for _, u := range periodUnits {
		if len(b) > len(u.suffix) && string(b[len(b)-len(u.suffix):]) == u.suffix {
			mult, num = u.mult, b[:len(b)-len(u.suffix)]
			break
		}
	}
	limit := int64(MaxPeriod) / mult
	n := int64(0)
	for _, c := range num {
		if c < '0' || c > '9' {
			return 0, fmt.Errorf("clock: invalid period %q", b)
		}
		if n = n*10 + int64(c-'0'); n > limit {
			return 0, fmt.Errorf("clock: invalid period %q", b)
		}
	}
	if n <= 0 { // also an empty number
		return 0, fmt.Errorf("clock: invalid period %q", b)
	}
	return n * mult, nil
}

// periodUnits is ordered so that "ms" is tried before "s".
var periodUnits = []struct {
	suffix string
	mult   int64
}{
	{"ms", int64(time.Millisecond)}, {"s", int64(time.Second)}, {"m", int64(time.Minute)},
	{"h", int64(time.Hour)}, {"d", 24 * int64(time.Hour)},
}

// Every calls fn every interval of real (monotonic) time until ctx is
// done: the loop of the background tasks (expiry sweep, snapshots), which
// read the server clock themselves when they run.
func Every(ctx context.Context, interval time.Duration, fn func()) {
	t := time.NewTicker(interval)
	defer t.Stop()
	for {
		select {
		case <-ctx.Done():
			return
		case <-t.C:
			fn()
		}
	}
}

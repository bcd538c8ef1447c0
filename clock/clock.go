package clock

import (
	"errors"
	"fmt"
	"strconv"
	"sync"
	"sync/atomic"
	"time"
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

// Real is the production clock: the wall clock read once at construction,
// advanced by the monotonic clock. A wall-clock step after start does not
// move it.
type Real struct {
	start time.Time // carries a monotonic reading
	base  int64     // Unix ns at start
	last  atomic.Int64
}

// NewReal returns a real clock starting at startNs (Unix ns). Pass
// time.Now().UnixNano() for the wall clock.
func NewReal(startNs int64) *Real {
	return &Real{start: time.Now(), base: startNs}
}

// Now returns base + monotonic elapsed time, never less than a previous
// reading (the monotonic source is already non-decreasing; the max guards
// against any platform where it is not).
func (c *Real) Now() int64 {
	n := c.base + int64(time.Since(c.start))
	for {
		last := c.last.Load()
		if n <= last {
			return last
		}
		if c.last.CompareAndSwap(last, n) {
			return n
		}
	}
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

const maxInt64 = 1<<63 - 1

var errOverflow = errors.New("clock: time out of range")

// ParseDuration parses a DEBUG CLOCK time or duration: a decimal integer,
// in milliseconds when bare, or with a unit suffix ns, us, ms or s. The
// result is in nanoseconds; values that overflow int64 are errors.
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

// ParsePeriod parses an RL.* window or period (server.md): a decimal
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

package clock

import (
	"fmt"
	"math/rand/v2"
	"runtime"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
)

const (
	t0 = int64(1_700_000_000_000_000_000) // an arbitrary Unix ns start
	hr = int64(time.Hour)
)

// fakeTime is a wall clock and a monotonic clock the test moves by hand.
// It is read only from the goroutine that moves it.
type fakeTime struct{ wall, mono int64 }

// advance moves both clocks forward by d ns: a well-behaved wall clock.
func (f *fakeTime) advance(d int64) { f.wall += d; f.mono += d }

func (f *fakeTime) opts(highWater, ppm int64) RealOptions {
	return RealOptions{
		Wall:      func() int64 { return f.wall },
		Mono:      func() int64 { return f.mono },
		HighWater: highWater,
		SlewPPM:   ppm,
	}
}

// slewed is the reading expected m monotonic ns after a clock reading c
// started converging toward a wall clock off by off ns (wall - clock, at
// that moment), at ppm: it moves by floor(m*ppm/1e6) ns more or less than m
// until it has absorbed off, then reads the wall clock.
func slewed(c, off, m, ppm int64) int64 {
	adj := min(m*ppm/1e6, abs(off))
	if off < 0 {
		adj = -adj
	}
	return c + m + adj
}

func abs(x int64) int64 {
	if x < 0 {
		return -x
	}
	return x
}

// TestRealWallStep steps a well-behaved wall clock mid-run and reads the
// clock at a fixed interval: it never jumps or decreases, runs at exactly
// 1 ± ppm/1e6 of monotonic time (floor of the cumulative budget, however
// fine the readings) until it meets the wall clock, then follows it.
func TestRealWallStep(t *testing.T) {
	for _, tc := range []struct {
		name     string
		step     int64 // wall clock step, ns
		ppm      int64 // 0: default
		interval int64 // ns of monotonic time between readings
		meet     int64 // monotonic ns until the clock meets the wall clock
	}{
		{"back 1h, read every 7m13ns", -hr, 0, 7*int64(time.Minute) + 13, 100 * hr},
		{"forward 1h, read every 7m13ns", hr, 0, 7*int64(time.Minute) + 13, 100 * hr},
		{"back 1h, read hourly", -hr, 0, hr, 100 * hr},
		{"forward 1h, read hourly", hr, 0, hr, 100 * hr},
		{"back 1us, read every 37ns", -1000, 0, 37, 100_000},
		{"forward 1us, read every 1ns", 1000, 0, 1, 100_000},
		{"back 1s at 500ppm, read every 3s", -int64(time.Second), 500, 3 * int64(time.Second), 2000 * int64(time.Second)},
		{"back 1h at 100% (stands still)", -hr, 1_000_000, int64(time.Minute), hr},
		{"back 1h, ppm above 1e6 is 1e6", -hr, 5_000_000, int64(time.Minute), hr},
		{"forward 1h, ppm MaxInt64 is 1e6", hr, maxInt64, int64(time.Minute) + 999_999, hr},
	} {
		t.Run(tc.name, func(t *testing.T) {
			ppm := tc.ppm
			if ppm == 0 {
				ppm = DefaultSlewPPM
			}
			ppm = min(ppm, 1_000_000)
			f := &fakeTime{wall: t0, mono: -12345} // any monotonic origin
			c := NewRealWith(f.opts(0, tc.ppm))
			require.Equal(t, t0, c.Now())
			f.advance(int64(time.Minute))
			c1 := c.Now()
			require.Equal(t, t0+int64(time.Minute), c1, "follows a well-behaved wall clock")

			// Step, converge, then step back half-way and converge again: no
			// slew budget is carried over from the first convergence.
			for i, step := range []int64{tc.step, -tc.step / 2} {
				meet := tc.meet >> i // half the step, half the time
				f.wall += step
				require.Equal(t, c1, c.Now(), "a wall step does not move the clock")
				require.Equal(t, -step, c.Offset())

				prev, m := c1, int64(0)
				for m < meet+3*tc.interval {
					f.advance(tc.interval)
					m += tc.interval
					n := c.Now()
					require.GreaterOrEqual(t, n, prev)
					require.Equal(t, slewed(c1, step, m, ppm), n, "step %d, after %d ns", step, m)
					if m < meet {
						require.NotEqual(t, f.wall, n, "met the wall clock too early, after %d ns", m)
					} else {
						require.Equal(t, f.wall, n, "has met the wall clock after %d ns", m)
						require.Zero(t, c.Offset())
					}
					prev = n
				}
				c1 = prev
			}
		})
	}
}

// TestRealWallStepCheckpoints spells out a few readings of the 1-hour steps
// with plain numbers.
func TestRealWallStepCheckpoints(t *testing.T) {
	for _, tc := range []struct {
		name string
		step int64
		at   []int64 // monotonic ns after the step
		want []int64 // clock - t0 at those points
		off  []int64 // Offset at those points
	}{
		{
			"back 1h: 99% until met at 100h",
			-hr,
			[]int64{0, 1 * hr, 50 * hr, 99 * hr, 100 * hr, 101 * hr},
			[]int64{0, hr - 36*int64(time.Second), 49*hr + 30*int64(time.Minute), 98*hr + hr/100, 99 * hr, 100 * hr},
			[]int64{hr, hr - 36*int64(time.Second), hr / 2, hr / 100, 0, 0},
		},
		{
			"forward 1h: 101% until met at 100h",
			hr,
			[]int64{0, 1 * hr, 50 * hr, 99 * hr, 100 * hr, 101 * hr},
			[]int64{0, hr + 36*int64(time.Second), 50*hr + 30*int64(time.Minute), 99*hr + 99*hr/100, 101 * hr, 102 * hr},
			[]int64{-hr, -hr + 36*int64(time.Second), -hr / 2, -hr / 100, 0, 0},
		},
	} {
		t.Run(tc.name, func(t *testing.T) {
			f := &fakeTime{wall: t0}
			c := NewRealWith(f.opts(0, 0))
			f.wall += tc.step
			m := int64(0)
			for i, at := range tc.at {
				f.advance(at - m)
				m = at
				require.Equal(t, t0+tc.want[i], c.Now(), "at %v", time.Duration(at))
				require.Equal(t, tc.off[i], c.Offset(), "at %v", time.Duration(at))
			}
		})
	}
}

// TestRealHighWater covers the start rule: the clock starts at
// max(wall clock, high-water mark) and, when the mark is ahead, converges to
// the wall clock at 99%.
func TestRealHighWater(t *testing.T) {
	for _, tc := range []struct {
		name      string
		wall, hw  int64
		wantStart int64
		wantOff   int64
	}{
		{"mark 1h ahead of the wall clock", t0 - hr, t0, t0, hr},
		{"mark behind the wall clock", t0, t0 - hr, t0, 0},
		{"mark equal to the wall clock", t0, t0, t0, 0},
		{"no mark", t0, 0, t0, 0},
	} {
		t.Run(tc.name, func(t *testing.T) {
			f := &fakeTime{wall: tc.wall, mono: 999}
			c := NewRealWith(f.opts(tc.hw, 0))
			require.Equal(t, tc.wantOff, c.Offset())
			require.Equal(t, tc.wantStart, c.Now())
			f.advance(50 * hr)
			require.Equal(t, tc.wantStart+50*hr-min(tc.wantOff, hr/2), c.Now())
			f.advance(51 * hr)
			require.Equal(t, f.wall, c.Now(), "converged by 101h")
			require.Zero(t, c.Offset())
		})
	}

	t.Run("mark 1h ahead: 99% to 100h exactly", func(t *testing.T) {
		f := &fakeTime{wall: t0 - hr}
		c := NewRealWith(f.opts(t0, 0))
		require.Equal(t, t0, c.Now())
		f.advance(50 * hr)
		require.Equal(t, t0+50*hr*99/100, c.Now())
		require.Equal(t, hr/2, c.Offset())
		f.advance(50*hr - 1)
		require.Equal(t, t0+(100*hr-1)-(100*hr-1)/100, c.Now())
		require.Equal(t, int64(1), c.Offset(), "1ns short of the wall clock at 100h-1ns")
		f.advance(1)
		require.Equal(t, t0+99*hr, c.Now())
		require.Equal(t, f.wall, c.Now())
		f.advance(hr)
		require.Equal(t, t0+100*hr, c.Now(), "follows the wall clock at 101h")
	})
}

// TestRealMonoBackwards: a monotonic source that goes back counts as no
// time elapsed; the clock resumes from the highest monotonic reading.
func TestRealMonoBackwards(t *testing.T) {
	f := &fakeTime{wall: t0, mono: 1000}
	c := NewRealWith(f.opts(0, 0))
	f.advance(500)
	require.Equal(t, t0+500, c.Now())
	f.mono -= 300
	f.wall += 100
	require.Equal(t, t0+500, c.Now())
	f.mono += 300 + 200 // 200 ns past the highest reading
	// Free running gives t0+700; the wall clock reads t0+600; 1% of 200ns
	// lets it slew 2ns toward it.
	require.Equal(t, t0+698, c.Now())
}

// TestRealRandomWall drives the clock with an erratic wall clock (steps
// either way, stalls, wild values) and checks the rate bound on every
// reading and cumulatively: with the wall clock read at every reading, and
// with it cached, as the default clock does (the only configuration the
// lock-free path runs in), readings taken by Now, by Offset, and by Now
// right after an Offset at the same monotonic instant.
func TestRealRandomWall(t *testing.T) {
	for _, cached := range []bool{false, true} {
		for seed := uint64(1); seed <= 20; seed++ {
			r := rand.New(rand.NewPCG(seed, 42))
			ppm := []int64{1, 500, DefaultSlewPPM, 300_000, 1_000_000}[r.IntN(5)]
			f := &fakeTime{wall: t0 + r.Int64N(hr) - hr/2, mono: r.Int64N(1<<62) - 1<<61}
			hw := t0 + r.Int64N(hr) - hr/2
			c := NewRealWith(f.opts(hw, ppm))
			if cached {
				c = newReal(func() int64 { return f.mono }, func() (int64, int64) { return f.wall, f.mono }, 1000, hw, ppm)
			}
			start := c.Now()
			require.Equal(t, max(f.wall, hw), start)
			prev, m := start, int64(0)
			for i := 0; i < 5000; i++ {
				dm := []int64{0, 1, r.Int64N(1000), r.Int64N(int64(time.Second)), r.Int64N(hr)}[r.IntN(5)]
				f.advance(dm)
				m += dm
				switch r.IntN(10) {
				case 0:
					f.wall += r.Int64N(2*hr) - hr
				case 1:
					f.wall -= dm // a stalled wall clock
				case 2:
					f.wall += r.Int64N(1000) - 500
				}
				var n int64
				switch r.IntN(3) {
				case 0:
					n = c.Now()
				case 1:
					n = f.wall + c.Offset()
				default:
					_ = c.Offset()
					n = c.Now()
				}
				delta := n - prev
				require.GreaterOrEqual(t, delta, int64(0), "cached %v seed %d step %d", cached, seed, i)
				require.LessOrEqual(t, abs(delta-dm), dm*ppm/1e6+1, "cached %v seed %d step %d: per-reading rate bound", cached, seed, i)
				require.LessOrEqual(t, abs(n-start-m), m/1e6*ppm+(m%1e6)*ppm/1e6, "cached %v seed %d step %d: cumulative rate bound", cached, seed, i)
				prev = n
			}
		}
	}
}

// TestRealExtremes: huge monotonic gaps and wall clocks at the ends of the
// int64 range saturate instead of overflowing.
func TestRealExtremes(t *testing.T) {
	for _, tc := range []struct {
		name           string
		wall, mono, hw int64
		steps          [][2]int64 // {wall, mono} per reading
	}{
		{"mono jumps by MaxInt64, wall stuck", t0, minInt64, 0, [][2]int64{{t0, maxInt64}, {t0, maxInt64}}},
		{"mono wraps", 0, maxInt64 - 10, 0, [][2]int64{{20, minInt64 + 10}, {40, minInt64 + 30}}},
		{"wall at MinInt64", minInt64, 0, 0, [][2]int64{{minInt64, maxInt64 / 2}, {minInt64, maxInt64}}},
		{"wall at MaxInt64", maxInt64, 0, 0, [][2]int64{{maxInt64, hr}, {maxInt64, maxInt64}}},
		{"mark at MaxInt64, wall at MinInt64", minInt64, 0, maxInt64, [][2]int64{{minInt64, 1}, {minInt64, maxInt64}}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			f := &fakeTime{wall: tc.wall, mono: tc.mono}
			c := NewRealWith(f.opts(tc.hw, 0))
			prev := c.Now()
			for _, s := range tc.steps {
				f.wall, f.mono = s[0], s[1]
				n := c.Now()
				require.GreaterOrEqual(t, n, prev)
				prev = n
				_ = c.Offset()
			}
		})
	}
	t.Run("a 292-year gap slews by 1%", func(t *testing.T) {
		f := &fakeTime{wall: 0, mono: 0}
		c := NewRealWith(f.opts(0, 0))
		f.mono = maxInt64 // the wall clock stood still
		gap := int64(maxInt64)
		require.Equal(t, gap-(gap/1e6*DefaultSlewPPM+(gap%1e6)*DefaultSlewPPM/1e6), c.Now())
	})
}

// TestNewReal: NewReal(start) starts at start and advances with the
// process's monotonic clock, with no offset to its own wall clock.
func TestNewReal(t *testing.T) {
	before := time.Now()
	c := NewReal(t0)
	after := time.Now()
	n := c.Now()
	require.GreaterOrEqual(t, n, t0)
	require.LessOrEqual(t, n-t0, int64(time.Since(before)))
	for time.Since(after) < 2*time.Millisecond { // busy-wait: no sleeping
	}
	n = c.Now()
	require.GreaterOrEqual(t, n-t0, int64(2*time.Millisecond))
	require.LessOrEqual(t, n-t0, int64(time.Since(before)))
	require.Zero(t, c.Offset())
}

// TestRealDefaultWall: with default options the clock reads the wall clock.
func TestRealDefaultWall(t *testing.T) {
	before := time.Now().UnixNano()
	c := NewRealWith(RealOptions{})
	n := c.Now()
	require.GreaterOrEqual(t, n, before)
	require.LessOrEqual(t, n, time.Now().UnixNano())
	require.Equal(t, int64(DefaultSlewPPM), c.ppm)
	require.Equal(t, int64(DefaultSlewPPM), NewRealWith(RealOptions{SlewPPM: -5}).ppm)
}

func BenchmarkRealNow(b *testing.B) {
	for _, bc := range []struct {
		name string
		c    *Real
	}{
		{"default", NewRealWith(RealOptions{})},
		{"NewReal", NewReal(t0)},
	} {
		b.Run(bc.name, func(b *testing.B) {
			b.ReportAllocs()
			for b.Loop() {
				bc.c.Now()
			}
		})
		b.Run(bc.name+"/parallel", func(b *testing.B) {
			b.ReportAllocs()
			b.RunParallel(func(pb *testing.PB) {
				for pb.Next() {
					bc.c.Now()
				}
			})
		})
	}
}

// BenchmarkTimeNow is the floor: one time.Now() per reading.
func BenchmarkTimeNow(b *testing.B) {
	b.ReportAllocs()
	for b.Loop() {
		_ = time.Now().UnixNano()
	}
}

// TestRealWallCache drives the wall-clock cache of the default clock with
// fake clocks: Now reads the wall clock only once per wallEvery of monotonic
// time and extrapolates it in between; Offset always reads it.
func TestRealWallCache(t *testing.T) {
	f := &fakeTime{wall: t0}
	reads := 0
	c := newReal(func() int64 { return f.mono }, func() (int64, int64) {
		reads++
		return f.wall, f.mono
	}, 1000, 0, 0)
	require.Equal(t, 1, reads)
	for _, step := range []struct {
		advance, wallStep int64
		offset            bool  // call Offset instead of Now
		want              int64 // reading - t0 (or Offset)
		reads             int
	}{
		{advance: 400, want: 400, reads: 1},
		{advance: 100, wallStep: -hr, want: 500, reads: 1},            // the step is not seen yet
		{advance: 499, want: 999, reads: 1},                           // 1ns before the cache expires
		{advance: 1, want: 1000, reads: 2},                            // seen; dm = 1: 0.01ns of budget, carried
		{advance: 999, want: 1999 - 10, reads: 2},                     // extrapolated wall; 1% of 1000ns
		{offset: true, want: hr - 10, reads: 3},                       // Offset reads the wall clock
		{advance: 1, want: 2000 - 10, reads: 3},                       // 0.01ns of budget, carried
		{advance: 1000, wallStep: hr - 15, want: 3000 - 15, reads: 4}, // wall 5ns behind, budget 10.01: met
		{advance: 100, want: 3100 - 15, reads: 4},                     // follows the extrapolated wall clock
		{advance: 899, want: 3999 - 15, reads: 4},                     // next wall read due at 3000 + 1000
		{advance: 1, want: 4000 - 15, reads: 5},
	} {
		f.advance(step.advance)
		f.wall += step.wallStep
		if step.offset {
			require.Equal(t, step.want, c.Offset())
		} else {
			require.Equal(t, t0+step.want, c.Now())
		}
		require.Equal(t, step.reads, reads)
	}
}

// TestRealNowAt: the default clock read at a Mono reading the caller took
// is the clock at that instant: between readings taken just before and
// just after, never behind a reading already given (an older m reads as
// that one), and as Now for clocks whose source is not Mono.
func TestRealNowAt(t *testing.T) {
	c := NewRealWith(RealOptions{})
	prev := int64(0)
	for i := 0; i < 1000; i++ {
		before := c.Now()
		m := Mono()
		at := c.NowAt(m)
		after := c.Now()
		require.GreaterOrEqual(t, at, before)
		require.LessOrEqual(t, at, after)
		require.GreaterOrEqual(t, at, prev)
		prev = at
	}
	stale := Mono() - int64(time.Second) // older than every reading so far
	before := c.Now()
	at := c.NowAt(stale)
	require.GreaterOrEqual(t, at, before, "a stale reading must not take the clock back")
	require.LessOrEqual(t, at, c.Now())

	// A clock on another monotonic source ignores m.
	var mono atomic.Int64
	mono.Store(5e9)
	other := NewRealWith(RealOptions{Mono: mono.Load, Wall: func() int64 { return t0 + mono.Load() }})
	require.Equal(t, other.Now(), other.NowAt(123))
	m := NewManual(t0)
	require.Equal(t, int64(t0), m.NowAt(Mono()))
}

// TestRealConcurrent: with readers on many goroutines, a reading never
// returns less than one that had returned before it began (NowAt: before
// its m was taken), while another goroutine keeps stepping the wall clock
// either way and reading Offset (run with -race). The clocks:
//   - default, NewReal: the production clocks;
//   - stepping: a custom Wall stepping an hour either way, read at every
//     reading, so every reading takes the lock;
//   - fast path: the wall clock cached for 2 µs and stepped by a few µs,
//     so the clock keeps switching between following it (the lock-free
//     path open) and slewing toward it (closed), at 100%, so a locked
//     reading that ignored what the lock-free path gave would stand below
//     it.
func TestRealConcurrent(t *testing.T) {
	var step, fastStep atomic.Int64 // (fast starts on the wall clock, whatever the others left)
	fast := newReal(Mono, func() (int64, int64) {
		now := time.Now()
		return now.UnixNano() + fastStep.Load(), int64(now.Sub(monoOrigin))
	}, 2000, 0, maxSlewPPM)
	fast.procMono = true
	bigSteps := func(c *Real, i int64) {
		step.Store((i%3 - 1) * hr)
		_ = c.Offset()
	}
	for _, tc := range []struct {
		name  string
		c     *Real
		stepr func(c *Real, i int64)
	}{
		{"default", NewRealWith(RealOptions{}), bigSteps},
		{"NewReal", NewReal(t0), bigSteps},
		{"stepping", NewRealWith(RealOptions{Wall: func() int64 { return time.Now().UnixNano() + step.Load() }}), bigSteps},
		{"fast path", fast, func(c *Real, i int64) {
			// Steps absorbed in microseconds: the path reopens often.
			fastStep.Store((i%5 - 2) * 3000)
			if i%64 == 0 {
				_ = c.Offset()
			}
			runtime.Gosched()
		}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			c := tc.c
			stop := make(chan struct{})
			var stepper sync.WaitGroup
			stepper.Go(func() {
				for i := int64(0); ; i++ {
					select {
					case <-stop:
						return
					default:
					}
					tc.stepr(c, i)
				}
			})
			var done atomic.Int64 // the largest reading returned so far
			var wg sync.WaitGroup
			var fastHits atomic.Int64
			bad := make(chan string, 8)
			for g := 0; g < 8; g++ {
				wg.Go(func() {
					for i := 0; i < 20000; i++ {
						floor := done.Load()
						var v int64
						if i%2 == 0 {
							v = c.Now()
						} else {
							m := Mono()
							if _, ok := c.fast(m); ok {
								fastHits.Add(1)
							}
							v = c.NowAt(m)
						}
						if v < floor {
							bad <- fmt.Sprintf("reading %d below %d, returned before it began", v, floor)
							return
						}
						for d := done.Load(); v > d && !done.CompareAndSwap(d, v); d = done.Load() {
						}
					}
				})
			}
			wg.Wait()
			close(stop)
			stepper.Wait()
			close(bad)
			for msg := range bad {
				t.Fatal(msg)
			}
			if c == fast {
				require.Positive(t, fastHits.Load(), "the fast path was never open")
			}
		})
	}
}

// TestRealFastPathMatchesTheLock: readings through the fast path are the
// readings the locked path gives at the same m, and the path closes while
// the clock slews and reopens once it follows the wall clock again.
func TestRealFastPathMatchesTheLock(t *testing.T) {
	f := &fakeTime{wall: t0}
	c := newReal(func() int64 { return f.mono }, func() (int64, int64) { return f.wall, f.mono }, 1000, 0, 0)
	open := func() bool { return c.from.Load() != maxInt64 }
	locked := func() int64 { // the reading under the lock at f.mono
		c.lock()
		defer c.unlock()
		now, _ := c.read(false)
		return now
	}
	require.True(t, open(), "following from the start")
	f.advance(300)
	v, ok := c.fast(f.mono)
	require.True(t, ok)
	require.Equal(t, t0+300, v)
	require.Equal(t, v, locked())
	require.True(t, open(), "reopened by the locked reading")

	f.advance(800) // past the cache: the wall is read, 100 ns behind
	f.wall -= 100
	_, ok = c.fast(f.mono)
	require.False(t, ok, "the cache expired")
	// Closing the path took a reading at 999, the last m the fast path
	// could have read at, so the slew runs from there: 1% of 101 ns.
	require.Equal(t, t0+1100-1, c.Now())
	require.False(t, open(), "closed while slewing")
	f.advance(10_000) // budget 100 ns: meets the wall clock
	require.Equal(t, t0+11_100-100, c.Now())
	require.True(t, open(), "open again once following")
	f.advance(500)
	v, ok = c.fast(f.mono)
	require.True(t, ok)
	require.Equal(t, t0+11_600-100, v)
	require.Equal(t, v, locked())
}

// TestRealOffsetMovesTheLine: Offset reads the wall clock afresh, and may
// do so at the very monotonic instant of the clock's last reading (the
// path's closing reading has just been taken, and a coarse monotonic
// source has not ticked). A wall clock that stepped either way must then
// be slewed toward, not taken as the new line of the fast path: the clock
// neither goes back nor jumps.
func TestRealOffsetMovesTheLine(t *testing.T) {
	for _, step := range []int64{-hr, hr, -3, 3} {
		f := &fakeTime{wall: t0}
		c := newReal(func() int64 { return f.mono }, func() (int64, int64) { return f.wall, f.mono }, 1000, 0, 0)
		f.advance(100)
		before := c.Now()
		require.Equal(t, t0+100, before)
		f.wall += step
		require.Equal(t, -step, c.Offset(), "step %d", step)
		f.advance(1)
		after := c.Now()
		require.GreaterOrEqual(t, after, before, "step %d: went back", step)
		require.LessOrEqual(t, after-before, int64(1), "step %d: jumped", step)
	}
	// Through the public API: a custom Mono that stands still across
	// Offset while the real wall clock moves on.
	var m atomic.Int64
	m.Store(1000)
	c := NewRealWith(RealOptions{Mono: m.Load})
	before := c.Now()
	for deadline := time.Now().Add(time.Millisecond); time.Now().Before(deadline); {
	} // the wall clock moves on
	_ = c.Offset()
	m.Add(1)
	require.LessOrEqual(t, c.Now()-before, int64(1), "jumped in 1 ns of monotonic time")
}

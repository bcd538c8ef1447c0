// Package worstcase replays adversarial and ordinary request streams
// through a real rlserver (over RESP, with the manual clock) against every
// limiter, and measures what each one admits: in total, and at worst in
// any rolling window. It reproduces the table of
// docs/algorithms.md and renders it as Markdown and SVG.
package worstcase

import (
	"context"
	"fmt"
	"math/rand/v2"
	"slices"
	"strconv"
	"time"

	"github.com/rlserver/rlserver/node"
	"github.com/rlserver/rlserver/server"
)

// Window is the limit's window (1000 ms) and Limit its size (10), as in
// docs/algorithms.md's worst-case section; the bucket refills 10 per second.
const (
	Window = int64(time.Second)
	Limit  = 10
)

// Algorithm is one limiter and the command that asks it, limit 10 per s.
type Algorithm struct {
	Name string
	Args func(key string) []string
}

// Algorithms are the five limiters, configured alike: 10 per 1000 ms
// (RL.BUCKET and CL.THROTTLE: 10 tokens, refilled at 10 per second).
var Algorithms = []Algorithm{
	{"RL.FIXED", func(k string) []string { return []string{"RL.FIXED", k, "10", "1000ms"} }},
	{"RL.LOG", func(k string) []string { return []string{"RL.LOG", k, "10", "1000ms"} }},
	{"RL.SLIDE", func(k string) []string { return []string{"RL.SLIDE", k, "10", "1000ms"} }},
	{"RL.BUCKET", func(k string) []string { return []string{"RL.BUCKET", k, "10", "10", "1000ms"} }},
	{"CL.THROTTLE", func(k string) []string { return []string{"CL.THROTTLE", k, "9", "10", "1"} }},
}

// Reservers are the limiters that take reservations, each request
// waiting up to 1 s for its turn (RESERVE 1s; docs/reservations.md): what
// they admit is counted at the time each unit acts, not when it was asked
// for.
var Reservers = []Algorithm{
	{"RL.FIXED RESERVE 1s", func(k string) []string { return []string{"RL.FIXED", k, "10", "1000ms", "RESERVE", "1s"} }},
	{"RL.LOG RESERVE 1s", func(k string) []string { return []string{"RL.LOG", k, "10", "1000ms", "RESERVE", "1s"} }},
	{"RL.BUCKET RESERVE 1s", func(k string) []string { return []string{"RL.BUCKET", k, "10", "10", "1000ms", "RESERVE", "1s"} }},
}

// Stream is a sequence of request times, in ns from a window-aligned
// origin, non-decreasing.
type Stream struct {
	Name  string
	Times []int64
}

// Family is a named set of streams reported together.
type Family struct {
	Name    string
	Streams []Stream
}

func ms(v float64) int64 { return int64(v * float64(time.Millisecond)) }

// SpecStreams are docs/algorithms.md's four public streams.
func SpecStreams() []Family {
	var a, b, c, d []int64
	for i := 0; i < 10; i++ {
		a = append(a, ms(float64(900+10*i)))
	}
	for i := 0; i < 10; i++ {
		a = append(a, ms(float64(1000+10*i)))
	}
	for i := 0; i < 300; i++ {
		// round(i*1000/30) ms, with ties rounded half up
		b = append(b, int64((i*1000+15)/30)*int64(time.Millisecond))
	}
	for i := 0; i < 100; i++ {
		c = append(c, ms(float64(i*100)))
	}
	for t := 900; t <= 2898; t += 2 {
		d = append(d, ms(float64(t)))
	}
	return []Family{
		{"A boundary burst", []Stream{{"A", a}}},
		{"B flood", []Stream{{"B", b}}},
		{"C compliant", []Stream{{"C", c}}},
		{"D back-loaded", []Stream{{"D", d}}},
	}
}

// SweepRates are the flood rates of the sweep, requests per second.
var SweepRates = []int{1000, 500, 200, 100, 50, 20}

// SweepStreams: silence for an offset of 0 to 990 ms (10 ms steps), then a
// flood at each of SweepRates for 3 s: 600 streams that probe every
// alignment of a burst against window boundaries and refill ticks.
func SweepStreams(offsets []int) Family {
	f := Family{Name: fmt.Sprintf("sweep (%d shaped streams)", len(offsets)*len(SweepRates))}
	for _, rate := range SweepRates {
		for _, off := range offsets {
			var ts []int64
			step := int64(time.Second) / int64(rate)
			for i := int64(0); i < 3*int64(rate); i++ {
				ts = append(ts, ms(float64(off))+i*step)
			}
			f.Streams = append(f.Streams, Stream{fmt.Sprintf("off%d-rate%d", off, rate), ts})
		}
	}
	return f
}

// AllOffsets are the sweep's silence offsets: 0, 10, ..., 990 ms.
func AllOffsets() []int {
	var o []int
	for off := 0; off < 1000; off += 10 {
		o = append(o, off)
	}
	return o
}

// RandomStreams are seeded bursty streams: bursts of 1 to 40 requests
// 0-5 ms apart, separated by gaps of 0-1500 ms, over 10 s.
func RandomStreams(seed uint64, n int) Family {
	f := Family{Name: fmt.Sprintf("random bursty (%d streams, seed %d)", n, seed)}
	r := rand.New(rand.NewPCG(seed, 0x5eed))
	for s := 0; s < n; s++ {
		var ts []int64
		t := int64(0)
		for t < 10*Window {
			burst := 1 + r.IntN(40)
			for i := 0; i < burst; i++ {
				ts = append(ts, t)
				t += int64(r.IntN(6)) * int64(time.Millisecond)
			}
			t += int64(r.IntN(1501))*int64(time.Millisecond) + int64(r.IntN(1_000_000))
		}
		f.Streams = append(f.Streams, Stream{fmt.Sprintf("random-%d", s), ts})
	}
	return f
}

// PollStream is docs/algorithms.md's "token bucket without flooring" case: one
// request every 20 ms for 10 s.
func PollStream() Stream {
	var ts []int64
	for i := 0; i < 500; i++ {
		ts = append(ts, int64(i)*20*int64(time.Millisecond))
	}
	return Stream{"poll every 20 ms", ts}
}

// Outcome is what one algorithm admitted of one stream.
type Outcome struct {
	Requests int
	// Admitted are the times the admitted requests act, ascending: when
	// they were made, or for a reservation its ticket's time.
	Admitted []int64
}

// Peak is the most admissions inside any half-open interval of length
// Window.
func Peak(admitted []int64) int {
	best, j := 0, 0
	for i := range admitted {
		for admitted[i]-admitted[j] >= Window {
			j++
		}
		best = max(best, i-j+1)
	}
	return best
}

// Row is one (algorithm, family) result.
type Row struct {
	Algorithm, Family string
	Streams           int
	Requests          int
	Admitted          int
	Peak              int // worst over the family's streams
}

// Runner replays streams against one server.
type Runner struct {
	c    *client
	base int64 // next free window-aligned origin, Unix ns
	seq  int
}

// NewRunner connects to a server started with --clock manual.
func NewRunner(addr string) (*Runner, error) {
	c, err := dial(addr)
	if err != nil {
		return nil, err
	}
	now, err := c.do("DEBUG", "CLOCK", "GET")
	if err != nil {
		c.close()
		return nil, fmt.Errorf("the server must run with --clock manual: %w", err)
	}
	return &Runner{c: c, base: (now[0]/Window + 2) * Window}, nil
}

// Close closes the connection.
func (r *Runner) Close() error { return r.c.close() }

// Play replays stream s for algorithm a on a fresh key, with the clock set
// before each request, pipelined, and returns the admissions.
func (r *Runner) Play(a Algorithm, s Stream) (Outcome, error) {
	return r.PlayArgs(a.Args, s)
}

// PlayArgs is Play with an explicit command builder.
func (r *Runner) PlayArgs(args func(string) []string, s Stream) (Outcome, error) {
	r.seq++
	key := "wc:" + strconv.Itoa(r.seq)
	origin := r.base
	out := Outcome{Requests: len(s.Times)}
	const batch = 512
	for start := 0; start < len(s.Times); start += batch {
		end := min(start+batch, len(s.Times))
		for _, t := range s.Times[start:end] {
			r.c.send("DEBUG", "CLOCK", "SET", strconv.FormatInt(origin+t, 10)+"ns")
			r.c.send(args(key)...)
		}
		if err := r.c.flush(); err != nil {
			return out, err
		}
		for _, t := range s.Times[start:end] {
			if _, err := r.c.reply(); err != nil {
				return out, err
			}
			rep, err := r.c.reply()
			if err != nil {
				return out, err
			}
			// A limiter's five integers; a reservation's add the wait and
			// the ticket, nil (and so absent here) when it acts now.
			if len(rep) < 5 || len(rep) > 7 {
				return out, fmt.Errorf("unexpected limiter reply %v", rep)
			}
			if rep[0] == 0 {
				at := t
				if len(rep) == 7 {
					at = rep[6] - origin
				}
				out.Admitted = append(out.Admitted, at)
			}
		}
	}
	slices.Sort(out.Admitted)
	last := int64(0)
	if n := len(s.Times); n > 0 {
		last = s.Times[n-1] + 2*Window // a reservation acts up to 1 s later
	}
	r.base = origin + (last/Window+3)*Window // next stream starts aligned, well clear of this one
	return out, nil
}

// RunFamily plays every stream of f for a.
func (r *Runner) RunFamily(a Algorithm, f Family) (Row, error) {
	row := Row{Algorithm: a.Name, Family: f.Name, Streams: len(f.Streams)}
	for _, s := range f.Streams {
		o, err := r.Play(a, s)
		if err != nil {
			return row, fmt.Errorf("%s, %s: %w", a.Name, s.Name, err)
		}
		row.Requests += o.Requests
		row.Admitted += len(o.Admitted)
		row.Peak = max(row.Peak, Peak(o.Admitted))
	}
	return row, nil
}

// StartInProcess starts an rlserver with the manual clock on 127.0.0.1:0
// and returns its address and a stop function.
func StartInProcess() (string, func(), error) {
	s, err := server.Start(server.Options{
		Config: node.Config{Bind: "127.0.0.1", Port: 0, Dir: ".", Shards: 16, ClockMode: "manual",
			MaxClients: 100, Limits: node.DefaultLimits},
		ClockStart: 1_700_000_000_000_000_000,
	})
	if err != nil {
		return "", nil, err
	}
	return s.Addr.String(), func() {
		ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
		defer cancel()
		s.Close(ctx)
	}, nil
}

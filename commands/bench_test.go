package commands

import (
	"fmt"
	"strconv"
	"sync/atomic"
	"testing"

	"github.com/rlserver/rlserver/clock"
	"github.com/rlserver/rlserver/engine"
)

// discard is a Writer that drops replies, so the benchmark measures the
// dispatcher, the handler and the engine only.
type discard struct{}

func (discard) Proto() int        { return 2 }
func (discard) Simple(string)     {}
func (discard) Error(string)      {}
func (discard) Int(int64)         {}
func (discard) Bulk([]byte)       {}
func (discard) BulkString(string) {}
func (discard) Null()             {}
func (discard) NullArray()        {}
func (discard) Array(int)         {}
func (discard) Map(int)           {}
func (discard) Set(int)           {}
func (discard) Verbatim(string)   {}

// recorder is a Writer that keeps the last reply, flattened into
// space-separated RESP-typed tokens ("*5 :0 :16 :15 :-1 :2", "+PONG"), and
// counts error replies. Once its buffer has grown, recording allocates
// nothing.
type recorder struct {
	buf    []byte
	errors int
}

func (r *recorder) reset() { r.buf = r.buf[:0] }

func (r *recorder) token(prefix byte, s string) {
	if len(r.buf) > 0 {
		r.buf = append(r.buf, ' ')
	}
	r.buf = append(append(r.buf, prefix), s...)
}

func (r *recorder) count(prefix byte, n int64) {
	r.token(prefix, "")
	r.buf = strconv.AppendInt(r.buf, n, 10)
}

func (*recorder) Proto() int            { return 2 }
func (r *recorder) Simple(s string)     { r.token('+', s) }
func (r *recorder) Error(s string)      { r.errors++; r.token('-', s) }
func (r *recorder) Int(n int64)         { r.count(':', n) }
func (r *recorder) Bulk(b []byte)       { r.token('$', string(b)) }
func (r *recorder) BulkString(s string) { r.token('$', s) }
func (r *recorder) Null()               { r.token('$', "-1") }
func (r *recorder) NullArray()          { r.token('*', "-1") }
func (r *recorder) Array(n int)         { r.count('*', int64(n)) }
func (r *recorder) Map(n int)           { r.count('%', int64(n)) }
func (r *recorder) Set(n int)           { r.count('~', int64(n)) }
func (r *recorder) Verbatim(s string)   { r.token('=', s) }

// argv is a command's arguments as Exec takes them.
func argv(args ...string) [][]byte {
	b := make([][]byte, len(args))
	for i, a := range args {
		b[i] = []byte(a)
	}
	return b
}

// BenchmarkDispatch runs commands through Server.Exec: lookup, arity,
// auth and key checks, the clock read, the handler and the engine.
func BenchmarkDispatch(b *testing.B) {
	for _, tc := range []struct {
		name string
		args []string
	}{
		{"PING", []string{"PING"}},
		{"CL.THROTTLE", []string{"CL.THROTTLE", "user:123", "15", "30", "60", "1"}},
		{"GET", []string{"get", "user:123"}},
		{"RL.FIXED", []string{"RL.FIXED", "user:123:f", "100", "60s"}},
		{"RL.BUCKET", []string{"RL.BUCKET", "user:123:b", "100", "100", "60s"}},
	} {
		b.Run(tc.name, func(b *testing.B) {
			s := NewServer(Config{Shards: 16, MaxClients: 10}, engine.New(16), clock.NewReal(1_700_000_000_000_000_000), nil, nil)
			c, _ := s.NewClient("bench", "bench", nil)
			args := argv(tc.args...)
			s.Exec(c, argv("CL.THROTTLE", "user:123", "15", "30", "60"), discard{})
			b.ReportAllocs()
			b.ResetTimer()
			for i := 0; i < b.N; i++ {
				s.Exec(c, args, discard{})
			}
		})
	}
}

// TestHotPathAllocatesNothing keeps the CL.THROTTLE dispatch path free of
// allocations (a regression here costs GC time at every request). The
// clock stands still, so every reply is known: the first call's and the
// last measured call's are checked, and no call may answer an error (a
// hot path that fails cheaply does not pass).
func TestHotPathAllocatesNothing(t *testing.T) {
	s := NewServer(Config{Shards: 16, MaxClients: 10}, engine.New(16), clock.NewManual(1_700_000_000_000_000_000), nil, nil)
	c, _ := s.NewClient("t", "t", nil)
	for _, tc := range []struct {
		cmd         []string
		first, last string // the last of 1 + 1001 calls (AllocsPerRun warms up once)
	}{
		{[]string{"CL.THROTTLE", "user:123", "15", "30", "60", "1"}, "*5 :0 :16 :15 :-1 :2", "*5 :1 :16 :0 :2 :32"},
		{[]string{"cl.throttle", "user:123", "15", "30", "60"}, "*5 :1 :16 :0 :2 :32", "*5 :1 :16 :0 :2 :32"},
		{[]string{"PING"}, "+PONG", "+PONG"},
		{[]string{"PTTL", "user:123"}, ":32000", ":32000"},
		{[]string{"RL.FIXED", "f", "100", "60s"}, "*5 :0 :100 :99 :-1 :40000", "*5 :1 :100 :0 :40000 :40000"},
		{[]string{"RL.SLIDE", "s", "100", "60s"}, "*5 :0 :100 :99 :-1 :100000", "*5 :1 :100 :0 :40001 :100000"},
		{[]string{"RL.BUCKET", "b", "100", "100", "60s"}, "*5 :0 :100 :99 :-1 :600", "*5 :1 :100 :0 :600 :60000"},
		{[]string{"RL.LOG", "l", "1000000", "60s"}, "*5 :0 :1000000 :999999 :-1 :60000", "*5 :0 :1000000 :998998 :-1 :60000"},
	} {
		cmd := tc.cmd
		args := argv(cmd...)
		w := &recorder{buf: make([]byte, 0, 256)}
		s.Exec(c, args, w)
		if got := string(w.buf); got != tc.first {
			t.Errorf("%v: first reply %q, want %q", cmd, got, tc.first)
		}
		if n := testing.AllocsPerRun(1000, func() { w.reset(); s.Exec(c, args, w) }); n != 0 {
			t.Errorf("%v: %v allocations per command, want 0", cmd, n)
		}
		if got := string(w.buf); got != tc.last {
			t.Errorf("%v: last reply %q, want %q", cmd, got, tc.last)
		}
		if w.errors != 0 {
			t.Errorf("%v: %d error replies", cmd, w.errors)
		}
	}
}

// BenchmarkDispatchParallel runs commands through Server.Exec from
// GOMAXPROCS goroutines at once, each its own client, as event loops on
// separate cores do: what the goroutines share (statistics counters, the
// clock) shows as time per command growing with -cpu.
func BenchmarkDispatchParallel(b *testing.B) {
	for _, tc := range []struct {
		name string
		args []string
	}{
		{"PING", []string{"PING"}},
		{"CL.THROTTLE", []string{"CL.THROTTLE", "user:", "15", "30", "60", "1"}},
	} {
		b.Run(tc.name, func(b *testing.B) {
			s := NewServer(Config{Shards: 16, MaxClients: 1000}, engine.New(16), clock.NewRealWith(clock.RealOptions{}), nil, nil)
			var next atomic.Int64
			b.ReportAllocs()
			b.RunParallel(func(pb *testing.PB) {
				c, _ := s.NewClient("bench", "bench", nil)
				i := int(next.Add(1)) - 1
				c.SetStripe(i) // as event loop i would
				args := argv(tc.args...)
				if len(args) > 1 { // a key of its own: no shard lock shared
					args[1] = fmt.Appendf(args[1], "%d", i)
				}
				for pb.Next() {
					s.Exec(c, args, discard{})
				}
			})
		})
	}
}

package commands

import (
	"fmt"
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
// allocations (a regression here costs GC time at every request).
func TestHotPathAllocatesNothing(t *testing.T) {
	s := NewServer(Config{Shards: 16, MaxClients: 10}, engine.New(16), clock.NewManual(1_700_000_000_000_000_000), nil, nil)
	c, _ := s.NewClient("t", "t", nil)
	for _, cmd := range [][]string{
		{"CL.THROTTLE", "user:123", "15", "30", "60", "1"},
		{"cl.throttle", "user:123", "15", "30", "60"},
		{"PING"},
		{"PTTL", "user:123"},
		{"RL.FIXED", "f", "100", "60s"},
		{"RL.SLIDE", "s", "100", "60s"},
		{"RL.BUCKET", "b", "100", "100", "60s"},
		{"RL.LOG", "l", "1000000", "60s"},
	} {
		args := argv(cmd...)
		s.Exec(c, args, discard{})
		if n := testing.AllocsPerRun(1000, func() { s.Exec(c, args, discard{}) }); n != 0 {
			t.Errorf("%v: %v allocations per command, want 0", cmd, n)
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

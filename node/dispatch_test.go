package node_test

import (
	"fmt"
	"math/rand/v2"
	"os"
	"path/filepath"
	"strings"
	"sync/atomic"
	"testing"

	"github.com/rlserver/rlserver/clock"
	"github.com/rlserver/rlserver/cluster"
	"github.com/rlserver/rlserver/engine"
	"github.com/rlserver/rlserver/internal/rltest"
	"github.com/rlserver/rlserver/node"
)

// BenchmarkDispatch runs commands through Node.Exec: lookup, arity,
// auth and key checks, the clock read, the handler and the engine; under
// cluster/, the same on a node in cluster mode deciding every slot (the
// routing check's cost).
func BenchmarkDispatch(b *testing.B) {
	b.Run("standalone", func(b *testing.B) { benchDispatch(b, false, false) })
	b.Run("cluster", func(b *testing.B) { benchDispatch(b, true, false) })
	b.Run("loop", func(b *testing.B) { benchDispatch(b, false, true) })
}

// oneShard is a map of one primary deciding every slot.
var oneShard = fmt.Sprintf("%s 127.0.0.1:7301@17301 master - 0 0 1 connected 0-16383\n", strings.Repeat("a", 40))

// benchDispatch runs the commands on one client; looped, as an event
// loop serves it, in batches of 16 (a pipeline at P=16).
func benchDispatch(b *testing.B, inCluster, looped bool) {
	for _, tc := range []struct {
		name string
		args []string
	}{
		{"PING", []string{"PING"}},
		{"CL.THROTTLE", []string{"CL.THROTTLE", "user:123", "15", "30", "60", "1"}},
		{"GET", []string{"get", "user:123"}},
		{"RL.FIXED", []string{"RL.FIXED", "user:123:f", "100", "60s"}},
		{"RL.BUCKET", []string{"RL.BUCKET", "user:123:b", "100", "100", "60s"}},
		{"RL.SLIDE", []string{"RL.SLIDE", "user:123:s", "100", "60s"}},
		// Three limits as one, each admitting (the real clock moves on):
		// what it costs against the single limiters above.
		{"RL.ALL3", []string{"RL.ALL", "{t}:u:s", "BUCKET", "1000000000", "1000000000", "1s",
			"AND", "{t}:u:d", "FIXED", "1000000000", "1d", "AND", "{t}", "SLIDE", "1000000000", "1m"}},
	} {
		b.Run(tc.name, func(b *testing.B) {
			s := node.New(node.Config{Shards: 16, MaxClients: 10}, engine.New(16), clock.NewReal(1_700_000_000_000_000_000), node.Options{})
			if inCluster {
				setCluster(b, s, oneShard, strings.Repeat("a", 40))
			}
			c, _ := s.NewClient("bench", "bench", nil)
			args := rltest.Argv(tc.args...)
			s.Exec(c, rltest.Argv("CL.THROTTLE", "user:123", "15", "30", "60"), rltest.Discard{})
			b.ReportAllocs()
			b.ResetTimer()
			if looped {
				c.SetLooped()
				for i := 0; i < b.N; i += 16 {
					c.BeginBatch()
					for range min(16, b.N-i) {
						s.Exec(c, args, rltest.Discard{})
					}
					c.EndBatch()
				}
				return
			}
			for i := 0; i < b.N; i++ {
				s.Exec(c, args, rltest.Discard{})
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
	t.Run("standalone", func(t *testing.T) { hotPathAllocatesNothing(t, false) })
	t.Run("cluster", func(t *testing.T) { hotPathAllocatesNothing(t, true) })
}

func hotPathAllocatesNothing(t *testing.T, inCluster bool) {
	s := node.New(node.Config{Shards: 16, MaxClients: 10}, engine.New(16), clock.NewManual(1_700_000_000_000_000_000), node.Options{})
	if inCluster {
		setCluster(t, s, oneShard, strings.Repeat("a", 40))
	}
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
		// Three limits as one: the bucket runs out after 10 calls, and the
		// refused calls charge the others nothing (990 and 49990 left).
		{[]string{"RL.ALL", "{t}:s", "BUCKET", "10", "10", "1s", "AND", "{t}:d", "FIXED", "1000", "1d", "AND", "{t}", "SLIDE", "50000", "1m"},
			"*7 :0 :10 :9 :-1 :6400000 :1 *3 *5 :0 :10 :9 :-1 :100 *5 :0 :1000 :999 :-1 :6400000 *5 :0 :50000 :49999 :-1 :100000",
			"*7 :1 :10 :0 :100 :6400000 :1 *3 *5 :1 :10 :0 :100 :1000 *5 :0 :1000 :990 :-1 :6400000 *5 :0 :50000 :49990 :-1 :100000"},
	} {
		cmd := tc.cmd
		args := rltest.Argv(cmd...)
		w := rltest.NewRecorder(2)
		s.Exec(c, args, w)
		if got := w.String(); got != tc.first {
			t.Errorf("%v: first reply %q, want %q", cmd, got, tc.first)
		}
		if n := testing.AllocsPerRun(1000, func() { w.Reset(); s.Exec(c, args, w) }); n != 0 {
			t.Errorf("%v: %v allocations per command, want 0", cmd, n)
		}
		if got := w.String(); got != tc.last {
			t.Errorf("%v: last reply %q, want %q", cmd, got, tc.last)
		}
		if w.Errors != 0 {
			t.Errorf("%v: %d error replies", cmd, w.Errors)
		}
	}
}

// BenchmarkDispatchParallel runs commands through Node.Exec from
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
			s := node.New(node.Config{Shards: 16, MaxClients: 1000}, engine.New(16), clock.NewRealWith(clock.RealOptions{}), node.Options{})
			var next atomic.Int64
			b.ReportAllocs()
			b.RunParallel(func(pb *testing.PB) {
				c, _ := s.NewClient("bench", "bench", nil)
				i := int(next.Add(1)) - 1
				c.SetStripe(i) // as event loop i would
				args := rltest.Argv(tc.args...)
				if len(args) > 1 { // a key of its own: no shard lock shared
					args[1] = fmt.Appendf(args[1], "%d", i)
				}
				for pb.Next() {
					s.Exec(c, args, rltest.Discard{})
				}
			})
		})
	}
}

// setCluster puts n in cluster mode as node self of the map text, a
// primary that is never polled.
func setCluster(tb testing.TB, n *node.Node, text, self string) {
	tb.Helper()
	path := filepath.Join(tb.TempDir(), "nodes.conf")
	if err := os.WriteFile(path, []byte(text), 0o644); err != nil {
		tb.Fatal(err)
	}
	c, err := cluster.New(cluster.Options{Path: path, Self: self, FullCoverage: true, Role: func() cluster.PeerRole { return cluster.PeerRole{} }})
	if err != nil {
		tb.Fatal(err)
	}
	n.SetCluster(c)
}

// BenchmarkDispatchLarge is BenchmarkDispatch on a large keyspace, as the
// event loop runs a pipeline: batches of 16 commands on random keys of
// 100,000 values each, the batch's first keys prefetched (Node.Prefetch)
// before its commands run. RL.ALL3's three keys make 300,000: each call
// looks up two keys the batch's prefetch did not bring into the cache.
// ns/op is per command.
func BenchmarkDispatchLarge(b *testing.B) {
	const values = 100_000
	for _, tc := range []struct {
		name  string
		args  []string
		keyAt []int // the arguments holding a key, "k:" and 12 digits first
	}{
		{"RL.FIXED", []string{"RL.FIXED", "k:000000000000:f", "1000000", "1d"}, []int{1}},
		{"RL.ALL3", []string{"RL.ALL", "k:000000000000:s", "BUCKET", "100", "100", "1s",
			"AND", "k:000000000000:d", "FIXED", "1000000", "1d", "AND", "k:000000000000", "SLIDE", "1000000", "60s"}, []int{1, 7, 12}},
	} {
		b.Run(tc.name, func(b *testing.B) {
			s := node.New(node.Config{Shards: 16, MaxClients: 10}, engine.New(16), clock.NewReal(1_700_000_000_000_000_000), node.Options{})
			c, _ := s.NewClient("bench", "bench", nil)
			batch := make([][][]byte, 16)
			for i := range batch {
				batch[i] = rltest.Argv(tc.args...)
			}
			// setKeys writes value v's digits into cmd's keys.
			setKeys := func(cmd [][]byte, v int) {
				for _, k := range tc.keyAt {
					for j := 13; j >= 2; j-- {
						cmd[k][j] = byte('0' + v%10)
						v /= 10
					}
				}
			}
			for v := range values {
				setKeys(batch[0], v)
				s.Exec(c, batch[0], rltest.Discard{})
			}
			r := rand.New(rand.NewPCG(1, 2))
			var keys [][]byte
			b.ReportAllocs()
			b.ResetTimer()
			for i := 0; i < b.N; i += len(batch) {
				keys = keys[:0]
				for _, cmd := range batch {
					setKeys(cmd, r.IntN(values))
					keys = s.AppendKey(keys, c, cmd)
				}
				s.Prefetch(keys)
				for _, cmd := range batch {
					s.Exec(c, cmd, rltest.Discard{})
				}
			}
		})
	}
}

// TestAppendKeyTakesEveryLimit checks the keys a connection prefetches for
// a pipelined batch: a command's first key, every key of an RL.ALL call
// (each limit's, which its decision looks up in turn), as far as its
// groups are well formed, and never more than PrefetchMax in all.
func TestAppendKeyTakesEveryLimit(t *testing.T) {
	s := node.New(node.Config{Shards: 16, MaxClients: 10}, engine.New(16), clock.NewManual(1_700_000_000_000_000_000), node.Options{})
	c, _ := s.NewClient("t", "t", nil)
	full := make([][]byte, node.PrefetchMax-1)
	for _, tc := range []struct {
		held int // keys already gathered
		cmd  []string
		want []string
	}{
		{0, []string{"RL.FIXED", "f", "10", "1s"}, []string{"f"}},
		{0, []string{"DEL", "a", "b"}, []string{"a"}},
		{0, []string{"PING"}, nil},
		{0, []string{"GET"}, nil},
		{0, []string{"RL.ALL", "{t}:s", "BUCKET", "1", "1", "1s", "and", "{t}:d", "FIXED", "5", "1d", "COST", "0", "AND", "{t}", "SLIDE", "9", "1m"}, []string{"{t}:s", "{t}:d", "{t}"}},
		{0, []string{"rl.all", "AND", "FIXED", "1", "1s", "AND", "COST", "LOG", "2", "1s"}, []string{"AND", "COST"}},
		// Malformed: the keys up to the first bad group.
		{0, []string{"RL.ALL", "a", "FIXED", "1", "1s", "AND", "b", "FLOOD", "1", "1s", "AND", "c", "FIXED", "1", "1s"}, []string{"a", "b"}},
		{0, []string{"RL.ALL", "a", "FIXED", "1", "1s", "OR", "b", "FIXED", "1", "1s"}, []string{"a"}},
		{len(full), []string{"RL.ALL", "a", "FIXED", "1", "1s", "AND", "b", "FIXED", "1", "1s"}, []string{"a"}},
	} {
		keys := s.AppendKey(full[:tc.held], c, rltest.Argv(tc.cmd...))
		var got []string
		for _, k := range keys[tc.held:] {
			got = append(got, string(k))
		}
		if fmt.Sprint(got) != fmt.Sprint(tc.want) {
			t.Errorf("%q after %d keys: %q, want %q", tc.cmd, tc.held, got, tc.want)
		}
	}
}

package replication

import (
	"context"
	"fmt"
	"math/rand/v2"
	"testing"
	"time"

	"github.com/rlserver/rlserver/clock"
	"github.com/rlserver/rlserver/engine"
	"github.com/rlserver/rlserver/persist"
	"github.com/stretchr/testify/require"
)

// chunkLink is a loopLink that hands out a stream in the chunks a seeded
// generator picks, with "nothing to read" between some of them.
type chunkLink struct {
	data   []byte
	rng    *rand.Rand
	max    int  // the largest chunk
	steady bool // never "nothing to read" while data is left
	reads  int  // reads that returned data
	acks   int
}

func (c *chunkLink) hold() (int, bool) { return -1, true }
func (c *chunkLink) release()          {}

func (c *chunkLink) recvNow(b []byte) (int, error) {
	if len(c.data) == 0 || (!c.steady && c.rng.IntN(4) == 0) {
		return 0, errNoInput
	}
	n := min(len(b), len(c.data), 1+c.rng.IntN(c.max))
	copy(b, c.data[:n])
	c.data = c.data[n:]
	c.reads++
	return n, nil
}

func (c *chunkLink) sendNow([]byte) (bool, error) { c.acks++; return true, nil }

// TestLoopedAppliesAnyChunking: the loop's reader applies the same stream
// the same way however the kernel cuts it (a few bytes at a time, or more
// than its buffer), with bytes read ahead of the loop at the start:
// every record, the offset at the stream's end, and never part of a
// unit of several frames. A frame larger than its buffer grows it for a
// while only.
func TestLoopedAppliesAnyChunking(t *testing.T) {
	const now = t0
	var fw frameWriter
	fw.start = -1
	var want []engine.Record
	proto := fixedRecord(t, "proto", now)
	add := func(key string) engine.Record {
		r := proto
		r.Key = key
		want = append(want, r)
		return r
	}
	fw.frame(frameHeartbeat, now)
	for i := range 2000 {
		fw.record(add(fmt.Sprintf("a%d", i)), now)
	}
	fw.close()
	// One unit of several frames ('m' ... 'r'): all of its keys or none.
	var unit []string
	var body []byte
	for i := range 6000 {
		k := fmt.Sprintf("u%d", i)
		unit = append(unit, k)
		body = persist.AppendEntry(body, add(k))
	}
	fw.entries(body, now)
	require.Greater(t, len(body), 2*recordsFrameCut, "the unit takes several frames")
	// One frame larger than the reader's buffer.
	fw.open(frameRecords, now)
	for i := range 12000 {
		fw.buf = persist.AppendEntry(fw.buf, add(fmt.Sprintf("b%d", i)))
	}
	fw.close()
	require.Greater(t, len(fw.buf), 3*minRead)
	big := len(fw.buf)
	// After it, enough for the buffer to fill again: it shrinks back.
	for i := range 40000 {
		fw.record(add(fmt.Sprintf("c%d", i)), now)
	}
	fw.close()
	require.Greater(t, len(fw.buf)-big, 16*minRead)
	fw.frame(frameHeartbeat, now)
	stream := fw.buf

	for _, tc := range []struct {
		name       string
		ahead, max int
	}{
		{"tiny", 0, 31},
		{"small", 100, 300},
		{"large", 5000, 1 << 20},
	} {
		t.Run(tc.name, func(t *testing.T) {
			e := engine.New(4)
			clk := clock.NewTimeline(clock.NewManual(now), 0)
			clk.Yield() // as ReplicaOf tells it
			m := New(Options{Engine: e, Clock: clk})
			m.mu.Lock()
			m.offset, m.history, m.lastState = 0, true, 0
			m.bl = newBacklog(1<<20, 0)
			m.mu.Unlock()
			u := &upstream{m: m}
			link := &chunkLink{data: stream[tc.ahead:], rng: rand.New(rand.NewPCG(1, uint64(tc.max))), max: tc.max}
			s := &looped{u: u, ctx: context.Background(), c: link, fail: make(chan error, 1), acks: m.newAcker(link.sendNow), kick: func() {}}
			s.buf = append(make([]byte, 0, 2*minRead+tc.ahead), stream[:tc.ahead]...)
			for calls := 0; len(link.data) > 0 || s.off < len(s.buf); calls++ {
				require.Less(t, calls, 10*len(stream), "the stream never ends")
				require.True(t, s.ready(), "the stream failed: %v", s.fail)
				first := e.Store().Type([]byte(unit[0]), now) != engine.KindNone
				last := e.Store().Type([]byte(unit[len(unit)-1]), now) != engine.KindNone
				require.Equal(t, first, last, "part of a unit applied")
			}
			held := records(e, now)
			require.Len(t, held, len(want))
			for _, r := range want {
				require.Equal(t, r, held[r.Key])
			}
			m.mu.Lock()
			require.EqualValues(t, len(stream), m.offset, "the offset is the stream's end")
			m.mu.Unlock()
			require.Positive(t, link.acks)
			require.LessOrEqual(t, cap(s.buf), 8*minRead, "the buffer shrank back after the large frame")
		})
	}
}

// TestLoopedReadsABoundedAmountPerRound: a primary that sends without
// pause does not keep the replica's event loop from its clients. One
// round reads at most maxReads times and leaves the rest for the next.
func TestLoopedReadsABoundedAmountPerRound(t *testing.T) {
	const now = t0
	var fw frameWriter
	fw.start = -1
	r := fixedRecord(t, "proto", now)
	for i := range 100000 {
		r.Key = fmt.Sprintf("k%d", i%1000)
		fw.record(r, now)
	}
	fw.close()
	clk := clock.NewTimeline(clock.NewManual(now), 0)
	clk.Yield()
	m := New(Options{Engine: engine.New(4), Clock: clk})
	m.mu.Lock()
	m.history, m.bl = true, newBacklog(1<<20, 0)
	m.mu.Unlock()
	link := &chunkLink{data: fw.buf, rng: rand.New(rand.NewPCG(1, 2)), max: 1 << 30, steady: true}
	s := &looped{u: &upstream{m: m}, ctx: context.Background(), c: link, fail: make(chan error, 1), acks: m.newAcker(link.sendNow), kick: func() {}}
	s.buf = make([]byte, 0, 2*minRead)
	require.Greater(t, len(fw.buf), 8*maxReads*minRead, "more than a round reads")
	for rounds := 1; len(link.data) > 0; rounds++ {
		before := link.reads
		require.True(t, s.ready(), "the stream failed: %v", s.fail)
		require.LessOrEqual(t, link.reads-before, maxReads, "round %d", rounds)
		require.Less(t, rounds, len(fw.buf)/minRead, "the stream never ends")
	}
	m.mu.Lock()
	defer m.mu.Unlock()
	require.EqualValues(t, len(fw.buf), m.offset)
}

// TestLoopedNeverWaitsForTheApplyLock: while another goroutine holds
// m.apply (a full sync to this node's own replica reads the keyspace
// under it), the loop's reader applies nothing and returns at once, so
// the loop goes on serving its clients; once the lock is free the loop
// is kicked, and the next call applies what was read.
func TestLoopedNeverWaitsForTheApplyLock(t *testing.T) {
	const now = t0
	var fw frameWriter
	fw.start = -1
	r := fixedRecord(t, "proto", now)
	for i := range 100 {
		r.Key = fmt.Sprintf("k%d", i)
		fw.record(r, now)
	}
	fw.close()
	fw.frame(frameHeartbeat, now)
	clk := clock.NewTimeline(clock.NewManual(now), 0)
	clk.Yield()
	e := engine.New(4)
	m := New(Options{Engine: e, Clock: clk})
	m.mu.Lock()
	m.history, m.bl = true, newBacklog(1<<20, 0)
	m.mu.Unlock()
	link := &chunkLink{data: fw.buf, rng: rand.New(rand.NewPCG(1, 3)), max: 1 << 20, steady: true}
	kicked := make(chan struct{}, 1)
	s := &looped{u: &upstream{m: m}, ctx: context.Background(), c: link, fail: make(chan error, 1), acks: m.newAcker(link.sendNow),
		kick: func() { kicked <- struct{}{} }}
	s.buf = make([]byte, 0, 2*minRead)

	m.apply.Lock()
	locked := true
	t.Cleanup(func() {
		if locked {
			m.apply.Unlock()
		}
	})
	returned := make(chan bool, 1)
	go func() { returned <- s.ready() }()
	select {
	case ok := <-returned:
		require.True(t, ok)
	case <-time.After(10 * time.Second):
		t.Fatal("the loop's reader waited for the lock")
	}
	require.Empty(t, link.data, "the input was read")
	require.Zero(t, e.Store().Len(), "nothing applied while the lock was held")
	select {
	case <-kicked:
		t.Fatal("kicked while the lock was held")
	default:
	}

	locked = false
	m.apply.Unlock()
	select {
	case <-kicked:
	case <-time.After(10 * time.Second):
		t.Fatal("no kick once the lock was free")
	}
	require.True(t, s.ready())
	require.Equal(t, 100, e.Store().Len())
	m.mu.Lock()
	defer m.mu.Unlock()
	require.EqualValues(t, len(fw.buf), m.offset)
}

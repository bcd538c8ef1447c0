package node

import (
	"math/bits"
	"strconv"
	"sync"
	"sync/atomic"
	"time"

	"github.com/rlserver/rlserver/clock"
	"github.com/rlserver/rlserver/commands"
	"github.com/rlserver/rlserver/engine"
	"github.com/rlserver/rlserver/internal/topk"
)

// What the node observes beyond INFO's counts (docs/protocol.md,
// "Observability"): per-command latency histograms, limiter decisions,
// the slow log, the latency monitor and the most rejected keys. The
// hot path pays one striped atomic add per histogram and per decision;
// the slow log and the latency monitor only a comparison unless a
// command crosses their threshold; the top keys a lock of its stripe's
// window per rejection, only when enabled.

// Latency histograms are log-linear: four buckets per power of two of
// nanoseconds (a bucket spans a quarter of its octave, so a percentile
// read from one is within 25% of the truth), the last one open-ended.
const histBuckets = 4 * 38 // up to 2^38 ns, about 4.6 minutes

// histBucket is the bucket of a duration of ns nanoseconds.
func histBucket(ns int64) int {
	if ns < 4 {
		return int(max(ns, 0))
	}
	e := bits.Len64(uint64(ns)) - 1 // ns in [2^e, 2^(e+1)), e >= 2
	i := 4*(e-1) + int(ns>>(e-2))&3
	return min(i, histBuckets-1)
}

// HistUpper is the exclusive upper bound of bucket i, in ns (for the
// last bucket, the bound of its octave's last quarter).
func HistUpper(i int) int64 {
	if i < 4 {
		return int64(i) + 1
	}
	e, q := i/4+1, int64(i%4)
	return 1<<e + (q+1)<<(e-2)
}

// hist is one command's histogram, striped as the counts are.
type hist struct {
	cells [stripes]struct {
		b [histBuckets]atomic.Int64
		_ [cellBytes]byte
	}
}

// histOf returns command i's histogram, making it on first use (most
// commands are never called: their histograms take no memory).
func (n *Node) histOf(i int) *hist {
	if h := n.hists[i].Load(); h != nil {
		return h
	}
	n.hists[i].CompareAndSwap(nil, new(hist))
	return n.hists[i].Load()
}

// buckets adds the stripes of command i's histogram up; nil if it was
// never called.
func (n *Node) buckets(i int) []int64 {
	h := n.hists[i].Load()
	if h == nil {
		return nil
	}
	out := make([]int64, histBuckets)
	for s := range h.cells {
		for b := range out {
			out[b] += h.cells[s].b[b].Load()
		}
	}
	return out
}

// Decision results, as rlserver_decisions_total labels them.
const (
	resultAdmitted = iota
	resultRejected
	resultPeek
	nResults
)

// resultNames name the decision results.
var resultNames = [nResults]string{"admitted", "rejected", "peek"}

// decisions are the limiter decisions by kind and result, striped.
type decisions struct {
	_     [cellBytes]byte
	cells [stripes]struct {
		n [8 * nResults]atomic.Int64 // [kind*nResults + result]
		_ [cellBytes]byte
	}
}

// decided counts a decision of client c (commands.Ctx.Decide) and, if it
// rejected, the key among the most rejected at mono (the Mono reading
// that ended the command: no second clock reading per refusal).
func (n *Node) decided(c *Client, d commands.Decision, key []byte, mono int64) {
	r := resultAdmitted
	switch {
	case d.Peek:
		r = resultPeek
	case d.Limited:
		r = resultRejected
	}
	n.decs.cells[c.stripe].n[int(d.Kind)*nResults+r].Add(1)
	if r == resultRejected {
		n.top[c.stripe].Add(key, clock.MonoUnix(mono))
	}
}

// Decisions adds up the decisions: [kind][result].
func (n *Node) Decisions() (out [8][nResults]int64) {
	for s := range n.decs.cells {
		for i := range n.decs.cells[s].n {
			out[i/nResults][i%nResults] += n.decs.cells[s].n[i].Load()
		}
	}
	return out
}

// TopRejected returns the count keys rejected most over the last minute
// (RL.TOP), most first.
func (n *Node) TopRejected(count int) []commands.TopEntry {
	ws := make([]*topk.Window, len(n.top))
	for i := range n.top {
		ws[i] = &n.top[i]
	}
	top := topk.Top(count, clock.MonoUnix(clock.Mono()), ws...)
	out := make([]commands.TopEntry, len(top))
	for i, e := range top {
		out[i] = commands.TopEntry{Key: e.Key, Count: e.Count}
	}
	return out
}

// resetObserved forgets the histograms, decisions, and rejected keys
// (CONFIG RESETSTAT).
func (n *Node) resetObserved() {
	for i := range n.hists {
		n.hists[i].Store(nil)
	}
	for s := range n.decs.cells {
		for i := range n.decs.cells[s].n {
			n.decs.cells[s].n[i].Store(0)
		}
	}
	for i := range n.top {
		n.top[i].Reset()
	}
}

// slowlog keeps the commands that took at least a threshold (Redis's
// slowlog-log-slower-than, µs; negative: off, 0: every command), newest
// first, at most maxLen.
type slowlog struct {
	threshold atomic.Int64 // µs
	maxLen    atomic.Int64 // 0: nothing is kept
	mu        sync.Mutex
	nextID    int64
	entries   []commands.SlowEntry // oldest first
}

// Redis trims what a slow log entry keeps of a command.
const (
	slowMaxArgs   = 32
	slowMaxArgLen = 128
)

// add logs a command of args that took d, from client c.
func (l *slowlog) add(c *Client, args [][]byte, d time.Duration) {
	e := commands.SlowEntry{Time: time.Now().Unix(), Micros: d.Microseconds(), Addr: c.Addr, Name: c.Name()}
	n := min(len(args), slowMaxArgs)
	for i, a := range args[:n] {
		if i == slowMaxArgs-1 && len(args) > slowMaxArgs {
			e.Args = append(e.Args, fmtMore(len(args)-slowMaxArgs+1, "arguments"))
			break
		}
		if len(a) > slowMaxArgLen {
			e.Args = append(e.Args, string(a[:slowMaxArgLen])+fmtMore(len(a)-slowMaxArgLen, "bytes"))
			continue
		}
		e.Args = append(e.Args, string(a))
	}
	l.mu.Lock()
	defer l.mu.Unlock()
	e.ID = l.nextID
	l.nextID++
	l.entries = append(l.entries, e)
	if over := len(l.entries) - int(l.maxLen.Load()); over > 0 {
		l.entries = append(l.entries[:0], l.entries[over:]...)
	}
}

// fmtMore is Redis's note for what a slow log entry leaves out: n more
// "bytes" or "arguments".
func fmtMore(n int, what string) string {
	return "... (" + strconv.Itoa(n) + " more " + what + ")"
}

// Slowlog returns up to count entries, newest first (count < 0: all).
func (n *Node) Slowlog(count int) []commands.SlowEntry {
	l := &n.slow
	l.mu.Lock()
	defer l.mu.Unlock()
	if count < 0 || count > len(l.entries) {
		count = len(l.entries)
	}
	out := make([]commands.SlowEntry, 0, count)
	for i := len(l.entries) - 1; i >= 0 && len(out) < count; i-- {
		out = append(out, l.entries[i])
	}
	return out
}

// SlowlogLen is SLOWLOG LEN.
func (n *Node) SlowlogLen() int {
	n.slow.mu.Lock()
	defer n.slow.mu.Unlock()
	return len(n.slow.entries)
}

// SlowlogReset is SLOWLOG RESET.
func (n *Node) SlowlogReset() {
	n.slow.mu.Lock()
	n.slow.entries = nil
	n.slow.mu.Unlock()
}

// latencyMon is Redis's latency monitor for commands that take at least
// a threshold (latency-monitor-threshold, ms; 0: off): per event
// ("command", or "fast-command" for commands flagged fast), the latest
// and worst latency, and a history of one sample a second, the last 160.
type latencyMon struct {
	threshold atomic.Int64 // ms
	mu        sync.Mutex
	events    map[string]*latencyEvent
}

type latencyEvent struct {
	latest, max int64 // ms
	at          int64 // Unix s of the latest
	history     []commands.LatencySample
}

const latencyHistory = 160

// add records a sample of ms for event at Unix second now.
func (m *latencyMon) add(event string, ms, now int64) {
	m.mu.Lock()
	defer m.mu.Unlock()
	if m.events == nil {
		m.events = map[string]*latencyEvent{}
	}
	e := m.events[event]
	if e == nil {
		e = &latencyEvent{}
		m.events[event] = e
	}
	e.latest, e.at, e.max = ms, now, max(e.max, ms)
	if k := len(e.history); k > 0 && e.history[k-1].Time == now {
		e.history[k-1].Millis = max(e.history[k-1].Millis, ms)
		return
	}
	e.history = append(e.history, commands.LatencySample{Time: now, Millis: ms})
	if len(e.history) > latencyHistory {
		e.history = e.history[1:]
	}
}

// LatencyLatest is LATENCY LATEST: each event's latest sample and worst.
func (n *Node) LatencyLatest() []commands.LatencyEvent {
	m := &n.lat
	m.mu.Lock()
	defer m.mu.Unlock()
	var out []commands.LatencyEvent
	for name, e := range m.events {
		out = append(out, commands.LatencyEvent{Name: name, Time: e.at, Latest: e.latest, Max: e.max})
	}
	return out
}

// LatencyHistory is LATENCY HISTORY event.
func (n *Node) LatencyHistory(event string) []commands.LatencySample {
	m := &n.lat
	m.mu.Lock()
	defer m.mu.Unlock()
	if e := m.events[event]; e != nil {
		return append([]commands.LatencySample(nil), e.history...)
	}
	return nil
}

// LatencyReset is LATENCY RESET [event ...]: it forgets the events named
// (all with none) and returns how many it forgot.
func (n *Node) LatencyReset(events []string) int {
	m := &n.lat
	m.mu.Lock()
	defer m.mu.Unlock()
	if len(events) == 0 {
		k := len(m.events)
		m.events = nil
		return k
	}
	k := 0
	for _, e := range events {
		if _, ok := m.events[e]; ok {
			delete(m.events, e)
			k++
		}
	}
	return k
}

// observe records what a command of cmd that took d ns tells the
// histograms, the slow log and the latency monitor.
func (n *Node) observe(c *Client, cmd *commands.Command, args [][]byte, d int64) {
	n.histOf(cmd.Index).cells[c.stripe].b[histBucket(d)].Add(1)
	if t := n.slow.threshold.Load(); t >= 0 && d >= t*1000 && n.slow.maxLen.Load() > 0 && !cmd.Has(commands.FlagSkipSlowlog) {
		n.slow.add(c, args, time.Duration(d))
	}
	if t := n.lat.threshold.Load(); t > 0 && d >= t*int64(time.Millisecond) {
		event := "command"
		if cmd.Has(commands.FlagFast) {
			event = "fast-command"
		}
		n.lat.add(event, d/int64(time.Millisecond), time.Now().Unix())
	}
}

// kindNames name the kinds as metrics label them.
var kindNames = [8]string{engine.KindThrottle: "gcra", engine.KindFixed: "fixed", engine.KindLog: "log", engine.KindSlide: "slide", engine.KindBucket: "bucket", engine.KindLease: "lease"}

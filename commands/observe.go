package commands

import (
	"strconv"
	"strings"

	"github.com/rlserver/rlserver/engine"
	"github.com/rlserver/rlserver/internal/redisint"
)

// The observability family (docs/protocol.md, "Observability"): SLOWLOG,
// LATENCY and RL.TOP, and what limiter handlers tell the node of their
// decisions.

// Decision is what a limiter call decided: the kind of key, whether it
// was limited, and whether it was a peek (cost 0: nothing spent).
type Decision struct {
	Kind    engine.Kind
	Limited bool
	Peek    bool
	// Key is the index among the arguments of the key decided; 0 means
	// the command's first key.
	Key int
}

// Decide records the command's decision for the node's counters
// (rlserver_decisions_total, INFO rlserver, RL.TOP); the dispatcher reads
// it once the handler returns.
func (x *Ctx) Decide(d Decision) { x.decision, x.decided = d, true }

// Decision returns the decision the handler recorded, if any.
func (x *Ctx) Decision() (Decision, bool) { return x.decision, x.decided }

// decideAll records the decisions of a command that decided several
// limits (RL.ALL), each naming its key. ds is owned by the session and
// valid until its next command.
func (x *Ctx) decideAll(ds []Decision) { x.decisions = ds }

// Decisions returns the decisions decideAll recorded, if any.
func (x *Ctx) Decisions() []Decision { return x.decisions }

// SlowEntry is one SLOWLOG GET entry: id, Unix time (s), duration (µs),
// the arguments (trimmed as Redis trims them), client address and name.
type SlowEntry struct {
	ID     int64
	Time   int64
	Micros int64
	Args   []string
	Addr   string
	Name   string
}

// ACLLogEntry is one ACL LOG entry, as Redis 7.0 keeps it: Count
// refusals alike (reason, context, object and user) that came within a
// minute of each other, the last at Millis (Unix ms), from the client
// ClientInfo describes (its CLIENT INFO line then). Reason is "command",
// "key", "channel" or "auth"; Context "toplevel" or "multi" (queued in
// MULTI or run by EXEC); Object the command (its full name), key or
// channel refused, or the login's command as spelled.
type ACLLogEntry struct {
	Count                             int64
	Reason, Context, Object, Username string
	Millis                            int64
	ClientInfo                        string
}

// LatencyEvent is one LATENCY LATEST row: an event, the Unix time (s) of
// its latest sample, that sample and the worst, in ms.
type LatencyEvent struct {
	Name        string
	Time        int64
	Latest, Max int64
}

// LatencySample is one LATENCY HISTORY row: Unix time (s) and ms.
type LatencySample struct {
	Time, Millis int64
}

// TopEntry is one RL.TOP row: a key and how often it was rejected over
// the last minute (an upper bound, exact for keys rejected often).
type TopEntry struct {
	Key   string
	Count int64
}

func cmdSlowlogGet(x *Ctx) {
	count := 10
	if len(x.Args) > 2 {
		n, ok := redisint.Parse(x.Args[2])
		if !ok || n < -1 {
			x.Error(ErrSlowlogCount)
			return
		}
		count = int(min(n, 1<<30))
	}
	entries := x.N.Slowlog(count)
	w := x.W
	w.Array(len(entries))
	for _, e := range entries {
		w.Array(6)
		w.Int(e.ID)
		w.Int(e.Time)
		w.Int(e.Micros)
		w.Array(len(e.Args))
		for _, a := range e.Args {
			w.BulkString(a)
		}
		w.BulkString(e.Addr)
		w.BulkString(e.Name)
	}
}

func cmdSlowlogLen(x *Ctx) { x.W.Int(int64(x.N.SlowlogLen())) }

func cmdSlowlogReset(x *Ctx) {
	x.N.SlowlogReset()
	x.OK()
}

func cmdSlowlogHelp(x *Ctx) {
	writeHelp(x, []string{
		"SLOWLOG <subcommand> [<arg> [value] [opt] ...]. Subcommands are:",
		"GET [<count>]",
		"    Return top <count> entries from the slowlog (default: 10, -1 mean all).",
		"    Entries are made of:",
		"    id, timestamp, time in microseconds, arguments array, client IP and port,",
		"    client name",
		"LEN",
		"    Return the length of the slowlog.",
		"RESET",
		"    Reset the slowlog.",
		"HELP",
		"    Print this help.",
	})
}

func cmdLatencyLatest(x *Ctx) {
	events := x.N.LatencyLatest()
	x.W.Array(len(events))
	for _, e := range events {
		x.W.Array(4)
		x.W.BulkString(e.Name)
		x.W.Int(e.Time)
		x.W.Int(e.Latest)
		x.W.Int(e.Max)
	}
}

func cmdLatencyHistory(x *Ctx) {
	samples := x.N.LatencyHistory(string(x.Args[2]))
	x.W.Array(len(samples))
	for _, s := range samples {
		x.W.Array(2)
		x.W.Int(s.Time)
		x.W.Int(s.Millis)
	}
}

func cmdLatencyReset(x *Ctx) {
	var events []string
	for _, a := range x.Args[2:] {
		events = append(events, string(a))
	}
	x.W.Int(int64(x.N.LatencyReset(events)))
}

func cmdLatencyHelp(x *Ctx) {
	writeHelp(x, []string{
		"LATENCY <subcommand> [<arg> [value] [opt] ...]. Subcommands are:",
		"HISTORY <event>",
		"    Return time-latency samples for the <event> class.",
		"LATEST",
		"    Return the latest latency samples for all events.",
		"RESET [<event> ...]",
		"    Reset latency data of one or more <event> classes.",
		"    (default: reset all data for all event classes)",
		"HELP",
		"    Print this help.",
	})
}

// cmdTop is RL.TOP [count]: the keys rejected most over the last minute,
// most first, as [key, rejections] pairs (default 10).
func cmdTop(x *Ctx) {
	count := 10
	if len(x.Args) > 1 {
		n, ok := parseInt64(x.Args[1])
		if !ok {
			x.Error(ErrNotInteger)
			return
		}
		if n <= 0 {
			x.Error(ErrNotPositive)
			return
		}
		count = int(min(n, 1<<20))
	}
	top := x.N.TopRejected(count)
	x.W.Array(len(top))
	for _, e := range top {
		x.W.Array(2)
		x.W.BulkString(e.Key)
		x.W.Int(e.Count)
	}
}

// writeHelp writes a HELP reply.
func writeHelp(x *Ctx, lines []string) {
	x.W.Array(len(lines))
	for _, l := range lines {
		x.W.Simple(l)
	}
}

// QuoteInfoKey renders a key for an INFO value: printable ASCII without
// ',', '=', '"' or spaces as it is (':' is fine: a line splits at its
// first), anything else quoted as a Go string.
func QuoteInfoKey(k string) string {
	for i := 0; i < len(k); i++ {
		if c := k[i]; c <= ' ' || c > '~' || strings.IndexByte(",=\"", c) >= 0 {
			return strconv.Quote(k)
		}
	}
	return k
}

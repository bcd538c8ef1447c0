package server_test

// TestSoak: a bounded soak of one server through a restart (issue 16,
// point 5). Hundreds of connections send every kind of command in
// pipelines of random length, some drop their connection in the middle of
// a pipeline, snapshots run every 100 ms, and halfway through the server
// is shut down (final snapshot) and started again on the same directory,
// serving connections the other way (goroutine per connection after event
// loops), while the clients reconnect. At the end: no goroutine left
// behind (goleak), no client left registered, nothing kept per request
// or connection, RSS bounded (without -race), every reply
// well formed and as the contract says, and every limit exact.
//
// Budget: 60 s, 8 s under -race (soak_race_test.go), 5 s with -short;
// RLSERVER_SOAK=90s (any time.ParseDuration) overrides; RLSERVER_SEED
// replays a seed (the interleaving of the goroutines still differs).
//
// "Every limit exact": the manual clock moves by small random steps, at
// most 1000 s in all, so
//
//   - the budget keys (bk:*, one per algorithm and budget, with hour-long
//     windows and one unit per hour of refill) regain nothing during the
//     soak: each reply's remaining gives the units used, and from it and
//     the clock (known to lie between two readings) the reply is exact,
//     field by field, per docs/algorithms.md and docs/cl-throttle.md. The
//     units each admitted request took, [remaining, remaining+cost), never
//     overlap another's; a request never sees more left than a reply read
//     before it was sent (linearizable, across the restart too); and at
//     the end budget - remaining is the units the test saw admitted, plus
//     at most those of requests whose replies it never read (connections
//     it dropped, the restart).
//   - the refill keys (rk:*, windows of 1 to 10 s) refill many times: the
//     units the test saw admitted never exceed what the algorithm allows
//     over the clock's whole span (soakKey.bound).

import (
	"bufio"
	"cmp"
	"context"
	"errors"
	"fmt"
	"io"
	"math"
	"math/rand/v2"
	"net"
	"os"
	"runtime"
	"slices"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"
	"github.com/stretchr/testify/require"
	"go.uber.org/goleak"

	"github.com/rlserver/rlserver/internal/proc"
	"github.com/rlserver/rlserver/internal/rltest"
	"github.com/rlserver/rlserver/internal/testserver"
	"github.com/rlserver/rlserver/server"
)

const (
	soakConns       = 200 // client goroutines, each with its own connection
	soakGoRedis     = 6   // of which driven through go-redis (RESP2 and RESP3)
	soakSubscribers = 3   // pub/sub connections besides (one in RESP3)
	soakScratch     = 300 // scratch keys per algorithm
	// The manual clock moves at most this far in all, well inside every
	// budget key's horizon (the hour windows end 2800 s after StartNs).
	soakMaxAdvance = 1000 * int64(time.Second)
	// RSS may grow this much during the soak (see TestSoak).
	soakRSSGrowth = 1 << 30
	// The server may hold this much Go heap once its clients are gone
	// (see TestSoak).
	soakServerHeap = 24 << 20
)

// soakBudget is how long the clients run.
func soakBudget(t *testing.T) time.Duration {
	if v := os.Getenv("RLSERVER_SOAK"); v != "" {
		d, err := time.ParseDuration(v)
		require.NoError(t, err, "RLSERVER_SOAK")
		return d
	}
	switch {
	case soakRace:
		return 8 * time.Second
	case testing.Short():
		return 5 * time.Second
	}
	return 60 * time.Second
}

// ---------------------------------------------------------------------
// A strict RESP2/RESP3 reader: anything malformed is an error.

type soakVal struct {
	typ   byte   // + - : $ * _ # , = % ~ >
	s     string // simple string, error, bulk, verbatim text, double, boolean
	n     int64  // integer
	null  bool
	elems []soakVal // array, set, push; a map's keys and values alternate
}

func (v soakVal) String() string {
	switch {
	case v.null:
		return string(v.typ) + "(nil)"
	case v.typ == ':':
		return strconv.FormatInt(v.n, 10)
	case v.typ == '$' || v.typ == '=':
		s := v.s
		if len(s) > 200 {
			s = s[:200] + "..."
		}
		return string(v.typ) + strconv.Quote(s)
	case v.elems != nil || strings.ContainsRune("*%~>", rune(v.typ)):
		parts := make([]string, len(v.elems))
		for i, e := range v.elems {
			parts[i] = e.String()
		}
		return string(v.typ) + "[" + strings.Join(parts, " ") + "]"
	}
	return string(v.typ) + v.s
}

func soakCanon(s string) (int64, error) {
	n, err := strconv.ParseInt(s, 10, 64)
	if err != nil || strconv.FormatInt(n, 10) != s {
		return 0, fmt.Errorf("%q is not a canonical integer", s)
	}
	return n, nil
}

func soakRead(rd *bufio.Reader) (soakVal, error) { return soakReadAt(rd, 0) }

func soakReadAt(rd *bufio.Reader, depth int) (soakVal, error) {
	if depth > 8 {
		return soakVal{}, errors.New("reply nested more than 8 deep")
	}
	line, err := rd.ReadString('\n')
	if err != nil {
		return soakVal{}, err
	}
	if len(line) < 3 || line[len(line)-2] != '\r' {
		return soakVal{}, fmt.Errorf("reply line %q does not end in CRLF", line)
	}
	body := line[1 : len(line)-2]
	if strings.ContainsAny(body, "\r\n") {
		return soakVal{}, fmt.Errorf("reply line %q holds a CR or LF", line)
	}
	v := soakVal{typ: line[0]}
	switch v.typ {
	case '+', '-':
		if v.typ == '-' && body == "" {
			return v, errors.New("empty error reply")
		}
		v.s = body
	case ':':
		if v.n, err = soakCanon(body); err != nil {
			return v, err
		}
	case '_':
		if body != "" {
			return v, fmt.Errorf("null %q with a body", line)
		}
		v.null = true
	case '#':
		if body != "t" && body != "f" {
			return v, fmt.Errorf("boolean %q", line)
		}
		v.s = body
	case ',':
		if _, err := strconv.ParseFloat(body, 64); err != nil && body != "inf" && body != "-inf" && body != "nan" {
			return v, fmt.Errorf("double %q", line)
		}
		v.s = body
	case '$', '=':
		n, err := soakCanon(body)
		if err != nil {
			return v, err
		}
		if n == -1 && v.typ == '$' {
			v.null = true
			return v, nil
		}
		if n < 0 || n > 64<<20 || (v.typ == '=' && n < 4) {
			return v, fmt.Errorf("bad length in %q", line)
		}
		buf := make([]byte, n+2)
		if _, err := io.ReadFull(rd, buf); err != nil {
			return v, err
		}
		if buf[n] != '\r' || buf[n+1] != '\n' {
			return v, fmt.Errorf("bulk of %d bytes not followed by CRLF: %q", n, buf[n:])
		}
		v.s = string(buf[:n])
		if v.typ == '=' {
			if v.s[3] != ':' || v.s[:3] != "txt" {
				return v, fmt.Errorf("verbatim string %q is not txt", v.s)
			}
			v.s = v.s[4:]
		}
	case '*', '~', '%', '>':
		n, err := soakCanon(body)
		if err != nil {
			return v, err
		}
		if n == -1 && v.typ == '*' {
			v.null = true
			return v, nil
		}
		if n < 0 || n > 1<<20 {
			return v, fmt.Errorf("bad count in %q", line)
		}
		if v.typ == '%' {
			n *= 2
		}
		v.elems = make([]soakVal, 0, n)
		for range n {
			e, err := soakReadAt(rd, depth+1)
			if err != nil {
				return v, err
			}
			v.elems = append(v.elems, e)
		}
	default:
		return v, fmt.Errorf("unknown reply type in %q", line)
	}
	return v, nil
}

// soakInts reads an array of n integers.
func soakInts(v soakVal, n int) ([]int64, error) {
	if v.typ != '*' || v.null || len(v.elems) != n {
		return nil, fmt.Errorf("want an array of %d integers", n)
	}
	out := make([]int64, n)
	for i, e := range v.elems {
		if e.typ != ':' {
			return nil, fmt.Errorf("element %d is not an integer", i)
		}
		out[i] = e.n
	}
	return out, nil
}

// ---------------------------------------------------------------------
// Keys and their algorithms.

type soakAlg int

const (
	soakCL soakAlg = iota
	soakFixed
	soakLog
	soakSlide
	soakBucket
)

var soakAlgs = [...]struct{ prefix, typ, cmd string }{
	soakCL:     {"c", "string", "CL.THROTTLE"},
	soakFixed:  {"f", "fixed", "RL.FIXED"},
	soakLog:    {"l", "log", "RL.LOG"},
	soakSlide:  {"s", "slide", "RL.SLIDE"},
	soakBucket: {"b", "bucket", "RL.BUCKET"},
}

type soakKey struct {
	id      int // index in soakEnv.keys; -1 for keys not tracked
	name    string
	alg     soakAlg
	frozen  bool  // a budget key: nothing refills during the soak
	limit   int64 // the reply's limit: limit, capacity, or max_burst + 1
	window  int64 // ns: the window (FIXED, LOG, SLIDE), the period (BUCKET), the emission interval (CL)
	rate    int64 // BUCKET: tokens per period; CL: count per period
	periods []string
}

// args is a request of cost (quantity) cost, spelled one of several ways.
func (k *soakKey) args(r *rand.Rand, cost int64) []string {
	c := strconv.FormatInt(cost, 10)
	p := k.periods[r.IntN(len(k.periods))]
	name := soakAlgs[k.alg].cmd
	if r.IntN(4) == 0 {
		name = strings.ToLower(name)
	}
	if k.alg == soakCL {
		a := []string{name, k.name, strconv.FormatInt(k.limit-1, 10), strconv.FormatInt(k.rate, 10), p}
		if cost != 1 || r.IntN(2) == 0 {
			a = append(a, c)
		}
		return a
	}
	a := []string{name, k.name, strconv.FormatInt(k.limit, 10)}
	if k.alg == soakBucket {
		a = append(a, strconv.FormatInt(k.rate, 10))
	}
	a = append(a, p)
	switch r.IntN(6) {
	case 0:
		if cost == 1 {
			return a
		}
	case 1:
		return append(a, "cost", c)
	case 2:
		return append(a, "COST", "7", "COST", c) // the last one counts
	}
	return append(a, "COST", c)
}

// bound is the most units the algorithm admits from a fresh key between
// the clock readings start and end (docs/algorithms.md,
// docs/cl-throttle.md).
func (k *soakKey) bound(start, end int64) int64 {
	span := end - start
	switch k.alg {
	case soakFixed, soakSlide:
		// A window's count (FIXED) or its current count (SLIDE, whose
		// estimate is at least that count) never passes the limit.
		return k.limit * (end/k.window - start/k.window + 1)
	case soakLog:
		// At most limit in any half-open interval of one window.
		return k.limit * ((span + k.window) / k.window)
	case soakBucket:
		// A full bucket, then rate per period.
		return k.limit + span*k.rate/k.window
	}
	// GCRA: n units push the TAT n intervals past start, and the last
	// is admitted only if the TAT is at most limit intervals ahead. The
	// key expires up to 1 ms before its TAT (cl-throttle.md §6.3), and a
	// call then starts from now: at most 1 ms gained per admission.
	return (k.limit*k.window + span) / (k.window - int64(time.Millisecond))
}

func soakCeilMs(ns int64) int64 {
	if ns < 0 {
		return -(-ns / 1e6)
	}
	return (ns + 999_999) / 1e6
}

// soakSecs is CL.THROTTLE's rounding of a duration to seconds
// (cl-throttle.md §6.1), floating point included.
func soakSecs(d int64) int64 {
	s, r := d/1e9, d%1e9
	f := float64(s) + float64(r)/1e9
	var v int64
	switch {
	case f >= math.MaxInt64:
		v = math.MaxInt64
	case f <= math.MinInt64:
		v = math.MinInt64
	default:
		v = int64(f)
	}
	if r/1e6 > 0 {
		v++
	}
	return v
}

// soakCtx is what a reply is checked against: the clock lay in [lo, hi]
// while the request ran, which was sent after send and answered before
// recv (ns since the soak began).
type soakCtx struct{ lo, hi, send, recv int64 }

// check validates a limiter reply to a request of cost cost on k.
func (k *soakKey) check(cost int64, v soakVal, c soakCtx) error {
	r, err := soakInts(v, 5)
	if err != nil {
		return err
	}
	limited, lim, rem, retry, reset := r[0], r[1], r[2], r[3], r[4]
	switch {
	case limited != 0 && limited != 1:
		return fmt.Errorf("limited %d", limited)
	case lim != k.limit:
		return fmt.Errorf("limit %d, want %d", lim, k.limit)
	case rem < 0 || rem > k.limit:
		return fmt.Errorf("remaining %d outside 0..%d", rem, k.limit)
	case reset < 0:
		return fmt.Errorf("reset_after %d", reset)
	case cost == 0 && limited == 1 && k.id >= 0:
		// (A CL.THROTTLE scratch key that SET locked refuses peeks too,
		// cl-throttle.md §7.)
		return errors.New("a peek was limited")
	case cost > k.limit && (limited == 0 || retry != -1):
		return fmt.Errorf("a cost of %d over the limit %d: want limited with retry_after -1", cost, k.limit)
	case limited == 0 && retry != -1:
		return fmt.Errorf("admitted with retry_after %d", retry)
	case limited == 1 && cost <= k.limit && retry < 0:
		return fmt.Errorf("limited with retry_after %d", retry)
	}
	if !k.frozen {
		return nil
	}
	return k.checkFrozen(cost, limited == 0, rem, retry, reset, c)
}

// checkFrozen: a budget key has used limit - remaining units, all since
// StartNs, and nothing has refilled; the reply's times follow from that
// and the clock.
func (k *soakKey) checkFrozen(cost int64, admitted bool, rem, retry, reset int64, c soakCtx) error {
	B, W, E := k.limit, k.window, rltest.StartNs
	used := B - rem // after this call
	switch {
	case used < 1:
		return fmt.Errorf("remaining %d of %d: the unit taken at the start came back", rem, B)
	case admitted && used < 1+cost:
		return fmt.Errorf("admitted a cost of %d leaving %d of %d", cost, rem, B)
	case !admitted && cost <= B && rem >= cost:
		return fmt.Errorf("limited a cost of %d with %d remaining", cost, rem)
	}
	// f is non-increasing in the clock: over [lo, hi] it lies in
	// [f(hi), f(lo)].
	within := func(what string, got int64, f func(now int64) int64) error {
		if a, b := f(c.hi), f(c.lo); got < a || got > b {
			return fmt.Errorf("%s %d, want %d..%d (clock StartNs+%d..+%d)", what, got, a, b, c.lo-E, c.hi-E)
		}
		return nil
	}
	rejected := !admitted && cost <= B
	switch k.alg {
	case soakFixed:
		end := E - E%W + W
		if err := within("reset_after", reset, func(now int64) int64 { return soakCeilMs(end - now) }); err != nil {
			return err
		}
		if rejected && retry != reset {
			return fmt.Errorf("retry_after %d, want reset_after %d (the window's end)", retry, reset)
		}
	case soakSlide:
		start := E - E%W
		if err := within("reset_after", reset, func(now int64) int64 { return soakCeilMs(start + 2*W - now) }); err != nil {
			return err
		}
		if rejected && (retry < soakCeilMs(start+W-c.hi) || retry > reset) {
			return fmt.Errorf("retry_after %d outside the next window's start..reset_after %d", retry, reset)
		}
	case soakLog:
		if admitted && cost > 0 && reset != W/1e6 {
			return fmt.Errorf("reset_after %d after an admission, want the window %d", reset, W/1e6)
		}
		if reset < soakCeilMs(E+W-c.hi) || reset > W/1e6 {
			return fmt.Errorf("reset_after %d outside %d..%d", reset, soakCeilMs(E+W-c.hi), W/1e6)
		}
		if rejected && (retry < soakCeilMs(E+W-c.hi) || retry > reset) {
			return fmt.Errorf("retry_after %d outside %d..reset_after %d", retry, soakCeilMs(E+W-c.hi), reset)
		}
	case soakBucket:
		if err := within("reset_after", reset, func(now int64) int64 { return soakCeilMs(E + used*W - now) }); err != nil {
			return err
		}
		if rejected {
			return within("retry_after", retry, func(now int64) int64 { return soakCeilMs(E + (cost-rem)*W - now) })
		}
	case soakCL:
		if err := within("reset_after", reset, func(now int64) int64 { return soakSecs(E + used*W - now) }); err != nil {
			return err
		}
		if rejected {
			return within("retry_after", retry, func(now int64) int64 { return soakSecs(E + (cost-rem)*W - now) })
		}
	}
	return nil
}

// soakKeys builds the tracked keys: the budget keys, then the refill keys.
func soakKeys() (frozen, refill []*soakKey) {
	hourly := []string{"1h", "60m", "3600s", "3600", "3600000ms"}
	for alg := range soakAlgs {
		for _, b := range []int64{10, 300, 3000, 30000, 300000} {
			k := &soakKey{name: fmt.Sprintf("bk:%s:%d", soakAlgs[alg].prefix, b), alg: soakAlg(alg), frozen: true,
				limit: b, window: int64(time.Hour), rate: 1, periods: hourly}
			if k.alg == soakCL {
				k.periods = []string{"3600", "+3600", "03600"}
			}
			frozen = append(frozen, k)
		}
	}
	for alg := range soakAlgs {
		for i, p := range []struct {
			limit, rate int64
			window      time.Duration
			periods     []string
		}{
			{20, 2, 10 * time.Second, []string{"10s", "10000ms", "10"}},
			{5, 1, time.Second, []string{"1s", "1000ms", "1"}},
		} {
			k := &soakKey{name: fmt.Sprintf("rk:%s:%d", soakAlgs[alg].prefix, i), alg: soakAlg(alg),
				limit: p.limit, window: int64(p.window), rate: p.rate, periods: p.periods}
			switch k.alg {
			case soakBucket:
				k.window, k.periods = int64(time.Second), []string{"1s", "1000ms", "1"}
			case soakCL:
				// CL.THROTTLE k limit-1 rate 1: an emission interval of 1/rate s.
				k.window, k.periods = int64(time.Second)/p.rate, []string{"1", "+1", "01"}
			}
			refill = append(refill, k)
		}
	}
	return frozen, refill
}

// soakScratchKey is scratch key n of alg, with one of three parameter
// sets chosen by n (a key always sees the same one).
func soakScratchKey(alg soakAlg, n int) *soakKey {
	k := &soakKey{id: -1, name: fmt.Sprintf("sk:%s:%d", soakAlgs[alg].prefix, n), alg: alg}
	sets := []struct {
		limit, rate int64
		period      string
	}{{5, 10, "100ms"}, {1, 1, "2s"}, {100, 1000, "1m"}}
	if alg == soakCL {
		sets[0].period, sets[1].period, sets[2].period = "1", "2", "60"
	}
	s := sets[n%3]
	k.limit, k.rate, k.periods = s.limit, s.rate, []string{s.period}
	return k
}

// ---------------------------------------------------------------------
// Requests and the replies they must get.

type soakOp struct {
	args   []string
	req    []byte // the bytes sent; Encode(args) unless set
	check  func(v soakVal, c soakCtx) error
	key    *soakKey // a limiter request, with its cost
	cost   int64
	exec   []*soakOp // EXEC: the queued requests
	closes bool      // the server closes the connection after this reply
}

func soakStatus(s string) func(soakVal, soakCtx) error {
	return func(v soakVal, _ soakCtx) error {
		if v.typ != '+' || v.s != s {
			return fmt.Errorf("want +%s", s)
		}
		return nil
	}
}

func soakError(prefix string) func(soakVal, soakCtx) error {
	return func(v soakVal, _ soakCtx) error {
		if v.typ != '-' || !strings.HasPrefix(v.s, prefix) {
			return fmt.Errorf("want an error -%s...", prefix)
		}
		return nil
	}
}

func soakInt(lo, hi int64) func(soakVal, soakCtx) error {
	return func(v soakVal, _ soakCtx) error {
		if v.typ != ':' || v.n < lo || v.n > hi {
			return fmt.Errorf("want an integer in %d..%d", lo, hi)
		}
		return nil
	}
}

func soakBulk(s string) func(soakVal, soakCtx) error {
	return func(v soakVal, _ soakCtx) error {
		if v.typ != '$' || v.null || v.s != s {
			return fmt.Errorf("want the bulk string %q", s)
		}
		return nil
	}
}

func soakIsNull(v soakVal, resp3 bool) bool {
	if resp3 {
		return v.typ == '_'
	}
	return v.typ == '$' && v.null
}

const soakWrongType = "WRONGTYPE Operation against a key holding the wrong kind of value"

// soakText: a reply for humans (INFO, CLIENT LIST), bulk in RESP2 and
// verbatim in RESP3, whose text f accepts.
func soakText(resp3 bool, f func(string) error) func(soakVal, soakCtx) error {
	return func(v soakVal, _ soakCtx) error {
		if want := map[bool]byte{false: '$', true: '='}[resp3]; v.typ != want || v.null {
			return fmt.Errorf("want a %c string", want)
		}
		return f(v.s)
	}
}

func soakInfoText(s string) error {
	for _, l := range strings.Split(s, "\r\n") {
		if l != "" && !strings.HasPrefix(l, "# ") && !strings.Contains(l, ":") {
			return fmt.Errorf("INFO line %q", l)
		}
	}
	return nil
}

// soakField is field name of a HELLO or CONFIG GET reply: a map in RESP3,
// a flat array in RESP2.
func soakField(v soakVal, resp3 bool, name string) (soakVal, error) {
	want := map[bool]byte{false: '*', true: '%'}[resp3]
	if v.typ != want || v.null || len(v.elems)%2 != 0 {
		return v, fmt.Errorf("want a %c of pairs", want)
	}
	for i := 0; i < len(v.elems); i += 2 {
		if k := v.elems[i]; (k.typ == '$' || k.typ == '+') && k.s == name {
			return v.elems[i+1], nil
		}
	}
	return v, fmt.Errorf("no field %q", name)
}

// ---------------------------------------------------------------------
// The shared state of a soak.

type soakGen struct {
	addr     string
	perConn  bool          // served with a goroutine per connection
	stopping chan struct{} // closed just before this server shuts down
	next     chan struct{} // closed once the next server is up
}

// soakObs is one limiter reply on a budget key. A run of identical
// refusals from one client is kept as one: the first reply's recv (the
// earliest it constrains later requests) and the last request's send (the
// latest, hence strictest, it is itself checked at).
type soakObs struct {
	send, recv int64 // ns since the soak began
	rem, cost  int32
	key        int16
	admitted   bool
}

type soakStats struct {
	batches, cmds, replies, reconnects, abandoned, truncated, partial, closers, execs, scans, published, received int64
}

func (s *soakStats) add(o soakStats) {
	s.batches += o.batches
	s.cmds += o.cmds
	s.replies += o.replies
	s.reconnects += o.reconnects
	s.abandoned += o.abandoned
	s.truncated += o.truncated
	s.partial += o.partial
	s.closers += o.closers
	s.execs += o.execs
	s.scans += o.scans
	s.published += o.published
	s.received += o.received
}

type soakEnv struct {
	t0      time.Time
	seed    uint64
	keys    []*soakKey // tracked: the budget keys, then the refill keys
	frozen  []*soakKey
	refill  []*soakKey
	scratch [5][]*soakKey
	gen     atomic.Pointer[soakGen]
	// The clock: every reading since the last ADVANCE returned is at
	// least lo, and none is above hi (set before an ADVANCE is sent).
	clockLo, clockHi atomic.Int64
	stop             chan struct{}
	abort            chan struct{}
	abortOnce        sync.Once

	mu     sync.Mutex
	errs   []string
	subs   map[net.Conn]bool // subscribers' connections, closed at the end
	stats  soakStats
	obs    [][]soakObs // per budget key
	units  []int64     // per tracked key: units seen admitted
	unseen []int64     // per tracked key: units of requests whose replies were never read
}

func (e *soakEnv) fail(format string, args ...any) {
	e.mu.Lock()
	if len(e.errs) < 20 {
		e.errs = append(e.errs, fmt.Sprintf(format, args...))
	}
	e.mu.Unlock()
	e.abortOnce.Do(func() { close(e.abort) })
}

func (e *soakEnv) done() bool {
	select {
	case <-e.stop:
		return true
	case <-e.abort:
		return true
	default:
		return false
	}
}

func (e *soakEnv) since() int64 { return int64(time.Since(e.t0)) }

// down reports whether g's server is being shut down (so that a dropped
// connection or a refused dial is expected).
func (e *soakEnv) down(g *soakGen) bool {
	select {
	case <-g.stopping:
		return true
	default:
		return false
	}
}

// awaitNext waits for the server after g, or the end.
func (e *soakEnv) awaitNext(g *soakGen) bool {
	select {
	case <-g.next:
		return true
	case <-e.stop:
	case <-e.abort:
	}
	return false
}

// ---------------------------------------------------------------------
// A client.

type soakWorker struct {
	env    *soakEnv
	id     int
	r      *rand.Rand
	gen    *soakGen
	nc     net.Conn
	rd     *bufio.Reader
	resp3  bool // the protocol in force after the last request generated
	churn  int
	obs    []soakObs
	last   []int // per tracked key: the index in obs of its last refusal, if its last reply was one
	units  []int64
	unseen []int64
	stats  soakStats
}

const soakIO = 60 * time.Second // no reply takes this long on a live server

func (w *soakWorker) connect() bool {
	for !w.env.done() {
		g := w.env.gen.Load()
		nc, err := net.DialTimeout("tcp", g.addr, 10*time.Second)
		if err != nil {
			if !w.env.down(g) {
				w.env.fail("client %d: dial %s: %v", w.id, g.addr, err)
				return false
			}
			if !w.env.awaitNext(g) {
				return false
			}
			continue
		}
		w.nc, w.rd, w.gen, w.resp3 = nc, bufio.NewReaderSize(nc, 16<<10), g, false
		w.stats.reconnects++
		return true
	}
	return false
}

func (w *soakWorker) hangUp() {
	if w.nc != nil {
		w.nc.Close()
		w.nc, w.rd, w.resp3 = nil, nil, false
	}
}

// lost records requests whose replies will never be read: each may have
// run.
func (w *soakWorker) lost(ops []*soakOp) {
	for _, op := range ops {
		w.lost(op.exec)
		if k := op.key; k != nil && k.id >= 0 && k.frozen && op.cost > 0 && op.cost <= k.limit {
			w.unseen[k.id] += op.cost
		}
	}
}

func (w *soakWorker) run(wg *sync.WaitGroup) {
	defer wg.Done()
	defer w.hangUp()
	for !w.env.done() {
		if w.nc == nil && !w.connect() {
			return
		}
		if w.r.IntN(400) == 0 {
			w.scanAll()
			continue
		}
		w.batch()
	}
}

// ioFailed handles a failed read or write: expected while the server
// shuts down, a failure otherwise.
func (w *soakWorker) ioFailed(what string, err error, ops []*soakOp, at int) {
	if !w.env.down(w.gen) {
		w.env.fail("client %d: %s, reply %d of %d (%q): %v", w.id, what, at, len(ops), ops[min(at, len(ops)-1)].args, err)
	}
	w.lost(ops[at:])
	w.hangUp()
}

// batch sends a pipeline and reads its replies, or drops the connection
// part way, as a client that crashes does.
func (w *soakWorker) batch() {
	ops := w.genBatch()
	var buf []byte
	for _, op := range ops {
		if op.req == nil {
			op.req = rltest.Encode(op.args...)
		}
		buf = append(buf, op.req...)
	}
	w.stats.batches++
	w.stats.cmds += int64(len(ops))
	read := len(ops)
	switch x := w.r.IntN(1000); {
	case x < 6: // the pipeline, then gone without reading a reply
		read = 0
		w.stats.abandoned++
	case x < 12: // half a pipeline, cut anywhere, even inside a request
		w.stats.truncated++
		w.nc.SetDeadline(time.Now().Add(soakIO))
		if _, err := w.nc.Write(buf[:w.r.IntN(len(buf))]); err != nil && !w.env.down(w.gen) {
			w.env.fail("client %d: write: %v", w.id, err)
		}
		w.lost(ops)
		w.hangUp()
		return
	case x < 18: // some of the replies
		read = w.r.IntN(len(ops))
		w.stats.partial++
	}
	lo, send := w.env.clockLo.Load(), w.env.since()
	w.nc.SetDeadline(time.Now().Add(soakIO))
	if _, err := w.nc.Write(buf); err != nil {
		w.ioFailed("write", err, ops, 0)
		return
	}
	for i := range read {
		v, err := soakRead(w.rd)
		if err != nil {
			w.ioFailed("read", err, ops, i)
			return
		}
		w.stats.replies++
		c := soakCtx{lo: lo, hi: w.env.clockHi.Load(), send: send, recv: w.env.since()}
		if err := w.verify(ops[i], v, c); err != nil {
			w.env.fail("client %d: %q (reply %d of %d, RESP3 %v): got %s: %v", w.id, ops[i].args, i, len(ops), w.resp3, v, err)
			w.hangUp()
			return
		}
		if ops[i].closes {
			w.stats.closers++
			w.expectClosed(ops[i])
			return
		}
	}
	if read < len(ops) {
		w.lost(ops[read:])
		w.hangUp()
		return
	}
	if n := w.rd.Buffered(); n > 0 {
		b, _ := w.rd.Peek(n)
		w.env.fail("client %d: %d bytes nobody asked for after a pipeline of %d: %q", w.id, n, len(ops), b)
		w.hangUp()
	}
}

// expectClosed: after op's reply the server must close the connection,
// sending nothing more.
func (w *soakWorker) expectClosed(op *soakOp) {
	w.nc.SetReadDeadline(time.Now().Add(soakIO))
	b, err := w.rd.ReadByte()
	var ne net.Error
	switch {
	case err == nil:
		w.env.fail("client %d: data (%q...) after the reply to %q, which closes the connection", w.id, b, op.args)
	case errors.As(err, &ne) && ne.Timeout() && !w.env.down(w.gen):
		w.env.fail("client %d: the connection stayed open after %q", w.id, op.args)
	}
	w.hangUp()
}

func (w *soakWorker) verify(op *soakOp, v soakVal, c soakCtx) error {
	if op.exec != nil {
		if v.typ != '*' || v.null || len(v.elems) != len(op.exec) {
			return fmt.Errorf("EXEC: want an array of %d replies", len(op.exec))
		}
		w.stats.execs++
		for i, q := range op.exec {
			if err := w.verify(q, v.elems[i], c); err != nil {
				return fmt.Errorf("EXEC reply %d, to %q, %s: %w", i, q.args, v.elems[i], err)
			}
		}
		return nil
	}
	if op.key != nil {
		if err := op.key.check(op.cost, v, c); err != nil {
			return err
		}
		w.record(op.key, op.cost, v, c)
		return nil
	}
	return op.check(v, c)
}

func (w *soakWorker) record(k *soakKey, cost int64, v soakVal, c soakCtx) {
	if k.id < 0 {
		return
	}
	admitted, rem := v.elems[0].n == 0, int32(v.elems[2].n)
	if admitted {
		w.units[k.id] += cost
	}
	if !k.frozen {
		return
	}
	if i := w.last[k.id]; !admitted && i >= 0 && w.obs[i].rem == rem {
		w.obs[i].send = c.send
		return
	}
	w.last[k.id] = -1
	if !admitted {
		w.last[k.id] = len(w.obs)
	}
	w.obs = append(w.obs, soakObs{send: c.send, recv: c.recv, rem: rem, cost: int32(cost), key: int16(k.id), admitted: admitted})
}

// scanAll walks the keyspace with SCAN: every budget key, present
// throughout, must come back at least once (docs/protocol.md, "Keys").
func (w *soakWorker) scanAll() {
	w.stats.scans++
	seen := map[string]bool{}
	cursor := "0"
	for range 100000 {
		op := &soakOp{args: []string{"SCAN", cursor, "MATCH", "bk:*", "COUNT", strconv.Itoa(1 + w.r.IntN(50))}}
		w.nc.SetDeadline(time.Now().Add(soakIO))
		if _, err := w.nc.Write(rltest.Encode(op.args...)); err != nil {
			w.ioFailed("write", err, []*soakOp{op}, 0)
			return
		}
		v, err := soakRead(w.rd)
		if err != nil {
			w.ioFailed("read", err, []*soakOp{op}, 0)
			return
		}
		if v.typ != '*' || len(v.elems) != 2 || v.elems[0].typ != '$' || v.elems[1].typ != '*' {
			w.env.fail("client %d: %q: got %s", w.id, op.args, v)
			return
		}
		for _, k := range v.elems[1].elems {
			if k.typ != '$' || !strings.HasPrefix(k.s, "bk:") {
				w.env.fail("client %d: %q returned %s", w.id, op.args, k)
				return
			}
			seen[k.s] = true
		}
		if cursor = v.elems[0].s; cursor == "0" {
			for _, k := range w.env.frozen {
				if !seen[k.name] {
					w.env.fail("client %d: a SCAN iteration missed %s, present throughout", w.id, k.name)
				}
			}
			return
		}
		if _, err := strconv.ParseUint(cursor, 10, 64); err != nil {
			w.env.fail("client %d: SCAN cursor %q", w.id, cursor)
			return
		}
	}
	w.env.fail("client %d: a SCAN iteration did not end", w.id)
}

// ---------------------------------------------------------------------
// What the clients send.

func (w *soakWorker) genBatch() []*soakOp {
	var n int
	switch x := w.r.IntN(100); {
	case x < 30:
		n = 1
	case x < 80:
		n = 2 + w.r.IntN(15)
	case x < 96:
		n = 17 + w.r.IntN(100)
	default:
		n = 117 + w.r.IntN(500)
	}
	ops := make([]*soakOp, 0, n+10)
	if w.r.IntN(20) == 0 {
		ops = append(ops, w.hello(2+w.r.IntN(2)))
	}
	for len(ops) < n {
		ops = append(ops, w.genOps()...)
	}
	if w.r.IntN(200) == 0 {
		ops = append(ops, w.closer())
	}
	return ops
}

func (w *soakWorker) cost(k *soakKey) int64 {
	switch x := w.r.IntN(100); {
	case x < 10:
		return 0
	case x < 70:
		return 1
	case x < 95:
		return 2 + int64(w.r.IntN(4))
	case x < 98:
		return k.limit + 1 + int64(w.r.IntN(3)) // over the limit: always refused
	default:
		return min(k.limit, 10)
	}
}

func (w *soakWorker) limiter(k *soakKey) *soakOp {
	c := w.cost(k)
	return &soakOp{args: k.args(w.r, c), key: k, cost: c}
}

func (w *soakWorker) scratchKey() *soakKey {
	a := w.r.IntN(len(soakAlgs))
	return w.env.scratch[a][w.r.IntN(len(w.env.scratch[a]))]
}

func (w *soakWorker) frozenKey() *soakKey { return w.env.frozen[w.r.IntN(len(w.env.frozen))] }

func (w *soakWorker) hello(proto int) *soakOp {
	resp3 := proto == 3
	w.resp3 = resp3
	return &soakOp{args: []string{"HELLO", strconv.Itoa(proto)}, check: func(v soakVal, _ soakCtx) error {
		p, err := soakField(v, resp3, "proto")
		if err != nil {
			return err
		}
		if p.typ != ':' || p.n != int64(proto) {
			return fmt.Errorf("proto %s", p)
		}
		if s, err := soakField(v, resp3, "server"); err != nil || s.s != "redis" {
			return fmt.Errorf("server %s %v", s, err)
		}
		return nil
	}}
}

// genOps is one request, or a transaction.
func (w *soakWorker) genOps() []*soakOp {
	r, e, resp3 := w.r, w.env, w.resp3
	one := func(op *soakOp) []*soakOp { return []*soakOp{op} }
	x := r.IntN(1000)
	switch {
	case x < 300:
		return one(w.limiter(w.frozenKey()))
	case x < 420:
		return one(w.limiter(e.refill[r.IntN(len(e.refill))]))
	case x < 520:
		return one(w.limiter(w.scratchKey()))
	case x < 560:
		// A new key each time, with short windows: the keyspace churns
		// as the clock moves and the expiry sweep drops them.
		w.churn++
		alg := soakAlg(w.churn % len(soakAlgs))
		k := soakScratchKey(alg, 3*w.churn)
		k.name = fmt.Sprintf("uk:%d:%d", w.id, w.churn)
		return one(w.limiter(k))
	case x < 600:
		return one(w.frozenQuery(w.frozenKey()))
	case x < 680:
		return one(w.scratchQuery())
	case x < 700:
		// Another algorithm on a budget key.
		k := w.frozenKey()
		o := w.scratchKey()
		for o.alg == k.alg {
			o = w.scratchKey()
		}
		k2 := *o
		k2.name = k.name
		return one(&soakOp{args: k2.args(r, 1), check: soakError(soakWrongType)})
	case x < 750:
		return one(w.badInput())
	case x < 785:
		return w.multi()
	case x < 792:
		// A refused request in the queue: EXEC runs nothing.
		ops := []*soakOp{{args: []string{"MULTI"}, check: soakStatus("OK")}}
		for range 1 + r.IntN(4) {
			ops = append(ops, &soakOp{args: w.limiter(w.frozenKey()).args, check: soakStatus("QUEUED")})
		}
		ops = append(ops, &soakOp{args: []string{"GET"}, check: soakError("ERR wrong number of arguments for 'get' command")})
		return append(ops, &soakOp{args: []string{"EXEC"}, check: soakError("EXECABORT Transaction discarded because of previous errors.")})
	case x < 800:
		ops := []*soakOp{{args: []string{"MULTI"}, check: soakStatus("OK")}}
		for range 1 + r.IntN(4) {
			ops = append(ops, &soakOp{args: w.limiter(w.frozenKey()).args, check: soakStatus("QUEUED")})
		}
		return append(ops, &soakOp{args: []string{"DISCARD"}, check: soakStatus("OK")})
	case x < 830:
		msg := fmt.Sprintf("m%d-%d", w.id, r.IntN(1000))
		switch r.IntN(4) {
		case 0:
			return one(&soakOp{args: []string{"PING"}, check: soakStatus("PONG")})
		case 1:
			return one(&soakOp{args: []string{"PING", msg}, check: soakBulk(msg)})
		case 2:
			return one(&soakOp{args: []string{"<inline PING>"}, req: []byte("PING\r\n"), check: soakStatus("PONG")})
		}
		return one(&soakOp{args: []string{"<inline ECHO>", msg + " x"}, req: []byte("ECHO \"" + msg + " x\"\r\n"), check: soakBulk(msg + " x")})
	case x < 850:
		ch := "soak:ch"
		if r.IntN(2) == 0 {
			ch = "soak:p" + strconv.Itoa(r.IntN(10))
		}
		w.stats.published++
		return one(&soakOp{args: []string{"PUBLISH", ch, fmt.Sprintf("m%d", w.id)}, check: soakInt(0, soakSubscribers)})
	case x < 858:
		return one(w.hello(2 + r.IntN(2)))
	case x < 862:
		w.resp3 = false
		return one(&soakOp{args: []string{"RESET"}, check: soakStatus("RESET")})
	}
	return one(w.serverQuery(resp3))
}

// frozenQuery reads a budget key, which exists throughout.
func (w *soakWorker) frozenQuery(k *soakKey) *soakOp {
	E := rltest.StartNs
	switch w.r.IntN(7) {
	case 0:
		return &soakOp{args: []string{"EXISTS", k.name, "nosuch", k.name}, check: soakInt(2, 2)}
	case 1:
		return &soakOp{args: []string{"TYPE", k.name}, check: soakStatus(soakAlgs[k.alg].typ)}
	case 2:
		return &soakOp{args: []string{"PTTL", k.name}, check: func(v soakVal, c soakCtx) error {
			// An RL.* key's PTTL is its reset_after; FIXED's and
			// SLIDE's depend on the clock only.
			lo, hi := int64(1), int64(math.MaxInt64)
			switch k.alg {
			case soakFixed:
				end := E - E%k.window + k.window
				lo, hi = soakCeilMs(end-c.hi), soakCeilMs(end-c.lo)
			case soakSlide:
				end := E - E%k.window + 2*k.window
				lo, hi = soakCeilMs(end-c.hi), soakCeilMs(end-c.lo)
			}
			return soakInt(lo, hi)(v, c)
		}}
	case 3:
		return &soakOp{args: []string{"TTL", k.name}, check: soakInt(1, math.MaxInt64)}
	case 4:
		if k.alg != soakCL {
			return &soakOp{args: []string{"GET", k.name}, check: soakError(soakWrongType)}
		}
		return &soakOp{args: []string{"GET", k.name}, check: func(v soakVal, _ soakCtx) error {
			// The TAT: one interval per unit used.
			tat, err := strconv.ParseInt(v.s, 10, 64)
			if v.typ != '$' || err != nil || tat < E+k.window || tat > E+k.limit*k.window || (tat-E)%k.window != 0 {
				return fmt.Errorf("want a TAT of StartNs plus 1..%d intervals", k.limit)
			}
			return nil
		}}
	case 5:
		enc := map[bool]string{true: "int", false: "record"}[k.alg == soakCL]
		return &soakOp{args: []string{"OBJECT", "ENCODING", k.name}, check: func(v soakVal, _ soakCtx) error {
			if (v.typ != '$' && v.typ != '+') || v.s != enc {
				return fmt.Errorf("want %s", enc)
			}
			return nil
		}}
	}
	return &soakOp{args: []string{"MEMORY", "USAGE", k.name}, check: soakInt(1, 1<<30)}
}

func (w *soakWorker) scratchQuery() *soakOp {
	r, resp3 := w.r, w.resp3
	k := w.scratchKey()
	k2, k3 := w.scratchKey(), w.scratchKey()
	switch r.IntN(9) {
	case 0:
		return &soakOp{args: []string{"EXISTS", k.name, k2.name, k3.name}, check: soakInt(0, 3)}
	case 1:
		return &soakOp{args: []string{"TYPE", k.name}, check: func(v soakVal, _ soakCtx) error {
			if v.typ != '+' || (v.s != "none" && v.s != soakAlgs[k.alg].typ) {
				return fmt.Errorf("want none or %s", soakAlgs[k.alg].typ)
			}
			return nil
		}}
	case 2:
		return &soakOp{args: []string{"PTTL", k.name}, check: soakInt(-2, int64(time.Hour/time.Millisecond))}
	case 3:
		return &soakOp{args: []string{"TTL", k.name}, check: soakInt(-2, 3600)}
	case 4:
		return &soakOp{args: []string{"GET", k.name}, check: func(v soakVal, _ soakCtx) error {
			switch {
			case soakIsNull(v, resp3):
			case k.alg != soakCL:
				return soakError(soakWrongType)(v, soakCtx{})
			default:
				if _, err := strconv.ParseUint(v.s, 10, 64); v.typ != '$' || err != nil {
					return errors.New("want a TAT or null")
				}
			}
			return nil
		}}
	case 5:
		return &soakOp{args: []string{"DEL", k.name, k2.name}, check: soakInt(0, 2)}
	case 6:
		return &soakOp{args: []string{"UNLINK", k.name}, check: soakInt(0, 1)}
	case 7:
		return &soakOp{args: []string{"MEMORY", "USAGE", k.name}, check: func(v soakVal, c soakCtx) error {
			if soakIsNull(v, resp3) {
				return nil
			}
			return soakInt(1, 1<<30)(v, c)
		}}
	}
	// SET replaces a CL.THROTTLE scratch key with a TAT far ahead (a
	// locked bucket), for a few seconds.
	k = soakScratchKey(soakCL, r.IntN(soakScratch))
	tat := strconv.FormatInt(rltest.StartNs+1e15+r.Int64N(1e12), 10)
	if r.IntN(3) == 0 {
		return &soakOp{args: []string{"SET", k.name, tat, "NX", "PX", strconv.Itoa(1 + r.IntN(5000))}, check: func(v soakVal, c soakCtx) error {
			if soakIsNull(v, resp3) {
				return nil
			}
			return soakStatus("OK")(v, c)
		}}
	}
	return &soakOp{args: []string{"SET", k.name, tat, "PX", strconv.Itoa(1 + r.IntN(5000))}, check: soakStatus("OK")}
}

// badInput is a request that must be refused, changing nothing; half of
// them name a budget key, with the key's own algorithm.
func (w *soakWorker) badInput() *soakOp {
	r := w.r
	k := w.scratchKey()
	if r.IntN(2) == 0 {
		k = w.frozenKey()
	}
	cmd := soakAlgs[k.alg].cmd
	const (
		notInt   = "ERR value is not an integer or out of range"
		positive = "ERR value is out of range, must be positive"
		syntax   = "ERR syntax error"
	)
	type bad struct {
		args []string
		err  string
	}
	var cases []bad
	switch k.alg {
	case soakCL:
		cases = []bad{
			{[]string{cmd, k.name, "1"}, "Cell error: Store error: Usage: cl.throttle <key> <max_burst> <count per period> <period> [<quantity>]"},
			{[]string{cmd, k.name, "1", "x", "60"}, "Cell error: Store error: Couldn't parse as integer: x"},
			{[]string{cmd, k.name, "9", "1", "3600", "1.5"}, "Cell error: Store error: Couldn't parse as integer: 1.5"},
			{[]string{cmd, k.name, "1", "0", "60"}, "Cell error: Store error: Zero rates are not supported"},
			{[]string{cmd, k.name, "9", "1", "3600", "1", "1"}, "Cell error: Store error: Usage: cl.throttle"},
		}
	case soakBucket:
		cases = []bad{
			{[]string{cmd, k.name, "10", "1"}, "ERR wrong number of arguments for 'rl.bucket' command"},
			{[]string{cmd, k.name, "ten", "1", "1h"}, notInt},
			{[]string{cmd, k.name, "10", "1", "1y"}, "ERR invalid period '1y': use an integer with ms, s, m, h or d, from 1ms to 3650d"},
			{[]string{cmd, k.name, "-1", "1", "1h"}, positive},
			{[]string{cmd, k.name, "10", "0", "1h"}, positive},
			{[]string{cmd, k.name, "10", "1", "1h", "COST"}, syntax},
			{[]string{cmd, k.name, "10", "1", "1h", "COST", "-2"}, positive},
		}
	default:
		cases = []bad{
			{[]string{cmd, k.name, "10"}, "ERR wrong number of arguments for '" + strings.ToLower(cmd) + "' command"},
			{[]string{cmd, k.name, "ten", "1h"}, notInt},
			{[]string{cmd, k.name, "10", "1.5s"}, "ERR invalid period '1.5s'"},
			{[]string{cmd, k.name, "10", "3651d"}, "ERR invalid period '3651d'"},
			{[]string{cmd, k.name, "-1", "1h"}, positive},
			{[]string{cmd, k.name, "10", "1h", "COST"}, syntax},
			{[]string{cmd, k.name, "10", "1h", "BOGUS", "1"}, syntax},
			{[]string{cmd, k.name, "10", "1h", "COST", "99999999999999999999"}, notInt},
		}
	}
	cases = append(cases,
		bad{[]string{"NOSUCH", k.name}, "ERR unknown command 'NOSUCH', with args beginning with: '" + k.name + "' "},
		bad{[]string{"GET"}, "ERR wrong number of arguments for 'get' command"},
		bad{[]string{"GET", k.name, k.name}, "ERR wrong number of arguments for 'get' command"},
		bad{[]string{"SELECT", "1"}, "ERR DB index is out of range"},
		bad{[]string{"DEBUG", "CLOCK", "SET", "0"}, "ERR DEBUG CLOCK SET would move the clock backwards"},
		bad{[]string{"DEBUG", "CLOCK", "ADVANCE", "-5"}, "ERR DEBUG CLOCK SET would move the clock backwards"},
		bad{[]string{"SCAN", "x"}, "ERR invalid cursor"},
		bad{[]string{"EXEC"}, "ERR EXEC without MULTI"},
		bad{[]string{"DISCARD"}, "ERR DISCARD without MULTI"},
		bad{[]string{"HELLO", "4"}, "NOPROTO unsupported protocol version"},
		bad{[]string{"CLIENT", "NOSUCH"}, "ERR unknown subcommand 'NOSUCH'. Try CLIENT HELP."},
		bad{[]string{"SET", "sk:c:0", "abc"}, notInt},
	)
	c := cases[r.IntN(len(cases))]
	return &soakOp{args: c.args, check: soakError(c.err)}
}

// multi is a transaction of requests that run at one clock reading.
func (w *soakWorker) multi() []*soakOp {
	ops := []*soakOp{{args: []string{"MULTI"}, check: soakStatus("OK")}}
	exec := &soakOp{args: []string{"EXEC"}}
	for range 1 + w.r.IntN(8) {
		var q *soakOp
		switch x := w.r.IntN(10); {
		case x < 5:
			q = w.limiter(w.frozenKey())
		case x < 7:
			q = w.limiter(w.env.refill[w.r.IntN(len(w.env.refill))])
		case x < 8:
			q = w.limiter(w.scratchKey())
		case x < 9:
			q = w.frozenQuery(w.frozenKey())
		default:
			q = &soakOp{args: []string{"PING"}, check: soakStatus("PONG")}
		}
		ops = append(ops, &soakOp{args: q.args, check: soakStatus("QUEUED")})
		exec.exec = append(exec.exec, q)
	}
	return append(ops, exec)
}

func (w *soakWorker) serverQuery(resp3 bool) *soakOp {
	r, e := w.r, w.env
	switch r.IntN(24) {
	case 0:
		sec := []string{"", "server", "clients", "memory", "stats", "replication", "cpu", "keyspace", "rlserver", "commandstats", "everything"}[r.IntN(11)]
		args := []string{"INFO"}
		if sec != "" {
			args = append(args, sec)
		}
		return &soakOp{args: args, check: soakText(resp3, soakInfoText)}
	case 1:
		return &soakOp{args: []string{"INFO", "persistence"}, check: soakText(resp3, func(s string) error {
			if err := soakInfoText(s); err != nil {
				return err
			}
			f := rltest.InfoFields(s)
			if f["rdb_last_bgsave_status"] != "ok" || f["rdb_save_errors"] != "0" {
				return errors.New("snapshots failing")
			}
			return nil
		})}
	case 2:
		return &soakOp{args: []string{"CLIENT", "LIST"}, check: soakText(resp3, func(s string) error {
			for _, l := range strings.Split(strings.TrimSuffix(s, "\n"), "\n") {
				if !strings.HasPrefix(l, "id=") || !strings.Contains(l, " addr=127.0.0.1:") {
					return fmt.Errorf("CLIENT LIST line %q", l)
				}
			}
			return nil
		})}
	case 3:
		return &soakOp{args: []string{"CLIENT", "INFO"}, check: soakText(resp3, func(s string) error {
			if !strings.HasPrefix(s, "id=") || !strings.HasSuffix(s, "\n") || strings.Count(s, "\n") != 1 {
				return fmt.Errorf("CLIENT INFO %q", s)
			}
			return nil
		})}
	case 4:
		return &soakOp{args: []string{"CLIENT", "ID"}, check: soakInt(1, math.MaxInt64)}
	case 5:
		return &soakOp{args: []string{"CLIENT", "SETNAME", fmt.Sprintf("soak-%d", w.id)}, check: soakStatus("OK")}
	case 6:
		return &soakOp{args: []string{"CLIENT", "GETNAME"}, check: func(v soakVal, c soakCtx) error {
			if soakIsNull(v, resp3) {
				return nil
			}
			return soakBulk(fmt.Sprintf("soak-%d", w.id))(v, c)
		}}
	case 7:
		args := []string{"SCAN", "0"}
		if r.IntN(2) == 0 {
			args = append(args, "TYPE", soakAlgs[r.IntN(len(soakAlgs))].typ)
		}
		return &soakOp{args: append(args, "COUNT", strconv.Itoa(1+r.IntN(100))), check: func(v soakVal, _ soakCtx) error {
			if v.typ != '*' || len(v.elems) != 2 || v.elems[0].typ != '$' || v.elems[1].typ != '*' {
				return errors.New("want [cursor [keys...]]")
			}
			for _, k := range v.elems[1].elems {
				if k.typ != '$' {
					return errors.New("a key that is not a bulk string")
				}
			}
			return nil
		}}
	case 8:
		if r.IntN(10) != 0 {
			return &soakOp{args: []string{"DBSIZE"}, check: soakInt(int64(len(e.frozen)), 1<<40)}
		}
		return &soakOp{args: []string{"KEYS", "bk:*"}, check: func(v soakVal, _ soakCtx) error {
			var got []string
			for _, k := range v.elems {
				got = append(got, k.s)
			}
			var want []string
			for _, k := range e.frozen {
				want = append(want, k.name)
			}
			slices.Sort(want)
			if v.typ != '*' || !slices.Equal(got, want) {
				return fmt.Errorf("want exactly the budget keys, sorted: %q", want)
			}
			return nil
		}}
	case 9:
		return &soakOp{args: []string{"TIME"}, check: func(v soakVal, c soakCtx) error {
			if v.typ != '*' || len(v.elems) != 2 || v.elems[0].typ != '$' || v.elems[1].typ != '$' {
				return errors.New("want two bulk strings")
			}
			s, err1 := soakCanon(v.elems[0].s)
			us, err2 := soakCanon(v.elems[1].s)
			if err := errors.Join(err1, err2); err != nil {
				return err
			}
			if t := s*1e6 + us; us < 0 || us >= 1e6 || t < c.lo/1000 || t > c.hi/1000 {
				return fmt.Errorf("TIME outside the clock's %d..%d", c.lo, c.hi)
			}
			return nil
		}}
	case 10:
		return &soakOp{args: []string{"DEBUG", "CLOCK", "GET"}, check: func(v soakVal, c soakCtx) error {
			return soakInt(c.lo, c.hi)(v, c)
		}}
	case 11:
		return &soakOp{args: []string{"COMMAND", "COUNT"}, check: soakInt(20, 1000)}
	case 12:
		return &soakOp{args: []string{"COMMAND", "INFO", "rl.fixed"}, check: func(v soakVal, _ soakCtx) error {
			if v.typ != '*' || len(v.elems) != 1 || len(v.elems[0].elems) != 10 || v.elems[0].elems[0].s != "rl.fixed" {
				return errors.New("want one 10-element entry named rl.fixed")
			}
			return nil
		}}
	case 13:
		return &soakOp{args: []string{"CONFIG", "GET", "maxclients"}, check: func(v soakVal, _ soakCtx) error {
			f, err := soakField(v, resp3, "maxclients")
			if err != nil {
				return err
			}
			if f.typ != '$' || f.s != "10000" {
				return fmt.Errorf("maxclients %s", f)
			}
			return nil
		}}
	case 14:
		return &soakOp{args: []string{"RL.TOP", "3"}, check: func(v soakVal, _ soakCtx) error {
			if v.typ != '*' || len(v.elems) > 3 {
				return errors.New("want at most 3 entries")
			}
			return nil
		}}
	case 15:
		return &soakOp{args: []string{"SLOWLOG", "LEN"}, check: soakInt(0, 128)}
	case 16:
		return &soakOp{args: []string{"ROLE"}, check: func(v soakVal, _ soakCtx) error {
			if v.typ != '*' || len(v.elems) == 0 || v.elems[0].s != "master" {
				return errors.New("want [master ...]")
			}
			return nil
		}}
	case 17:
		return &soakOp{args: []string{"LASTSAVE"}, check: soakInt(0, math.MaxInt64)}
	case 18:
		// Rare: the periodic snapshots (every 100 ms) must carry the
		// state, not these.
		switch r.IntN(400) {
		case 0:
			return &soakOp{args: []string{"SAVE"}, check: soakStatus("OK")}
		case 1, 2, 3:
		default:
			return &soakOp{args: []string{"LASTSAVE"}, check: soakInt(0, math.MaxInt64)}
		}
		return &soakOp{args: []string{"BGSAVE"}, check: func(v soakVal, c soakCtx) error {
			if v.typ == '-' {
				return soakError("ERR Background save already in progress")(v, c)
			}
			return soakStatus("Background saving started")(v, c)
		}}
	case 19:
		return &soakOp{args: []string{"SELECT", "0"}, check: soakStatus("OK")}
	case 20:
		return &soakOp{args: []string{"WAIT", "0", "0"}, check: soakInt(0, 0)}
	case 21:
		return &soakOp{args: []string{"LATENCY", "LATEST"}, check: func(v soakVal, _ soakCtx) error {
			if v.typ != '*' {
				return errors.New("want an array")
			}
			return nil
		}}
	case 22:
		return &soakOp{args: []string{"DBSIZE"}, check: soakInt(int64(len(e.frozen)), 1<<40)}
	}
	return &soakOp{args: []string{"ECHO", ""}, check: soakBulk("")}
}

// closer ends a pipeline with a request after which the server closes
// the connection: QUIT, or input it must refuse (docs/protocol.md,
// "Limits" and "Errors and bad input").
func (w *soakWorker) closer() *soakOp {
	pe := "ERR Protocol error: "
	switch w.r.IntN(7) {
	case 0:
		return &soakOp{args: []string{"QUIT"}, check: soakStatus("OK"), closes: true}
	case 1:
		return &soakOp{args: []string{"<bad $>"}, req: []byte("*2\r\n$4\r\nECHO\r\n!\r\n"), check: soakError(pe + "expected '$', got '!'"), closes: true}
	case 2:
		return &soakOp{args: []string{"<bad count>"}, req: []byte("*abc\r\n"), check: soakError(pe + "invalid multibulk length"), closes: true}
	case 3:
		return &soakOp{args: []string{"<bad length>"}, req: []byte("*1\r\n$x\r\n"), check: soakError(pe + "invalid bulk length"), closes: true}
	case 4:
		return &soakOp{args: []string{"<too many arguments>"}, req: []byte("*5000\r\n"), check: soakError(pe + "invalid multibulk length"), closes: true}
	case 5:
		return &soakOp{args: []string{"<unbalanced quotes>"}, req: []byte("ECHO \"abc\r\n"), check: soakError(pe + "unbalanced quotes in request"), closes: true}
	}
	k := strings.Repeat("k", 1025)
	return &soakOp{args: []string{"RL.FIXED", "<1025-byte key>", "1", "1h"}, req: rltest.Encode("RL.FIXED", k, "1", "1h"),
		check: soakError(pe + "key too long"), closes: true}
}

// ---------------------------------------------------------------------
// go-redis clients: pipelines and transactions as go-redis sends them.

func soakFromGo(v any, err error) (soakVal, bool) {
	if err != nil {
		if errors.Is(err, redis.Nil) {
			return soakVal{typ: '$', null: true}, true
		}
		var re redis.Error
		if errors.As(err, &re) {
			return soakVal{typ: '-', s: re.Error()}, true
		}
		return soakVal{}, false
	}
	switch x := v.(type) {
	case int64:
		return soakVal{typ: ':', n: x}, true
	case string:
		return soakVal{typ: '$', s: x}, true
	case []any:
		out := soakVal{typ: '*', elems: []soakVal{}}
		for _, e := range x {
			ev, ok := soakFromGo(e, nil)
			if !ok {
				return soakVal{}, false
			}
			out.elems = append(out.elems, ev)
		}
		return out, true
	case nil:
		return soakVal{typ: '$', null: true}, true
	}
	return soakVal{typ: '?', s: fmt.Sprintf("%T", v)}, true
}

func (w *soakWorker) runGoRedis(wg *sync.WaitGroup, proto int) {
	defer wg.Done()
	for !w.env.done() {
		g := w.env.gen.Load()
		rdb := redis.NewClient(&redis.Options{Addr: g.addr, Protocol: proto, MaxRetries: -1, PoolSize: 2,
			DialTimeout: 10 * time.Second, ReadTimeout: soakIO, WriteTimeout: soakIO,
			// While the server restarts, a dial waits for the next one
			// (go-redis would log each refused dial).
			Dialer: func(ctx context.Context, network, _ string) (net.Conn, error) {
				if w.env.down(g) && !w.env.awaitNext(g) {
					return nil, errors.New("the soak is over")
				}
				var d net.Dialer
				return d.DialContext(ctx, network, w.env.gen.Load().addr)
			}})
		ok := true
		for ok && !w.env.done() {
			ok = w.goRedisRound(rdb, g)
		}
		rdb.Close()
		if !ok && !w.env.awaitNext(g) {
			return
		}
	}
}

// goRedisRound runs one pipeline or transaction; false when the server
// went away.
func (w *soakWorker) goRedisRound(rdb *redis.Client, g *soakGen) bool {
	ctx := context.Background()
	var ops []*soakOp
	for range 1 + w.r.IntN(40) {
		switch x := w.r.IntN(10); {
		case x < 5:
			ops = append(ops, w.limiter(w.frozenKey()))
		case x < 7:
			ops = append(ops, w.limiter(w.env.refill[w.r.IntN(len(w.env.refill))]))
		case x < 8:
			ops = append(ops, w.limiter(w.scratchKey()))
		case x < 9:
			k := w.frozenKey()
			ops = append(ops, &soakOp{args: []string{"EXISTS", k.name}, check: soakInt(1, 1)})
		default:
			ops = append(ops, &soakOp{args: []string{"ECHO", "go"}, check: soakBulk("go")})
		}
	}
	tx := w.r.IntN(3) == 0
	lo, send := w.env.clockLo.Load(), w.env.since()
	var pipe redis.Pipeliner
	if tx {
		pipe = rdb.TxPipeline()
	} else {
		pipe = rdb.Pipeline()
	}
	cmds := make([]*redis.Cmd, len(ops))
	for i, op := range ops {
		args := make([]any, len(op.args))
		for j, a := range op.args {
			args[j] = a
		}
		cmds[i] = pipe.Do(ctx, args...)
	}
	pipe.Exec(ctx) // each command's own result is checked below
	c := soakCtx{lo: lo, hi: w.env.clockHi.Load(), send: send, recv: w.env.since()}
	w.stats.batches++
	w.stats.cmds += int64(len(ops))
	alive := true
	for i, cmd := range cmds {
		v, ok := soakFromGo(cmd.Val(), cmd.Err())
		if !ok {
			if !w.env.down(g) {
				w.env.fail("go-redis client %d: %q: %v", w.id, ops[i].args, cmd.Err())
			}
			w.lost(ops[i : i+1])
			alive = false
			continue
		}
		w.stats.replies++
		if err := w.verify(ops[i], v, c); err != nil {
			w.env.fail("go-redis client %d (tx %v): %q: got %s: %v", w.id, tx, ops[i].args, v, err)
			return false
		}
	}
	return alive
}

// subscribe listens on soak:ch and soak:p* until the end, reconnecting
// across the restart; every message must be well formed.
func (e *soakEnv) subscribe(wg *sync.WaitGroup, id int, resp3 bool) {
	defer wg.Done()
	var st soakStats
	defer func() { e.mu.Lock(); e.stats.add(st); e.mu.Unlock() }()
	for !e.done() {
		g := e.gen.Load()
		nc, err := net.DialTimeout("tcp", g.addr, 10*time.Second)
		if err != nil {
			if !e.down(g) {
				e.fail("subscriber %d: dial: %v", id, err)
				return
			}
			if !e.awaitNext(g) {
				return
			}
			continue
		}
		e.mu.Lock()
		e.subs[nc] = true
		e.mu.Unlock()
		if e.done() { // the end came while dialing: nobody would close nc
			nc.Close()
			return
		}
		err = e.listen(nc, resp3, &st)
		nc.Close()
		e.mu.Lock()
		delete(e.subs, nc)
		e.mu.Unlock()
		switch {
		case e.done():
			return
		case !e.down(g):
			e.fail("subscriber %d: %v", id, err)
			return
		case !e.awaitNext(g):
			return
		}
	}
}

// listen subscribes on nc and reads messages until the connection ends;
// both confirmations come before any message.
func (e *soakEnv) listen(nc net.Conn, resp3 bool, st *soakStats) error {
	rd := bufio.NewReader(nc)
	kind := byte('*')
	req := rltest.Encode("SUBSCRIBE", "soak:ch")
	req = append(req, rltest.Encode("PSUBSCRIBE", "soak:p*")...)
	if resp3 {
		kind = '>'
		req = append(rltest.Encode("HELLO", "3"), req...)
	}
	if _, err := nc.Write(req); err != nil {
		return err
	}
	if resp3 {
		if v, err := soakRead(rd); err != nil || v.typ != '%' {
			return fmt.Errorf("HELLO 3: %s %v", v, err)
		}
	}
	message := func(v soakVal) bool {
		if v.typ != kind || len(v.elems) < 3 {
			return false
		}
		switch soakPlain(v.elems[0]) {
		case "message":
			return len(v.elems) == 3 && v.elems[1].s == "soak:ch" && strings.HasPrefix(v.elems[2].s, "m")
		case "pmessage":
			return len(v.elems) == 4 && v.elems[1].s == "soak:p*" && strings.HasPrefix(v.elems[2].s, "soak:p") && strings.HasPrefix(v.elems[3].s, "m")
		}
		return false
	}
	for i, want := range []string{"[subscribe soak:ch 1]", "[psubscribe soak:p* 2]"} {
		v, err := soakRead(rd)
		if err != nil {
			return err
		}
		if got := soakPlain(v); v.typ != kind || got != want {
			e.fail("subscriber: confirmation %d: got %s, want %c%s", i, v, kind, want)
			return errors.New("no confirmation")
		}
	}
	for {
		v, err := soakRead(rd)
		if err != nil {
			return err
		}
		if !message(v) {
			e.fail("subscriber: message %s", v)
			return errors.New("bad message")
		}
		st.received++
	}
}

// soakPlain renders a reply without its types, as [a b 1].
func soakPlain(v soakVal) string {
	switch {
	case v.typ == ':':
		return strconv.FormatInt(v.n, 10)
	case v.elems != nil:
		parts := make([]string, len(v.elems))
		for i, e := range v.elems {
			parts[i] = soakPlain(e)
		}
		return "[" + strings.Join(parts, " ") + "]"
	}
	return v.s
}

// ---------------------------------------------------------------------

// TestSoak: see the top of this file. Two bounds on memory:
//
//   - What the server keeps: the live Go heap once every client has gone
//     and the test has dropped its record of replies, less the live heap
//     before the server started. The server holds a few thousand
//     keys, its histograms, RL.TOP's summaries and a snapshot's scratch:
//     6-8 MiB after 60 s and 9.7M requests; under -race 15 MiB after 8 s
//     and 170k requests, Pebble's memtables being Go heap then. 24 MiB
//     means something is kept per request or per connection (a leak of
//     128 bytes a request reached 28-30 MiB under -race).
//   - RSS, without the race detector: the server, its 200 clients, their
//     per-connection buffers of at most a pipeline (600 requests) and the
//     test's record of the budget keys' replies (32 bytes each, runs of
//     refusals merged) peaked at 150-330 MiB over 60 s; the bound is 1 GiB.
//     Under -race RSS is logged, not bounded: the race runtime's shadow
//     and per-goroutine memory (about 330 MiB beside a 60 MiB Go heap in
//     an 8 s soak on an idle machine) follow the heap's high-water mark
//     and every goroutine the package's earlier tests started, which the
//     GC's pacing on a loaded machine decides (a CI run saw 1.2 GiB of
//     growth from 687 MiB).
func TestSoak(t *testing.T) {
	budget := soakBudget(t)
	ignore := goleak.IgnoreCurrent()
	seed := rand.Uint64()
	if s := envSeed(); s != 0 {
		seed = s
	}
	t.Logf("seed %d (RLSERVER_SEED replays it), %v of clients", seed, budget)
	rssStart := proc.RSS()
	heapStart := liveHeap()
	var goSys uint64 // the Go runtime's memory when RSS peaked
	wallStart := time.Now()

	dir := t.TempDir()
	var base server.Options
	srv := testserver.Start(t, func(o *server.Options) {
		o.Config.Dir = dir
		o.Config.SaveInterval = 100 * time.Millisecond
		base = *o
	})
	frozen, refill := soakKeys()
	e := &soakEnv{t0: time.Now(), seed: seed, frozen: frozen, refill: refill, keys: append(append([]*soakKey{}, frozen...), refill...),
		stop: make(chan struct{}), abort: make(chan struct{}), subs: map[net.Conn]bool{}}
	for i, k := range e.keys {
		k.id = i
	}
	for a := range soakAlgs {
		for n := range soakScratch {
			e.scratch[a] = append(e.scratch[a], soakScratchKey(soakAlg(a), n))
		}
	}
	e.units, e.unseen, e.obs = make([]int64, len(e.keys)), make([]int64, len(e.keys)), make([][]soakObs, len(frozen))
	e.clockLo.Store(rltest.StartNs)
	e.clockHi.Store(rltest.StartNs)
	g := &soakGen{addr: srv.Addr.String(), perConn: base.GoroutinePerConn, stopping: make(chan struct{}), next: make(chan struct{})}
	e.gen.Store(g)

	// Every budget key takes its first unit at StartNs, before the
	// clients start: each reply is known exactly.
	ctl := rltest.Dial(t, g.addr)
	for _, k := range frozen {
		want := map[soakAlg]int64{soakFixed: 2800000, soakLog: 3600000, soakSlide: 6400000, soakBucket: 3600000, soakCL: 3600}[k.alg]
		send := e.since()
		got := ctl.Do(k.args(rand.New(rand.NewPCG(seed, 0)), 1)...)
		require.Equal(t, fmt.Sprintf("[0 %d %d -1 %d]", k.limit, k.limit-1, want), got, k.name)
		e.obs[k.id] = append(e.obs[k.id], soakObs{send: send, recv: e.since(), rem: int32(k.limit - 1), cost: 1, key: int16(k.id), admitted: true})
		e.units[k.id]++
	}

	// The clients.
	var wg sync.WaitGroup
	workers := make([]*soakWorker, soakConns)
	for i := range workers {
		w := &soakWorker{env: e, id: i, r: rand.New(rand.NewPCG(seed, uint64(i)+1)),
			units: make([]int64, len(e.keys)), unseen: make([]int64, len(e.keys)), last: make([]int, len(e.keys))}
		for k := range w.last {
			w.last[k] = -1
		}
		workers[i] = w
		wg.Add(1)
		if i < soakGoRedis {
			go w.runGoRedis(&wg, 2+i%2)
		} else {
			go w.run(&wg)
		}
	}
	for i := range soakSubscribers {
		wg.Add(1)
		go e.subscribe(&wg, i, i == 0)
	}
	var stopOnce sync.Once
	stopClients := func() {
		stopOnce.Do(func() {
			close(e.stop)
			e.mu.Lock()
			for nc := range e.subs {
				nc.Close()
			}
			e.mu.Unlock()
			finished := make(chan struct{})
			go func() { wg.Wait(); close(finished) }()
			select {
			case <-finished:
			case <-time.After(2 * soakIO):
				buf := make([]byte, 1<<20)
				t.Fatalf("clients still running 2 minutes after the end:\n%s", buf[:runtime.Stack(buf, true)])
			}
		})
	}
	defer stopClients()

	// The clock moves in small random steps while the clients run; RSS
	// is sampled; halfway, the restart.
	r := rand.New(rand.NewPCG(seed, 0))
	clock, advanced := rltest.StartNs, int64(0)
	rssPeak, rssSamples := rssStart, 0
	var restartTook time.Duration
	var savesBefore int64
	restarted := false
	tick := time.NewTicker(20 * time.Millisecond)
	defer tick.Stop()
	deadline := time.Now().Add(budget)
	for time.Now().Before(deadline) && !e.done() {
		<-tick.C // the pace of the clock's steps, not a wait for state
		if d := r.Int64N(60 * int64(time.Millisecond)); advanced+d <= soakMaxAdvance {
			e.clockHi.Store(clock + d)
			require.Equal(t, "+OK", ctl.Do("DEBUG", "CLOCK", "ADVANCE", strconv.FormatInt(d, 10)+"ns"))
			clock += d
			advanced += d
			e.clockLo.Store(clock)
		}
		if rss := proc.RSS(); rss > rssPeak {
			rssPeak = rss
			var ms runtime.MemStats
			runtime.ReadMemStats(&ms)
			goSys = ms.Sys - ms.HeapReleased
		}
		rssSamples++
		if !restarted && time.Until(deadline) < budget/2 {
			restarted = true
			savesBefore = rltest.InfoInt(t, ctl, "persistence", "rdb_saves")
			began := time.Now()
			srv, ctl = soakRestart(t, e, srv, base, clock)
			restartTook = time.Since(began)
			t.Logf("restart at %v: shut down and started again in %v, %d keys loaded, %d snapshots before",
				time.Since(e.t0).Round(time.Millisecond), restartTook.Round(time.Millisecond), srv.Loaded.Keys, savesBefore)
		}
	}
	stopClients()
	rssSoak := rssPeak
	e.mu.Lock()
	errs := e.errs
	e.mu.Unlock()
	if len(errs) > 0 {
		t.Fatalf("seed %d: %d failures, the first:\n%s", seed, len(errs), strings.Join(errs, "\n"))
	}
	require.True(t, restarted, "the soak ended before its restart")
	for _, w := range workers {
		e.stats.add(w.stats)
		for _, o := range w.obs {
			e.obs[o.key] = append(e.obs[o.key], o)
		}
		w.obs = nil
		for i := range e.keys {
			e.units[i] += w.units[i]
			e.unseen[i] += w.unseen[i]
		}
	}

	// Nothing moved the clock but the test; the server dropped every
	// client that went away.
	require.Equal(t, strconv.FormatInt(clock, 10), ctl.Do("DEBUG", "CLOCK", "GET"))
	rltest.WaitFor(t, 20*time.Second, "the clients gone from the server", func() (bool, string) {
		n := rltest.InfoInt(t, ctl, "clients", "connected_clients")
		return n == 1, fmt.Sprintf("connected_clients:%d (the test's own connection is 1)", n)
	})
	soakCheckLimits(t, e, e.gen.Load().addr, clock)
	e.obs = nil // the test's record of replies, checked
	serverHeap := liveHeap() - heapStart
	ip := rltest.Info(t, ctl, "persistence")
	require.Equal(t, "ok", ip["rdb_last_bgsave_status"])
	require.Equal(t, "0", ip["rdb_save_errors"])
	savesAfter, err := strconv.ParseInt(ip["rdb_saves"], 10, 64)
	require.NoError(t, err)
	// Snapshots every 100 ms, as long as there are changes: at least a
	// few per second on either side of the restart.
	require.Greater(t, savesBefore, int64(budget/2/time.Second), "snapshots before the restart")
	require.Greater(t, savesAfter, int64(budget/2/time.Second), "snapshots after the restart")
	stats := rltest.Info(t, ctl, "stats")

	// Everything stops: no goroutine may be left behind.
	require.NoError(t, ctl.Close())
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	require.NoError(t, srv.Shutdown(ctx, true))
	goleak.VerifyNone(t, ignore)

	if rss := proc.RSS(); rss > rssPeak {
		rssPeak = rss
	}
	st := e.stats
	secs := time.Since(e.t0).Seconds()
	t.Logf("%d clients (%d through go-redis) and %d subscribers for %v, %.1f s of wall time in all: %d pipelines, %d requests (%.0f/s), %d replies checked, %d transactions, %d SCAN walks",
		soakConns, soakGoRedis, soakSubscribers, budget, time.Since(wallStart).Seconds(), st.batches, st.cmds, float64(st.cmds)/secs, st.replies, st.execs, st.scans)
	t.Logf("connections: %d opened, %d dropped after sending a pipeline, %d after half a request, %d after some replies, %d closed by QUIT or a protocol error; server: total_connections_received %s",
		st.reconnects, st.abandoned, st.truncated, st.partial, st.closers, stats["total_connections_received"])
	t.Logf("pub/sub: %d PUBLISH, %d messages received; snapshots: %d before the restart, %d after; restart took %v; clock moved %v",
		st.published, st.received, savesBefore, savesAfter, restartTook.Round(time.Millisecond), time.Duration(advanced))
	t.Logf("RSS: %.1f MiB at the start, peak %.1f MiB while the clients ran (%d samples; Go's own memory %.1f MiB then), %.1f MiB after the checks (bound without -race: +%d MiB)",
		float64(rssStart)/(1<<20), float64(rssSoak)/(1<<20), rssSamples, float64(goSys)/(1<<20), float64(rssPeak)/(1<<20), soakRSSGrowth>>20)
	t.Logf("the server's live heap with its clients gone: %.1f MiB (bound: %d MiB)", float64(serverHeap)/(1<<20), soakServerHeap>>20)
	require.Less(t, serverHeap, int64(soakServerHeap), "the server keeps more heap than the bound")
	if !soakRace {
		require.Less(t, rssPeak-rssStart, int64(soakRSSGrowth), "RSS grew by more than the bound")
	}
}

// liveHeap is the bytes of Go heap reachable now, after a collection.
func liveHeap() int64 {
	runtime.GC()
	var ms runtime.MemStats
	runtime.ReadMemStats(&ms)
	return int64(ms.HeapAlloc)
}

// soakRestart shuts srv down with its final snapshot and starts a server
// on the same directory (and port, if it is still free), serving
// connections the other way; the clients reconnect. The clock must
// resume where it stood.
func soakRestart(t *testing.T, e *soakEnv, srv *server.Server, base server.Options, clock int64) (*server.Server, *rltest.Conn) {
	t.Helper()
	g := e.gen.Load()
	close(g.stopping)
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	began := time.Now()
	require.NoError(t, srv.Shutdown(ctx, true), "shutdown with the final snapshot")
	down := time.Since(began)
	opts := base
	opts.Config.Port = srv.Addr.(*net.TCPAddr).Port
	opts.GoroutinePerConn = !base.GoroutinePerConn
	next, err := server.Start(opts)
	if err != nil {
		t.Logf("port %d: %v; on another port", opts.Config.Port, err)
		opts.Config.Port = 0
		next, err = server.Start(opts)
	}
	require.NoError(t, err, "start again on the same directory")
	t.Logf("restart: shutdown with the final snapshot %v, start (loading %d keys) %v",
		down.Round(time.Millisecond), next.Loaded.Keys, (time.Since(began) - down).Round(time.Millisecond))
	t.Cleanup(func() {
		ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
		defer cancel()
		next.Close(ctx)
	})
	require.GreaterOrEqual(t, next.Loaded.Keys, len(e.frozen), "keys loaded")
	ng := &soakGen{addr: next.Addr.String(), perConn: opts.GoroutinePerConn, stopping: make(chan struct{}), next: make(chan struct{})}
	e.gen.Store(ng)
	close(g.next)
	ctl := rltest.Dial(t, ng.addr)
	require.Equal(t, strconv.FormatInt(clock, 10), ctl.Do("DEBUG", "CLOCK", "GET"), "the clock after the restart")
	return next, ctl
}

// soakCheckLimits: every budget key's replies, taken together, are those
// of one key answering one request at a time, and its final state
// accounts for every unit; no refill key admitted more than its
// algorithm allows over the clock's span.
func soakCheckLimits(t *testing.T, e *soakEnv, addr string, clock int64) {
	t.Helper()
	nc, err := net.DialTimeout("tcp", addr, 10*time.Second)
	require.NoError(t, err)
	defer nc.Close()
	rd := bufio.NewReader(nc)
	r := rand.New(rand.NewPCG(e.seed, 1))
	var lines []string
	for _, k := range e.frozen {
		obs := e.obs[k.id]
		// The state now, by a peek.
		nc.SetDeadline(time.Now().Add(soakIO))
		_, err := nc.Write(rltest.Encode(k.args(r, 0)...))
		require.NoError(t, err)
		v, err := soakRead(rd)
		require.NoError(t, err)
		require.NoError(t, k.check(0, v, soakCtx{lo: clock, hi: clock}), "%s: the final peek %s", k.name, v)
		final := int32(v.elems[2].n)

		// The units each admission took, in remaining's terms, never
		// overlap, and all lie at or above what remains.
		type span struct{ from, to int32 }
		var spans []span
		for _, o := range obs {
			if o.admitted && o.cost > 0 {
				spans = append(spans, span{o.rem, o.rem + o.cost})
			}
		}
		slices.SortFunc(spans, func(a, b span) int { return cmp.Compare(a.from, b.from) })
		for i, s := range spans {
			if s.from < final || int64(s.to) > k.limit || (i > 0 && s.from < spans[i-1].to) {
				t.Fatalf("%s: admissions overlap or fall outside %d..%d: units %d..%d after %d..%d",
					k.name, final, k.limit, s.from, s.to, spans[max(i-1, 0)].from, spans[max(i-1, 0)].to)
			}
		}

		// Real time: a request sent after a reply was read never sees
		// more remaining than that reply left.
		bySend := slices.Clone(obs)
		slices.SortFunc(bySend, func(a, b soakObs) int { return cmp.Compare(a.send, b.send) })
		byRecv := slices.Clone(obs)
		slices.SortFunc(byRecv, func(a, b soakObs) int { return cmp.Compare(a.recv, b.recv) })
		least, j := int32(k.limit), 0
		var leastAt int64
		for _, b := range bySend {
			for ; j < len(byRecv) && byRecv[j].recv < b.send; j++ {
				if byRecv[j].rem < least {
					least, leastAt = byRecv[j].rem, byRecv[j].recv
				}
			}
			before := b.rem
			if b.admitted {
				before += b.cost
			}
			if before > least {
				t.Fatalf("%s: a request (cost %d) sent at %v found %d remaining, but a reply read at %v had left %d",
					k.name, b.cost, time.Duration(b.send), before, time.Duration(leastAt), least)
			}
		}

		// What remains is what the test saw admitted, and at most the
		// requests whose replies it never read besides.
		used, seen, unseen := k.limit-int64(final), e.units[k.id], e.unseen[k.id]
		if seen > used || used > seen+unseen {
			t.Fatalf("%s: %d of %d units used, but %d seen admitted and %d more sent unseen", k.name, used, k.limit, seen, unseen)
		}
		lines = append(lines, fmt.Sprintf("%s: %d/%d used, %d seen admitted, %d unseen sent, %d reply records", k.name, used, k.limit, seen, unseen, len(obs)))
	}
	for _, k := range e.refill {
		b := k.bound(rltest.StartNs, clock)
		if e.units[k.id] > b {
			t.Fatalf("%s: %d units admitted, more than the %d the algorithm allows in %v", k.name, e.units[k.id], b, time.Duration(clock-rltest.StartNs))
		}
		lines = append(lines, fmt.Sprintf("%s: %d admitted of at most %d over %v", k.name, e.units[k.id], b, time.Duration(clock-rltest.StartNs)))
	}
	t.Logf("limits:\n  %s", strings.Join(lines, "\n  "))
}

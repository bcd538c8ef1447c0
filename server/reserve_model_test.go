package server_test

import (
	"fmt"
	"math/big"
	"math/rand/v2"
	"slices"
	"strconv"
	"strings"
	"testing"

	"github.com/rlserver/rlserver/internal/rltest"
	"github.com/stretchr/testify/require"
)

// resvKey is an independent model of one key that takes reservations
// (docs/reservations.md), with the parameters every call on it uses. A
// log or fixed window keeps every unit charged with its act time and
// answers by counting them; a bucket keeps its full-again time as an
// exact rational.
type resvKey struct {
	name, kind  string // kind: BUCKET, LOG or FIXED
	limit, rate int64
	window      int64    // ns
	tat         *big.Rat // a bucket's full-again time, ns
	units       []resvUnit
	last        int64      // the last ticket issued
	pend        []resvUnit // reservations not yet acted on
	tickets     []int64    // every ticket issued, to cancel again
	interval    *big.Rat   // a bucket's ns per token
}

type resvUnit struct{ act, cost int64 }

func newResvKey(name, kind string, limit, rate, window int64) *resvKey {
	k := &resvKey{name: name, kind: kind, limit: limit, rate: rate, window: window}
	k.reset()
	if kind == "BUCKET" {
		k.interval = big.NewRat(window, rate)
	}
	return k
}

func (k *resvKey) reset() {
	k.tat, k.units, k.last, k.pend = new(big.Rat), nil, 0, nil
}

// args is the call's command line.
func (k *resvKey) args(cost int64, reserve string) []string {
	a := []string{"RL." + k.kind, k.name, strconv.FormatInt(k.limit, 10)}
	if k.kind == "BUCKET" {
		a = append(a, strconv.FormatInt(k.rate, 10))
	}
	a = append(a, fmt.Sprint(k.window/1e6, "ms"), "COST", strconv.FormatInt(k.cost(cost), 10))
	if reserve != "" {
		a = append(a, "RESERVE", reserve)
	}
	return a
}

func (k *resvKey) cost(c int64) int64 { return c }

func ratCeil(r *big.Rat) int64 {
	q, m := new(big.Int).QuoRem(r.Num(), r.Denom(), new(big.Int))
	if m.Sign() > 0 {
		q.Add(q, big.NewInt(1))
	}
	return q.Int64()
}

func ratFloor(r *big.Rat) int64 {
	q := new(big.Int).Div(r.Num(), r.Denom()) // Euclidean: floor for a positive denominator
	return q.Int64()
}

func ceilMs(ns int64) int64 {
	if ns < 0 {
		return -1
	}
	return (ns + 999_999) / 1_000_000
}

// at drops what has acted by now from the line.
func (k *resvKey) at(now int64) {
	k.pend = slices.DeleteFunc(k.pend, func(u resvUnit) bool { return u.act <= now })
}

// tat0 is the bucket's full-again time, no earlier than now.
func (k *resvKey) tat0(now int64) *big.Rat {
	n := new(big.Rat).SetInt64(now)
	if k.tat.Cmp(n) > 0 {
		return new(big.Rat).Set(k.tat)
	}
	return n
}

// count is the units of a log in the window ending at t, or of a fixed
// window starting at t.
func (k *resvKey) count(t int64) int64 {
	n := int64(0)
	for _, u := range k.units {
		if k.kind == "LOG" && u.act > t-k.window || k.kind == "FIXED" && u.act >= t && u.act < t+k.window {
			n += u.cost
		}
	}
	return n
}

// earliest is the earliest time >= from at which a call of cost could be
// charged (ok false: never), and the first time at which that time may
// be reserved, searched by trying every time at which the answer can
// change.
func (k *resvKey) earliest(now, from, cost int64) (T int64, ok bool, rep int64) {
	if cost > k.limit {
		return 0, false, 0
	}
	switch k.kind {
	case "BUCKET":
		act := new(big.Rat).Add(k.tat0(now), new(big.Rat).Mul(big.NewRat(cost-k.limit, 1), k.interval))
		return max(from, ratCeil(act)), true, now
	case "LOG":
		cands := []int64{from}
		for _, u := range k.units {
			cands = append(cands, u.act+k.window)
		}
		slices.Sort(cands)
		for _, t := range cands {
			if t >= from && k.count(t)+cost <= k.limit {
				return t, true, now
			}
		}
		panic("a log always empties")
	}
	cw := now - now%k.window
	for ws := from - from%k.window; ; ws += k.window {
		if k.count(ws)+cost <= k.limit {
			T = max(from, ws)
			if ws > cw+k.window { // the key keeps two windows
				return T, true, cw + k.window
			}
			return T, true, now
		}
	}
}

// charge charges cost at T (>= now).
func (k *resvKey) charge(now, T, cost int64) {
	if cost == 0 {
		return
	}
	if k.kind == "BUCKET" {
		base := k.tat0(now)
		if t := new(big.Rat).SetInt64(T); t.Cmp(base) > 0 {
			base = t
		}
		k.tat = base.Add(base, new(big.Rat).Mul(big.NewRat(cost, 1), k.interval))
		return
	}
	k.units = append(k.units, resvUnit{T, cost})
}

// state is what the plain command answers of the key as it is: whether a
// call of cost would act now (ignoring any line), and the remaining and
// reset after it if so, else as it is.
func (k *resvKey) state(now, cost int64) (fits bool, remaining, reset int64) {
	switch k.kind {
	case "BUCKET":
		tat := k.tat0(now)
		c := new(big.Rat).Mul(big.NewRat(k.limit, 1), k.interval)
		after := new(big.Rat).Add(tat, new(big.Rat).Mul(big.NewRat(cost, 1), k.interval))
		fits = after.Cmp(new(big.Rat).Add(c, big.NewRat(now, 1))) <= 0
		if fits {
			tat = after
		}
		debt := tat.Sub(tat, big.NewRat(now, 1))
		left := new(big.Rat).Quo(new(big.Rat).Sub(c, debt), k.interval)
		return fits, max(ratFloor(left), 0), ratCeil(debt)
	case "LOG":
		total, newest := int64(0), int64(-1)
		for _, u := range k.units {
			if u.act > now-k.window {
				total += u.cost
				newest = max(newest, u.act)
			}
		}
		if fits = total+cost <= k.limit; fits && cost > 0 {
			total, newest = total+cost, max(newest, now)
		}
		if newest >= 0 {
			reset = newest + k.window - now
		}
		return fits, max(k.limit-total, 0), reset
	}
	cw := now - now%k.window
	count, next := k.count(cw), k.count(cw+k.window)
	if fits = next == 0 && count+cost <= k.limit; fits {
		count += cost
	}
	switch {
	case next > 0:
		return fits, 0, cw + 2*k.window - now
	case count > 0:
		return fits, k.limit - count, cw + k.window - now
	}
	return fits, k.limit, 0
}

// call checks the reply to a call of cost that may wait wait ns (0: the
// plain command; reserve: its RESERVE argument was given) and applies it.
func (k *resvKey) call(t *testing.T, at string, now, cost, wait int64, reserve bool, reply string) {
	k.at(now)
	if cost == 0 {
		wait = 0
	}
	line := k.last > now
	from, plainFrom := now, now
	if line {
		from, plainFrom = k.last+1, k.last
	}
	T, ok, rep := k.earliest(now, from, cost)
	var want string
	switch {
	case ok && T == now:
		fits, remaining, reset := k.state(now, cost)
		require.True(t, fits, "%s: the model's own earliest", at)
		k.charge(now, now, cost)
		want = fmt.Sprintf("0 %d %d -1 %d", k.limit, remaining, ceilMs(reset))
		if reserve {
			want += " 0 (nil)"
		}
	case ok && wait > 0 && rep <= now && T-now <= wait:
		k.charge(now, T, cost)
		k.last = T
		k.pend = append(k.pend, resvUnit{T, cost})
		k.tickets = append(k.tickets, T)
		_, _, reset := k.state(now, 0)
		want = fmt.Sprintf("0 %d 0 -1 %d %d %d", k.limit, ceilMs(reset), ceilMs(T-now), T)
	default:
		fits, remaining, reset := k.state(now, cost)
		if fits {
			_, _, reset = k.state(now, 0)
			remaining = 0
		}
		if line {
			remaining = 0
		}
		retry := int64(-1)
		if ok && wait > 0 {
			retry = max(T-wait, rep) - now
		} else if ok {
			pT, _, _ := k.earliest(now, plainFrom, cost)
			retry = pT - now
		}
		want = fmt.Sprintf("1 %d %d %d %d", k.limit, remaining, ceilMs(retry), ceilMs(reset))
		if reserve {
			want += " -1 (nil)"
		}
	}
	require.Equal(t, "["+want+"]", reply, "%s: %s cost %d wait %d (line to %d, now %d)", at, k.name, cost, wait, k.last, now)
}

// group is the key's RL.ALL group for a call of cost that may wait
// reserve (empty: no RESERVE).
func (k *resvKey) group(cost int64, reserve string) []string {
	a := k.args(cost, reserve)
	return append([]string{a[1], strings.TrimPrefix(a[0], "RL.")}, a[2:]...)
}

// all checks an RL.ALL reply for keys ks with costs and waits (reserve:
// some group has RESERVE) and applies it: one act time for all, the
// earliest every key could act at after its line; granted if within every
// group's wait (a guard of cost 0 too) and every key may reserve it now;
// else refused, nothing charged. It checks whether the call
// was refused, and the wait and ticket (the per-limit entries follow the
// single commands', which the transcripts check).
func all(t *testing.T, at string, now int64, ks []*resvKey, costs, waits []int64, reserve bool, reply string) {
	for _, k := range ks {
		k.at(now)
	}
	T, ok := now, true
	for range 20 {
		next := T
		for i, k := range ks {
			from := T
			if k.last > now {
				from = max(from, k.last+1)
			}
			t, kok, _ := k.earliest(now, from, costs[i])
			ok = ok && kok
			next = max(next, t)
		}
		if !ok || next == T {
			break
		}
		T = next
	}
	granted := ok && T == now
	if ok && T > now && reserve {
		granted = true
		for i, k := range ks { // each may wait that long, and reserve T now
			from := T
			if k.last > now {
				from = max(from, k.last+1)
			}
			_, _, rep := k.earliest(now, from, costs[i])
			granted = granted && T-now <= waits[i] && rep <= now
		}
	}
	f := strings.Fields(strings.NewReplacer("[", " ", "]", " ").Replace(reply))
	require.NotEmpty(t, f, "%s: %s", at, reply)
	require.Equal(t, strconv.Itoa(b2i(!granted)), f[0], "%s: RL.ALL limited (act %d, now %d): %s", at, T, now, reply)
	if reserve {
		wait, ticket := "-1", "(nil)"
		if granted {
			wait = strconv.FormatInt(ceilMs(T-now), 10)
			if T > now {
				ticket = strconv.FormatInt(T, 10)
			}
		}
		require.Equal(t, wait+" "+ticket, f[len(f)-2]+" "+f[len(f)-1], "%s: RL.ALL wait and ticket: %s", at, reply)
	}
	if !granted {
		return
	}
	for i, k := range ks {
		k.charge(now, T, costs[i])
		if T > now && costs[i] > 0 {
			k.last = T
			k.pend = append(k.pend, resvUnit{T, costs[i]})
			k.tickets = append(k.tickets, T)
		}
	}
}

// cancel checks RL.CANCEL's reply for ticket tk and applies it.
func (k *resvKey) cancel(t *testing.T, at string, now, tk int64, reply string) {
	k.at(now)
	give := int64(0)
	i := slices.IndexFunc(k.pend, func(u resvUnit) bool { return u.act == tk })
	if tk > now && i >= 0 {
		u := k.pend[i]
		later := int64(0)
		for _, v := range k.pend {
			if v.act > tk {
				later += v.cost
			}
		}
		k.pend = slices.Delete(k.pend, i, i+1)
		switch k.kind {
		case "BUCKET":
			if restore := u.cost - later; restore > 0 {
				debt := new(big.Rat).Sub(k.tat0(now), big.NewRat(now, 1))
				give = min(restore, ratCeil(new(big.Rat).Quo(debt, k.interval)))
				k.tat = k.tat0(now).Sub(k.tat0(now), new(big.Rat).Mul(big.NewRat(give, 1), k.interval))
				if k.tat.Cmp(big.NewRat(now, 1)) < 0 {
					k.tat = big.NewRat(now, 1)
				}
			}
		default:
			j := slices.Index(k.units, u)
			k.units = slices.Delete(k.units, j, j+1)
			give = u.cost
		}
	}
	require.Equal(t, strconv.FormatInt(give, 10), reply, "%s: RL.CANCEL %s %d (now %d)", at, k.name, tk, now)
}

// parseWait is a maxwait argument in ns.
func parseWait(t *testing.T, s string) int64 {
	if s == "0" {
		return 0
	}
	d, err := strconv.ParseInt(strings.TrimRight(s, "ms"), 10, 64)
	require.NoError(t, err)
	if strings.HasSuffix(s, "ms") {
		return d * 1e6
	}
	return d * 1e9
}

// TestReservationModel runs random RL.BUCKET, RL.LOG and RL.FIXED calls,
// with RESERVE or not, RL.ALL calls of two of them, RL.CANCELs of tickets issued (acted on, cancelled
// already, or not) and of none, DELs, clock moves, restarts and failovers
// against an independent model: every reply is the model's.
func TestReservationModel(t *testing.T) {
	seed := rand.Uint64()
	if s := envSeed(); s != 0 {
		seed = s
	}
	t.Logf("seed %d (set RLSERVER_SEED to replay)", seed)
	r := rand.New(rand.NewPCG(seed, 29))
	c := &leaseCluster{t: t, pDir: t.TempDir(), rDir: t.TempDir()}
	c.p, c.r = startLeaseNode(t, c.pDir), startLeaseNode(t, c.rDir)
	follow(t, c.r, c.p)
	windows := []int64{50e6, 100e6, 300e6, 1e9}
	var keys []*resvKey
	for i, kind := range []string{"BUCKET", "BUCKET", "LOG", "LOG", "FIXED", "FIXED"} {
		keys = append(keys, newResvKey(fmt.Sprintf("%s%d", strings.ToLower(kind), i), kind,
			1+r.Int64N(4), 1+r.Int64N(3), windows[r.IntN(len(windows))]))
	}
	waits := []string{"0", "10ms", "100ms", "250ms", "1s", "5s"}
	now := rltest.StartNs
	steps := 2500
	if testing.Short() {
		steps = 600
	}
	granted := 0
	for i := range steps {
		k := keys[r.IntN(len(keys))]
		at := fmt.Sprintf("seed %d step %d", seed, i)
		switch op := r.IntN(100); {
		case op < 55:
			cost := int64(r.IntN(4))
			reserve, wait := "", int64(0)
			if r.IntN(4) != 0 {
				reserve = waits[r.IntN(len(waits))]
				wait = parseWait(t, reserve)
			}
			before := len(k.tickets)
			k.call(t, at, now, cost, wait, reserve != "", c.p.c.Do(k.args(cost, reserve)...))
			granted += len(k.tickets) - before
		case op < 62: // RL.ALL of two keys
			k2 := keys[r.IntN(len(keys))]
			if k2 == k {
				continue
			}
			ks, args := []*resvKey{k, k2}, []string{"RL.ALL"}
			costs, ws := []int64{int64(r.IntN(3)), int64(1 + r.IntN(2))}, []int64{0, 0}
			reserve := false
			for i, kk := range ks {
				rs := ""
				if r.IntN(3) != 0 {
					rs = waits[1+r.IntN(len(waits)-1)]
					ws[i] = parseWait(t, rs)
					reserve = true
				}
				if i > 0 {
					args = append(args, "AND")
				}
				args = append(args, kk.group(costs[i], rs)...)
			}
			all(t, at, now, ks, costs, ws, reserve, c.p.c.Do(args...))
		case op < 70:
			tk := int64(r.IntN(3)) + now // not a ticket, or at or before now
			if len(k.tickets) > 0 && r.IntN(5) != 0 {
				tk = k.tickets[r.IntN(len(k.tickets))]
			}
			k.cancel(t, at, now, tk, c.p.c.Do("RL.CANCEL", k.name, strconv.FormatInt(tk, 10)))
		case op < 72:
			c.p.c.Do("DEL", k.name)
			k.reset()
		case op < 96:
			d := int64(r.IntN(300)) * 1e6
			if r.IntN(3) == 0 {
				d = r.Int64N(2e6) // odd ns: rounding
			}
			require.Equal(t, "+OK", c.p.c.Do("DEBUG", "CLOCK", "ADVANCE", fmt.Sprint(d, "ns")))
			now += d
		case op < 98:
			c.restartPrimary()
		default:
			c.failover()
		}
		if got := c.p.c.Do("DEBUG", "CLOCK", "GET"); got != strconv.FormatInt(now, 10) {
			t.Fatalf("%s: the server's clock is %s, the model's %d", at, got, now)
		}
	}
	// The replica holds what the primary does: a peek answers the same,
	// once the replica has the primary's time too. The last clock moves
	// may have had nothing to carry them, and WAIT sends this node's
	// time only to a connection that wrote (replication.md, "WAIT"): so
	// this one writes a key of its own first.
	require.Contains(t, c.p.c.Do("RL.FIXED", "sync", "1", "1s"), "[0 1 0 ")
	require.Equal(t, "1", c.p.c.Do("WAIT", "1", "10000"))
	for _, k := range keys {
		require.Equal(t, c.p.c.Do(k.args(0, "")...), c.r.c.Do(k.args(0, "")...), "the replica's %s", k.name)
	}
	t.Logf("%d restarts, %d failovers, %d reservations granted", c.restart, c.fail, granted)
	require.Positive(t, c.restart+c.fail)
	require.Positive(t, granted)
}

package server_test

import (
	"context"
	"fmt"
	"math/rand/v2"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/rlserver/rlserver/internal/rltest"
	"github.com/rlserver/rlserver/server"
	"github.com/stretchr/testify/require"
)

// leaseModel is an independent model of a concurrency limit's keys
// (docs/leases.md): each key's leases, and every token it ever issued.
type leaseModel struct {
	now    int64 // ms since the start; the servers' clocks run ahead of it by at most a few ns
	leases map[string][]modelLease
	tokens map[string]int64 // the highest token each key ever issued
}

type modelLease struct{ token, end, cost int64 } // end in ms

// live returns key's leases alive now (end > now), in token order.
func (m *leaseModel) live(key string) []modelLease {
	var out []modelLease
	for _, l := range m.leases[key] {
		if l.end > m.now {
			out = append(out, l)
		}
	}
	m.leases[key] = out
	return out
}

func (m *leaseModel) used(key string) (used, lastEnd int64) {
	lastEnd = m.now
	for _, l := range m.live(key) {
		used += l.cost
		lastEnd = max(lastEnd, l.end)
	}
	return used, lastEnd
}

// acquire checks an RL.ACQUIRE reply against the model and applies it.
func (m *leaseModel) acquire(t *testing.T, at string, key string, limit, term, cost int64, reply string) {
	used, lastEnd := m.used(key)
	f := strings.Fields(strings.Trim(reply, "[]"))
	require.Len(t, f, 6, "%s: %s", at, reply)
	head := strings.Join(f[:5], " ")
	if cost == 0 || used+cost > limit {
		limited, retry := cost != 0, int64(-1)
		if limited && cost <= limit {
			ends := slices.Clone(m.live(key))
			slices.SortFunc(ends, func(a, b modelLease) int { return int(a.end - b.end) })
			u := used
			for _, l := range ends {
				if u -= l.cost; u+cost <= limit {
					retry = l.end - m.now
					break
				}
			}
		}
		want := fmt.Sprintf("%d %d %d %d %d", b2i(limited), limit, max(limit-used, 0), retry, lastEnd-m.now)
		require.Equal(t, want+" (nil)", head+" "+f[5], "%s: refused or a peek", at)
		return
	}
	end := m.now + term
	want := fmt.Sprintf("0 %d %d -1 %d", limit, limit-used-cost, max(lastEnd, end)-m.now)
	require.Equal(t, want, head, "%s: admitted", at)
	token, err := strconv.ParseInt(f[5], 10, 64)
	require.NoError(t, err, "%s: token %s", at, f[5])
	require.Greater(t, token, m.tokens[key], "%s: a token of %s at or below one it issued before", at, key)
	require.Greater(t, token, rltest.StartNs+m.now*1e6, "%s: a token at or below the clock", at)
	m.tokens[key] = token
	m.leases[key] = append(m.leases[key], modelLease{token, end, cost})
}

func b2i(b bool) int {
	if b {
		return 1
	}
	return 0
}

// listing is RL.LEASES's reply the model expects.
func (m *leaseModel) listing(key string) string {
	var parts []string
	for _, l := range m.live(key) {
		parts = append(parts, fmt.Sprintf("[%d %d %d]", l.token, l.end-m.now, l.cost))
	}
	return "[" + strings.Join(parts, " ") + "]"
}

// leaseCluster is a primary with persistence and its replica, both on the
// manual clock.
type leaseCluster struct {
	t       *testing.T
	p, r    *replNode
	pDir    string
	rDir    string
	restart int
	fail    int
}

func startLeaseNode(t *testing.T, dir string) *replNode {
	return startRepl(t, func(o *server.Options) {
		o.Config.Dir, o.Config.SaveInterval = dir, time.Hour // snapshots at shutdown
	})
}

// restartPrimary shuts the primary down (its snapshot written) and starts
// it again from its directory; the replica follows the new one.
func (c *leaseCluster) restartPrimary() {
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	require.NoError(c.t, c.p.s.Shutdown(ctx, true))
	c.p = startLeaseNode(c.t, c.pDir)
	follow(c.t, c.r, c.p)
	c.restart++
}

// failover promotes the replica once it has everything the primary
// decided (WAIT), stops the old primary, and gives the new one a fresh
// replica. A replica learns the primary's time from what it sends, and
// a clock moved with nothing to send is not sent; a real clock's time
// runs on in the replica meanwhile, a manual one does not, so the
// promoted node's clock is moved up to where the old one stopped, as a
// real clock would have.
func (c *leaseCluster) failover() {
	require.Equal(c.t, "1", c.p.c.Do("WAIT", "1", "10000"))
	stopped := c.p.c.Do("DEBUG", "CLOCK", "GET")
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	require.NoError(c.t, c.p.s.Close(ctx))
	require.Equal(c.t, "+OK", c.r.c.Do("REPLICAOF", "NO", "ONE"))
	if at, _ := strconv.ParseInt(c.r.c.Do("DEBUG", "CLOCK", "GET"), 10, 64); at < atoi(c.t, stopped) {
		require.Equal(c.t, "+OK", c.r.c.Do("DEBUG", "CLOCK", "SET", stopped+"ns"))
	}
	c.p, c.pDir = c.r, c.rDir
	c.rDir = c.t.TempDir()
	c.r = startLeaseNode(c.t, c.rDir)
	follow(c.t, c.r, c.p)
	c.fail++
}

// TestLeaseModel runs random RL.ACQUIRE, RL.RELEASE, RL.RENEW and
// RL.LEASES calls, DELs, clock moves, restarts and failovers against an
// independent model of the leases: every reply is the model's, and a
// key's tokens only ever go up, across all of them.
func TestLeaseModel(t *testing.T) {
	seed := rand.Uint64()
	if s := envSeed(); s != 0 {
		seed = s
	}
	t.Logf("seed %d (set RLSERVER_SEED to replay)", seed)
	r := rand.New(rand.NewPCG(seed, 28))
	c := &leaseCluster{t: t, pDir: t.TempDir(), rDir: t.TempDir()}
	c.p, c.r = startLeaseNode(t, c.pDir), startLeaseNode(t, c.rDir)
	follow(t, c.r, c.p)
	m := &leaseModel{leases: map[string][]modelLease{}, tokens: map[string]int64{}}
	keys := []string{"a", "b", "{a}c"}
	terms := []int64{1, 5, 20, 100, 1000}
	steps := 1500
	if testing.Short() {
		steps = 400
	}
	for i := range steps {
		k := keys[r.IntN(len(keys))]
		at := fmt.Sprintf("seed %d step %d", seed, i)
		known := func() string { // a token of the key, live or not, or one never issued
			ls := m.leases[k]
			if len(ls) == 0 || r.IntN(5) == 0 {
				return strconv.FormatInt(m.tokens[k]+int64(r.IntN(3)), 10)
			}
			return strconv.FormatInt(ls[r.IntN(len(ls))].token, 10)
		}
		switch op := r.IntN(100); {
		case op < 40:
			limit, term, cost := int64(r.IntN(5)), terms[r.IntN(len(terms))], int64(r.IntN(4))
			reply := c.p.c.Do("RL.ACQUIRE", k, strconv.FormatInt(limit, 10), fmt.Sprint(term, "ms"), "COST", strconv.FormatInt(cost, 10))
			m.acquire(t, at, k, limit, term, cost, reply)
		case op < 55:
			tok := known()
			if r.IntN(4) == 0 {
				tok = "ANY"
			}
			want := "0"
			ls := m.live(k)
			idx := -1
			for j, l := range ls {
				if tok == "ANY" && (idx < 0 || l.end < ls[idx].end) || strconv.FormatInt(l.token, 10) == tok {
					idx = j
				}
			}
			if idx >= 0 {
				want = "1"
				m.leases[k] = slices.Delete(ls, idx, idx+1)
			}
			require.Equal(t, want, c.p.c.Do("RL.RELEASE", k, tok), "%s: RL.RELEASE %s %s", at, k, tok)
		case op < 65:
			tok, term := known(), terms[r.IntN(len(terms))]
			want := "-2"
			for j, l := range m.live(k) {
				if strconv.FormatInt(l.token, 10) == tok {
					m.leases[k][j].end = m.now + term
					want = strconv.FormatInt(term, 10)
				}
			}
			require.Equal(t, want, c.p.c.Do("RL.RENEW", k, tok, fmt.Sprint(term, "ms")), "%s: RL.RENEW %s %s", at, k, tok)
		case op < 75:
			require.Equal(t, m.listing(k), c.p.c.Do("RL.LEASES", k), "%s: RL.LEASES %s", at, k)
			want := "0"
			if len(m.live(k)) > 0 {
				want = "1"
			}
			require.Equal(t, want, c.p.c.Do("EXISTS", k), "%s: EXISTS %s", at, k)
		case op < 78:
			want := "0"
			if len(m.live(k)) > 0 {
				want = "1"
			}
			require.Equal(t, want, c.p.c.Do("DEL", k), "%s: DEL %s", at, k)
			delete(m.leases, k)
		case op < 97:
			d := int64(r.IntN(30))
			require.Equal(t, "+OK", c.p.c.Do("DEBUG", "CLOCK", "ADVANCE", fmt.Sprint(d, "ms")))
			m.now += d
		case op < 99:
			c.restartPrimary()
		default:
			c.failover()
		}
	}
	// The replica holds what the primary does, at the primary's time: the
	// last clock moves may have had nothing to carry them, and WAIT sends
	// this node's time only to a connection that wrote (replication.md,
	// "WAIT"), so this one writes a key of its own first.
	require.Contains(t, c.p.c.Do("RL.FIXED", "sync", "1", "1s"), "[0 1 0 ")
	require.Equal(t, "1", c.p.c.Do("WAIT", "1", "10000"))
	for _, k := range keys {
		require.Equal(t, m.listing(k), c.r.c.Do("RL.LEASES", k), "the replica's %s", k)
	}
	t.Logf("%d restarts, %d failovers, tokens %v", c.restart, c.fail, m.tokens)
	require.Positive(t, c.restart+c.fail)
}

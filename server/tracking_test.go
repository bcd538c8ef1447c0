package server_test

import (
	"strings"
	"testing"
	"time"

	"github.com/rlserver/rlserver/internal/rltest"
	"github.com/rlserver/rlserver/internal/testserver"
	"github.com/stretchr/testify/require"
)

// pushes asks c PING and returns what c received before its answer: the
// invalidations sent to it so far.
func pushes(t *testing.T, c *rltest.Conn) []string {
	t.Helper()
	c.Send(rltest.Encode("PING"))
	var out []string
	for {
		m, err := c.Read()
		require.NoError(t, err)
		if m == "+PONG" {
			return out
		}
		out = append(out, m)
	}
}

// TestTrackingLimiterKeys: client-side caching of limiter keys, on the
// manual clock. A reader (RESP3, tracking on) that read a key is told
// when a decision changes it: a CL.THROTTLE, an RL.* or an RL.ALL that
// charges it. A call that changes nothing (a refused CL.THROTTLE, a
// cost-0 peek) tells nothing. A key that expires is told once the sweep
// drops it, with no command on it; so is one a replica applies from its
// primary's stream.
func TestTrackingLimiterKeys(t *testing.T) {
	s := testserver.Start(t)
	r, w := rltest.Dial(t, s.Addr.String()), rltest.Dial(t, s.Addr.String())
	r.Do("HELLO", "3")
	require.Equal(t, "+OK", r.Do("CLIENT", "TRACKING", "ON"))
	require.Equal(t, "[0 1 0 -1 2]", w.Do("CL.THROTTLE", "g", "0", "1", "2"))
	require.Contains(t, w.Do("RL.FIXED", "f", "2", "30s"), "[0 2 1 -1 ")
	inv := func(k string) []string { return []string{`>["invalidate" ["` + k + `"]]`} }
	for _, tc := range []struct {
		name  string
		read  []string // r reads it (so tracks its key)
		write []string // then w runs this
		want  []string // what r is told
	}{
		{"a refused CL.THROTTLE", []string{"GET", "g"}, []string{"CL.THROTTLE", "g", "0", "1", "2"}, nil},
		{"a peek", []string{"EXISTS", "f"}, []string{"RL.FIXED", "f", "2", "30s", "COST", "0"}, nil},
		{"time, not yet the expiry", []string{"PTTL", "g"}, []string{"DEBUG", "CLOCK", "ADVANCE", "1000"}, nil},
		{"a charge", []string{"TYPE", "f"}, []string{"RL.FIXED", "f", "2", "30s"}, inv("f")},
		{"RL.ALL", []string{"EXISTS", "h"}, []string{"RL.ALL", "f", "FIXED", "9", "1m", "AND", "h", "SLIDE", "9", "1m"}, inv("h")},
		{"a refused RL.ALL", []string{"EXISTS", "h"}, []string{"RL.ALL", "h", "SLIDE", "9", "1m", "AND", "f", "FIXED", "2", "30s"}, nil},
		{"an admitted CL.THROTTLE", []string{"GET", "g"}, []string{"CL.THROTTLE", "g", "5", "1", "2"}, inv("g")},
		{"a DEL", []string{"GET", "g"}, []string{"DEL", "g", "f"}, inv("g")},
	} {
		r.Do(tc.read...)
		w.Do(tc.write...)
		require.Equal(t, tc.want, pushes(t, r), tc.name)
	}

	// An expiry, by the sweep alone.
	require.Contains(t, w.Do("RL.FIXED", "e", "2", "1s"), "[0 2 1 -1 ")
	r.Do("EXISTS", "e")
	require.Nil(t, pushes(t, r))
	w.Do("DEBUG", "CLOCK", "ADVANCE", "2000")
	var got []string
	rltest.WaitFor(t, 10*time.Second, "the expiry's invalidation", func() (bool, string) {
		got = append(got, pushes(t, r)...)
		return len(got) > 0, strings.Join(got, " ")
	})
	require.Equal(t, inv("e"), got)
	require.Equal(t, "0", w.Do("EXISTS", "e"))
}

// TestTrackingOnAReplica: a connection tracking on a replica is told when
// the primary's stream changes a key it read there: a charge on the
// primary, the key's deletion, and a FLUSHALL (every key).
func TestTrackingOnAReplica(t *testing.T) {
	p, rep := startRepl(t), startRepl(t)
	follow(t, rep, p)
	require.Contains(t, p.c.Do("RL.FIXED", "f", "5", "1m"), "[0 5 4 -1 ")
	rltest.WaitFor(t, 10*time.Second, "the replica to hold f", func() (bool, string) {
		v := rep.c.Do("EXISTS", "f")
		return v == "1", v
	})
	r := rltest.Dial(t, rep.s.Addr.String())
	r.Do("HELLO", "3")
	require.Equal(t, "+OK", r.Do("CLIENT", "TRACKING", "ON"))
	require.Equal(t, "1", r.Do("EXISTS", "f")) // and tracks f
	require.Nil(t, pushes(t, r))
	for _, write := range [][]string{{"RL.FIXED", "f", "5", "1m"}, {"DEL", "f"}} {
		p.c.Do(write...)
		var got []string
		rltest.WaitFor(t, 10*time.Second, "the invalidation of "+write[0], func() (bool, string) {
			got = append(got, pushes(t, r)...)
			return len(got) > 0, strings.Join(got, " ")
		})
		require.Equal(t, []string{`>["invalidate" ["f"]]`}, got, write[0])
		r.Do("EXISTS", "f") // tracked again
	}
	// The primary's FLUSHALL flushes the replica: every key changed.
	require.Equal(t, "+OK", p.c.Do("FLUSHALL"))
	var got []string
	rltest.WaitFor(t, 10*time.Second, "the flush's invalidation", func() (bool, string) {
		got = append(got, pushes(t, r)...)
		return len(got) > 0, strings.Join(got, " ")
	})
	require.Equal(t, []string{`>["invalidate" (nil)]`}, got)
}

// TestTrackingTableMaxKeys: past tracking-table-max-keys, keys read are
// told as changed and forgotten, so the table holds at most that many;
// INFO counts the keys, the (key, reader) pairs and the prefixes.
func TestTrackingTableMaxKeys(t *testing.T) {
	s := testserver.Start(t)
	r, r2 := rltest.Dial(t, s.Addr.String()), rltest.Dial(t, s.Addr.String())
	r.Do("HELLO", "3")
	require.Equal(t, "+OK", r.Do("CONFIG", "SET", "tracking-table-max-keys", "2"))
	require.Equal(t, "+OK", r.Do("CLIENT", "TRACKING", "ON"))
	require.Equal(t, "+OK", r2.Do("CLIENT", "TRACKING", "ON", "BCAST", "PREFIX", "a", "PREFIX", "b"))
	r.Do("EXISTS", "k1", "k2")
	r2.Do("GET", "k1") // BCAST: nothing remembered
	require.Nil(t, pushes(t, r))
	stats := rltest.Info(t, r, "stats")
	require.Equal(t, []string{"2", "2", "2"}, []string{stats["tracking_total_keys"], stats["tracking_total_items"], stats["tracking_total_prefixes"]})
	require.Equal(t, "2", rltest.Info(t, r, "clients")["tracking_clients"])
	r.Do("GET", "k3")
	got := pushes(t, r)
	require.Len(t, got, 1)
	require.Regexp(t, `^>\["invalidate" \["k[123]"\]\]$`, got[0])
	require.Equal(t, "2", rltest.Info(t, r, "stats")["tracking_total_keys"])
	require.Equal(t, "+OK", r.Do("CLIENT", "TRACKING", "OFF"))
	require.Equal(t, "1", rltest.Info(t, r, "clients")["tracking_clients"])
}

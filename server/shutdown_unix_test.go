//go:build unix

package server_test

import (
	"context"
	"fmt"
	"strconv"
	"testing"
	"time"

	"github.com/rlserver/rlserver/internal/rltest"
	"github.com/rlserver/rlserver/server"
	"github.com/stretchr/testify/require"
)

// TestGracefulStopSendsEveryChange: a primary that stops gracefully
// first sends its replica every change it answered, and waits for the
// replica's ack, so a replica promoted after a planned stop holds every
// decision. The replica follows through a proxy that stops passing the
// primary's stream on (heldStream). The proxy passes the stream on again
// only once the primary's stop either waits for the acks (Manager.Drain,
// after its clients are closed) or has ended. A stop that drops the
// replica's link at once, as before the drain, loses megabytes of
// changes, and the replica ends short of the primary's offset and keys.
func TestGracefulStopSendsEveryChange(t *testing.T) {
	h := heldStream(t)
	closed := closeAsync(h.p.s)
	var closeErr error
	ended := false
	rltest.WaitFor(t, 30*time.Second, "the stop to wait for the replica's ack, or to end", func() (bool, string) {
		select {
		case closeErr = <-closed:
			ended = true
			return true, "ended"
		default:
		}
		n := rltest.StackCount("replication.(*Manager).Drain(")
		return n == 1, fmt.Sprintf("%d draining", n)
	})
	h.px.Resume()
	if !ended {
		select {
		case closeErr = <-closed:
		case <-time.After(60 * time.Second):
			t.Fatal("the stop did not end once the stream flowed again")
		}
	}
	require.NoError(t, closeErr)

	r := h.r
	waitLinkDown(t, r)
	got := rltest.InfoInt(t, r.c, "replication", "slave_repl_offset")
	require.GreaterOrEqual(t, got, h.final, "the replica applied the whole stream (%d bytes short)", h.final-got)
	require.Equal(t, strconv.Itoa(h.keys), r.c.Do("DBSIZE"), "every key the primary wrote")
	require.Regexp(t, `^\[0 5 4 -1 \d+\]$`, r.c.Do("RL.FIXED", h.last, "5", "1m", "COST", "0"), "the last write, peeked on the replica")
}

// TestStopWithoutWaiting: SHUTDOWN NOW, or shutdown-timeout 0, stops
// without waiting for a replica that does not acknowledge. With
// shutdown-timeout at an hour otherwise, a stop that waited would not
// end while the proxy holds the stream back.
func TestStopWithoutWaiting(t *testing.T) {
	for _, tc := range []struct {
		name    string
		timeout string
		now     bool
	}{
		{"SHUTDOWN NOW", "3600", true},
		{"shutdown-timeout 0", "0", false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			h := heldStream(t)
			require.Equal(t, "+OK", h.p.c.Do("CONFIG", "SET", "shutdown-timeout", tc.timeout))
			require.Equal(t, `["shutdown-timeout" "`+tc.timeout+`"]`, h.p.c.Do("CONFIG", "GET", "shutdown-timeout"))
			if tc.now {
				c := rltest.Dial(t, h.p.s.Addr.String())
				c.Send(rltest.Encode("SHUTDOWN", "NOW", "NOSAVE"))
				_, err := c.Read()
				require.Error(t, err, "a successful SHUTDOWN sends no reply")
			}
			requireStops(t, closeAsync(h.p.s), "the stop waited for the replica")
		})
	}
}

// TestStopWaitsAtMostShutdownTimeout: a replica that cannot acknowledge
// (its stream held back by a proxy) holds a stop up for shutdown-timeout,
// 1 s here, and no longer; a replica beside it that can still gets
// every change. Without the bound the stop would wait until the stuck
// replica's own 60 s timeout dropped its link, past the deadline here.
func TestStopWaitsAtMostShutdownTimeout(t *testing.T) {
	p, healthy, stuck := startRepl(t), startRepl(t), startRepl(t)
	follow(t, healthy, p)
	px := followThrough(t, stuck, p)
	require.Equal(t, "2", p.c.Do("WAIT", "2", "10000"))
	require.Equal(t, "+OK", p.c.Do("CONFIG", "SET", "shutdown-timeout", "1"))
	px.Pause()
	rltest.Exhaust(t, p.c, 0, 50)
	want := rltest.View(t, p.c, 0, 50)
	final := rltest.InfoInt(t, p.c, "replication", "master_repl_offset")

	requireStops(t, closeAsync(p.s), "the stop waited past shutdown-timeout")
	waitLinkDown(t, healthy)
	require.GreaterOrEqual(t, rltest.InfoInt(t, healthy.c, "replication", "slave_repl_offset"), final)
	rltest.RequireSame(t, want, rltest.View(t, healthy.c, 0, 50), "the healthy replica")
}

func TestShutdownTimeoutConfig(t *testing.T) {
	p := startRepl(t)
	require.Equal(t, `["shutdown-timeout" "10"]`, p.c.Do("CONFIG", "GET", "shutdown-timeout"))
	for _, tc := range []struct{ value, err string }{
		{"soon", "argument couldn't be parsed into an integer"},
		{"1.5", "argument couldn't be parsed into an integer"},
		{"-1", "argument must be between 0 and 2147483647 inclusive"},
		{"2147483648", "argument must be between 0 and 2147483647 inclusive"},
	} {
		require.Equal(t, "-ERR CONFIG SET failed (possibly related to argument 'shutdown-timeout') - "+tc.err,
			p.c.Do("CONFIG", "SET", "shutdown-timeout", tc.value), tc.value)
	}
	require.Equal(t, `["shutdown-timeout" "10"]`, p.c.Do("CONFIG", "GET", "shutdown-timeout"), "a refused value changes nothing")
}

// held is a primary and its replica, the primary's stream to it held
// back by a proxy with at least 8 MB of changes waiting in the primary's
// own buffer: its socket holds at most 4 MB (tcp_wmem), the proxy's a
// few KB.
type held struct {
	p, r  *replNode
	px    *rltest.StreamProxy
	keys  int    // keys written, every one admitted
	last  string // the last key written
	final int64  // the primary's master_repl_offset after the writes
}

func heldStream(t *testing.T) *held {
	p, r := startRepl(t), startRepl(t)
	px := followThrough(t, r, p)
	require.Equal(t, "1", p.c.Do("WAIT", "1", "10000"))
	px.Pause()
	keys, last := rltest.GrowStream(t, p.c, 8<<20)
	return &held{p: p, r: r, px: px, keys: keys, last: last, final: rltest.InfoInt(t, p.c, "replication", "master_repl_offset")}
}

// followThrough makes r a replica of p through a rltest.StreamProxy,
// waits until its link is up, and returns the proxy.
func followThrough(t *testing.T, r, p *replNode) *rltest.StreamProxy {
	t.Helper()
	px := rltest.NewStreamProxy(t, p.s.Addr.String())
	require.Equal(t, "+OK", r.c.Do("REPLICAOF", "127.0.0.1", strconv.Itoa(px.Port())))
	rltest.WaitLinkUp(t, r.c)
	return px
}

// closeAsync stops s on a goroutine of its own, with two hours for it,
// and returns where Close's result arrives.
func closeAsync(s *server.Server) <-chan error {
	closed := make(chan error, 1)
	go func() {
		ctx, cancel := context.WithTimeout(context.Background(), 2*time.Hour)
		defer cancel()
		closed <- s.Close(ctx)
	}()
	return closed
}

// requireStops fails with why unless the stop whose result comes on
// closed ends, without an error, within 30 s: under a replica's own 60 s
// link timeout, which would end a wait for it too.
func requireStops(t *testing.T, closed <-chan error, why string) {
	t.Helper()
	select {
	case err := <-closed:
		require.NoError(t, err)
	case <-time.After(30 * time.Second):
		t.Fatal(why)
	}
}

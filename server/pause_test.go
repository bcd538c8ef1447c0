package server_test

import (
	"fmt"
	"testing"
	"time"

	"github.com/rlserver/rlserver/internal/rltest"
	"github.com/stretchr/testify/require"
)

// parked waits until n commands are held (each held command's wait runs
// on a goroutine of its own: node.(*Node).park's).
func parked(t *testing.T, n int) {
	t.Helper()
	rltest.WaitFor(t, 30*time.Second, fmt.Sprintf("%d commands held", n), func() (bool, string) {
		k := rltest.StackCount("node.(*Node).park.func1(")
		return k == n, fmt.Sprint(k)
	})
}

// TestClientPauseWrite: CLIENT PAUSE WRITE holds the write commands (and
// an EXEC with one queued) until CLIENT UNPAUSE, or its timeout; reads and
// peeks are answered meanwhile. The held calls then run as they came.
func TestClientPauseWrite(t *testing.T) {
	p := startRepl(t)
	require.Equal(t, "+OK", p.c.Do("CLIENT", "PAUSE", "3600000", "WRITE"))
	w, txn := rltest.Dial(t, p.s.Addr.String()), rltest.Dial(t, p.s.Addr.String())
	w.Send(rltest.Encode("RL.FIXED", "k", "5", "1m"))
	require.Equal(t, "+OK", txn.Do("MULTI"))
	require.Equal(t, "+QUEUED", txn.Do("RL.FIXED", "k", "5", "1m"))
	txn.Send(rltest.Encode("EXEC"))
	parked(t, 2)
	blocked(t, p, 2)
	require.Equal(t, "[0 5 5 -1 0]", p.c.Do("RL.FIXED", "k", "5", "1m", "COST", "0"), "held, nothing charged; a peek is answered")
	require.Equal(t, "0", p.c.Do("EXISTS", "k"))
	require.Equal(t, "+OK", p.c.Do("CLIENT", "UNPAUSE"))
	got, err := w.Read()
	require.NoError(t, err)
	exec, err := txn.Read()
	require.NoError(t, err)
	require.Regexp(t, `^\[0 5 [34] -1 \d+\]$`, got)
	require.Regexp(t, `^\[\[0 5 [34] -1 \d+\]\]$`, exec)
	require.Regexp(t, `^\[0 5 3 -1 \d+\]$`, p.c.Do("RL.FIXED", "k", "5", "1m", "COST", "0"), "both ran")
	blocked(t, p, 0)

	// Its timeout ends it too.
	require.Equal(t, "+OK", p.c.Do("CLIENT", "PAUSE", "200", "WRITE"))
	require.Regexp(t, `^\[0 5 2 -1 \d+\]$`, w.Do("RL.FIXED", "k", "5", "1m"), "answered once the pause ran out")
}

// TestClientPauseAll: CLIENT PAUSE ALL (the default mode) holds every
// command, CLIENT UNPAUSE from another connection included, as Redis's
// does: both are answered when its timeout ends it.
func TestClientPauseAll(t *testing.T) {
	p := startRepl(t)
	require.Equal(t, "+OK", p.c.Do("CLIENT", "PAUSE", "500"))
	get, un := rltest.Dial(t, p.s.Addr.String()), rltest.Dial(t, p.s.Addr.String())
	get.Send(rltest.Encode("EXISTS", "k"))
	un.Send(rltest.Encode("CLIENT", "UNPAUSE"))
	parked(t, 2)
	got, err := get.Read()
	require.NoError(t, err)
	require.Equal(t, "0", got)
	got, err = un.Read()
	require.NoError(t, err)
	require.Equal(t, "+OK", got)
	parked(t, 0)
	require.Equal(t, "0", p.c.Do("EXISTS", "k"), "not held any more")
}

// blocked waits until INFO clients reports n blocked clients.
func blocked(t *testing.T, p *replNode, n int) {
	t.Helper()
	rltest.WaitFor(t, 30*time.Second, fmt.Sprintf("blocked_clients:%d", n), func() (bool, string) {
		v := rltest.Info(t, p.c, "clients")["blocked_clients"]
		return v == fmt.Sprint(n), v
	})
}

// TestBlockedClients: INFO clients counts a WAIT that waits as blocked,
// as Redis does, until it ends (here: its client goes).
func TestBlockedClients(t *testing.T) {
	p := startRepl(t)
	require.Equal(t, "0", rltest.Info(t, p.c, "clients")["blocked_clients"])
	w := rltest.Dial(t, p.s.Addr.String())
	w.Send(rltest.Encode("WAIT", "1", "0")) // no replica: it waits until its client goes
	blocked(t, p, 1)
	require.NoError(t, w.Close())
	blocked(t, p, 0)
}

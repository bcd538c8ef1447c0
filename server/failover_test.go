//go:build unix

package server_test

import (
	"fmt"
	"github.com/rlserver/rlserver/server"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/rlserver/rlserver/internal/rltest"
	"github.com/stretchr/testify/require"
)

// TestFailoverKeepsEveryDecision: FAILOVER while eight connections write
// as fast as they can, each pipelining 16 RL.FIXED calls at a time on
// keys of their own. The primary holds the writes, waits for its
// replica's ack of everything it decided, and hands over. Every call is
// answered: admitted by the old primary before the hold, or, held, by
// READONLY after it. The new primary holds exactly the admitted calls, key
// by key, and so does the old one, now its replica. Without the hold, the
// calls admitted after the replica's last ack would be missing on it.
// It runs with the primary's connections served by its event loops, and
// by a goroutine each (as under TLS), which count their writes apart.
func TestFailoverKeepsEveryDecision(t *testing.T) {
	for _, perConn := range []bool{false, true} {
		t.Run(fmt.Sprintf("goroutine-per-conn=%v", perConn), func(t *testing.T) { failoverKeepsEveryDecision(t, perConn) })
	}
}

func failoverKeepsEveryDecision(t *testing.T, perConn bool) {
	p, r := startRepl(t, func(o *server.Options) { o.GoroutinePerConn = perConn }), startRepl(t)
	follow(t, r, p)
	const writers, keys, depth = 8, 20, 16
	admitted := make([]map[string]int, writers)
	errs := make(chan error, writers)
	started := make(chan struct{}, writers)
	var wg sync.WaitGroup
	for w := range writers {
		c := rltest.Dial(t, p.s.Addr.String())
		wg.Add(1)
		go func() {
			defer wg.Done()
			var err error
			if admitted[w], _, err = rltest.WriteFixed(c, fmt.Sprintf("fo:%d", w), keys, depth, 100, started); err != nil {
				err = fmt.Errorf("writer %d: %w", w, err)
			}
			errs <- err
		}()
	}
	for range writers {
		<-started // each has had 100 batches answered
	}
	require.Equal(t, "+OK", p.c.Do("FAILOVER"))
	wg.Wait()
	close(errs)
	for err := range errs {
		require.NoError(t, err)
	}

	rltest.WaitFor(t, 20*time.Second, "the old primary to follow the new one", func() (bool, string) {
		f := rltest.Info(t, p.c, "replication")
		return f["role"] == "slave" && f["master_port"] == strconv.Itoa(r.port) && f["master_link_status"] == "up", fmt.Sprint(f)
	})
	f := rltest.Info(t, r.c, "replication")
	require.Equal(t, "master", f["role"])
	require.Equal(t, "no-failover", rltest.Info(t, p.c, "replication")["master_failover_state"])
	require.Equal(t, `["replicaof" "127.0.0.1 `+strconv.Itoa(r.port)+`"]`, p.c.Do("CONFIG", "GET", "replicaof"))
	require.Equal(t, `["replicaof" ""]`, r.c.Do("CONFIG", "GET", "replicaof"))

	total := 0
	for w := range writers {
		for k := range keys {
			key := fmt.Sprintf("fo:%d:%d", w, k)
			n := admitted[w][key]
			total += n
			want := fmt.Sprintf("[0 1000000 %d -1 ", 1000000-n)
			for _, node := range []*replNode{r, p} {
				got := node.c.Do("RL.FIXED", key, "1000000", "1h", "COST", "0")
				require.True(t, strings.HasPrefix(got, want), "%s on port %d: %s, want %s... (%d admitted)", key, node.port, got, want, n)
			}
		}
	}
	t.Logf("%d calls admitted before the failover", total)
	require.Regexp(t, `^\[0 1000000 999999 -1 \d+\]$`, r.c.Do("RL.FIXED", "after", "1000000", "1h"), "the new primary takes writes")
}

// TestFailoverHoldsWrites: a write sent after FAILOVER's +OK waits for
// the failover's end. The replica's stream is held back by a proxy, so
// it cannot ack until the proxy resumes. Then the held write is refused
// as a replica's if the failover succeeds, and admitted by the primary if
// it ends otherwise (ABORT, TIMEOUT, the target refusing to take over).
// A write run at once, as before the hold, would be admitted in every
// case: its node was a primary when it came.
func TestFailoverHoldsWrites(t *testing.T) {
	for _, tc := range []struct {
		name     string
		failover []string
		end      func(t *testing.T, p *replNode, px *rltest.StreamProxy)
		followed bool
	}{
		{"the replica catches up", []string{"FAILOVER"}, func(t *testing.T, p *replNode, px *rltest.StreamProxy) { px.Resume() }, true},
		{"ABORT", []string{"FAILOVER"}, func(t *testing.T, p *replNode, px *rltest.StreamProxy) {
			require.Equal(t, "+OK", p.c.Do("FAILOVER", "ABORT"))
			require.Equal(t, "-ERR No failover in progress.", p.c.Do("FAILOVER", "ABORT"))
		}, false},
		{"TIMEOUT", []string{"FAILOVER", "TIMEOUT", "200"}, nil, false},
		{"FORCE at the TIMEOUT", []string{"FAILOVER", "TO", "127.0.0.1", "<replica>", "FORCE", "TIMEOUT", "200"}, nil, true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			p, r := startRepl(t), startRepl(t)
			px := followThrough(t, r, p)
			require.Equal(t, "1", p.c.Do("WAIT", "1", "10000"))
			require.Regexp(t, `^\[0 5 4 -1 \d+\]$`, p.c.Do("RL.FIXED", "k", "5", "1m"))
			px.Pause()
			args := slicesReplace(tc.failover, "<replica>", strconv.Itoa(r.port))
			require.Equal(t, "+OK", p.c.Do(args...))
			require.Equal(t, "waiting-for-sync", rltest.Info(t, p.c, "replication")["master_failover_state"])
			require.Equal(t, "-ERR FAILOVER already in progress.", p.c.Do("FAILOVER"))
			held, txn := rltest.Dial(t, p.s.Addr.String()), rltest.Dial(t, p.s.Addr.String())
			held.Send(rltest.Encode("RL.FIXED", "k", "5", "1m"))
			require.Equal(t, "+OK", txn.Do("MULTI"))
			require.Equal(t, "+QUEUED", txn.Do("RL.FIXED", "k", "5", "1m"))
			txn.Send(rltest.Encode("EXEC"))
			// Reads and peeks are served meanwhile; the held calls
			// charged nothing.
			require.Regexp(t, `^\[0 5 4 -1 \d+\]$`, p.c.Do("RL.FIXED", "k", "5", "1m", "COST", "0"))
			if tc.end != nil {
				tc.end(t, p, px)
			}
			got, err := held.Read()
			require.NoError(t, err)
			exec, err := txn.Read()
			require.NoError(t, err)
			if tc.followed {
				require.Equal(t, "-READONLY You can't write against a read only replica.", got)
				require.Equal(t, "[-READONLY You can't write against a read only replica.]", exec)
				require.Equal(t, "slave", rltest.Info(t, p.c, "replication")["role"])
				require.Equal(t, "master", rltest.Info(t, r.c, "replication")["role"])
			} else {
				require.Regexp(t, `^\[0 5 [23] -1 \d+\]$`, got)
				require.Regexp(t, `^\[\[0 5 [23] -1 \d+\]\]$`, exec)
				require.Regexp(t, `^\[0 5 2 -1 \d+\]$`, p.c.Do("RL.FIXED", "k", "5", "1m", "COST", "0"), "both held calls admitted")
				require.Equal(t, "master", rltest.Info(t, p.c, "replication")["role"])
			}
			require.Equal(t, "no-failover", rltest.Info(t, p.c, "replication")["master_failover_state"])
		})
	}
}

// slicesReplace returns s with every old replaced by new.
func slicesReplace(s []string, old, new string) []string {
	out := make([]string, len(s))
	for i, v := range s {
		if v == old {
			v = new
		}
		out[i] = v
	}
	return out
}

// TestFailoverTargetRefuses: the replica announces the port of another
// primary, so the old primary asks that one to take over. It
// refuses (PSYNC FAILOVER can't be sent to a master), and the old primary
// is a primary again, with a new replication id: its held write admitted,
// its replica back and continuing.
func TestFailoverTargetRefuses(t *testing.T) {
	p, other := startRepl(t), startRepl(t)
	r := startRepl(t, func(o *server.Options) { o.Config.ReplicaAnnouncePort = other.port })
	follow(t, r, p)
	require.Equal(t, "1", p.c.Do("WAIT", "1", "10000"))
	id := rltest.Info(t, p.c, "replication")["master_replid"]
	require.Equal(t, "+OK", p.c.Do("FAILOVER", "TO", "127.0.0.1", strconv.Itoa(other.port)))
	held := rltest.Dial(t, p.s.Addr.String())
	got := held.Do("RL.FIXED", "k", "5", "1m")
	require.Regexp(t, `^\[0 5 4 -1 \d+\]$`, got, "held, then admitted by the primary again")
	f := rltest.Info(t, p.c, "replication")
	require.Equal(t, "master", f["role"])
	require.Equal(t, "no-failover", f["master_failover_state"])
	require.NotEqual(t, id, f["master_replid"])
	require.Equal(t, id, f["master_replid2"])
	require.Equal(t, "master", rltest.Info(t, other.c, "replication")["role"], "the other primary is untouched")
	rltest.WaitLinkUp(t, r.c)
	require.Equal(t, "1", p.c.Do("WAIT", "1", "10000"))
	require.Regexp(t, `^\[0 5 4 -1 \d+\]$`, r.c.Do("RL.FIXED", "k", "5", "1m", "COST", "0"), "the replica has the write")
}

// TestPsyncFailoverRefusals: only a replica takes over, and only at the
// request of the primary it follows (its replication id).
func TestPsyncFailoverRefusals(t *testing.T) {
	p, r := startRepl(t), startRepl(t)
	follow(t, r, p)
	require.Equal(t, "-ERR PSYNC FAILOVER can't be sent to a master.", p.c.Do("PSYNC", "x", "1", "FAILOVER"))
	require.Equal(t, "-ERR PSYNC FAILOVER replid must match my replid.", r.c.Do("PSYNC", "0123456789012345678901234567890123456789", "1", "FAILOVER"))
	require.Equal(t, "slave", rltest.Info(t, r.c, "replication")["role"])
	require.Equal(t, "-ERR FAILOVER is not valid when server is a replica.", r.c.Do("FAILOVER"))
	require.Equal(t, "-ERR FAILOVER target HOST and PORT is not a replica.", p.c.Do("FAILOVER", "TO", "localhost", strconv.Itoa(r.port)))
}

// TestPauseAndFailoverHoldApart: CLIENT PAUSE and FAILOVER hold writes
// each for itself, as Redis's pause purposes do. CLIENT UNPAUSE during a
// failover leaves its hold, and a failover that ends leaves a pause's: a
// write sent after either end is still held, until the other ends too.
func TestPauseAndFailoverHoldApart(t *testing.T) {
	p, r := startRepl(t), startRepl(t)
	px := followThrough(t, r, p)
	require.Equal(t, "1", p.c.Do("WAIT", "1", "10000"))
	px.Pause() // the failover cannot end before ABORT
	addr := p.s.Addr.String()
	write := func() *rltest.Conn {
		c := rltest.Dial(t, addr)
		c.Send(rltest.Encode("RL.FIXED", "k", "5", "1m"))
		return c
	}
	admitted := func(c *rltest.Conn) {
		t.Helper()
		got, err := c.Read()
		require.NoError(t, err)
		require.Regexp(t, `^\[0 5 [0-4] -1 \d+\]$`, got)
	}

	require.Equal(t, "+OK", p.c.Do("FAILOVER"))
	require.Equal(t, "+OK", p.c.Do("CLIENT", "PAUSE", "3600000", "WRITE"))
	require.Equal(t, "+OK", p.c.Do("CLIENT", "UNPAUSE"))
	a := write()
	parked(t, 1) // the failover's hold is still in force
	require.Equal(t, "+OK", p.c.Do("FAILOVER", "ABORT"))
	admitted(a)
	parked(t, 0)

	require.Equal(t, "+OK", p.c.Do("CLIENT", "PAUSE", "3600000", "WRITE"))
	require.Equal(t, "+OK", p.c.Do("FAILOVER"))
	b := write()
	parked(t, 1)
	require.Equal(t, "+OK", p.c.Do("FAILOVER", "ABORT"))
	rltest.WaitFor(t, 30*time.Second, "the failover's end", func() (bool, string) {
		s := rltest.Info(t, p.c, "replication")["master_failover_state"]
		return s == "no-failover", s
	})
	c := write()
	parked(t, 2) // the pause's hold is still in force
	require.Equal(t, "+OK", p.c.Do("CLIENT", "UNPAUSE"))
	admitted(b)
	admitted(c)
	require.Regexp(t, `^\[0 5 2 -1 \d+\]$`, p.c.Do("RL.FIXED", "k", "5", "1m", "COST", "0"))
}

// TestHeldAgain: an EXEC with a write queued, held by CLIENT PAUSE ALL
// during a FAILOVER, looks again when the pause runs out: the failover's
// hold holds it too, so it parks again and runs only once the failover
// has ended, refused as a replica's. Run as it came out of the pause, it
// would be admitted while the failover waits, by a primary about to hand
// over.
func TestHeldAgain(t *testing.T) {
	p, r := startRepl(t), startRepl(t)
	px := followThrough(t, r, p)
	require.Equal(t, "1", p.c.Do("WAIT", "1", "10000"))
	px.Pause()
	txn, read := rltest.Dial(t, p.s.Addr.String()), rltest.Dial(t, p.s.Addr.String())
	require.Equal(t, "+OK", txn.Do("MULTI"))
	require.Equal(t, "+QUEUED", txn.Do("RL.FIXED", "k", "5", "1m"))
	require.Equal(t, "+OK", p.c.Do("FAILOVER"))
	require.Equal(t, "+OK", p.c.Do("CLIENT", "PAUSE", "300", "ALL"))
	txn.Send(rltest.Encode("EXEC"))
	read.Send(rltest.Encode("EXISTS", "k"))
	got, err := read.Read() // answered once the pause ran out
	require.NoError(t, err)
	require.Equal(t, "0", got)
	parked(t, 1) // the EXEC, held by the failover
	px.Resume()
	exec, err := txn.Read()
	require.NoError(t, err)
	require.Equal(t, "[-READONLY You can't write against a read only replica.]", exec)
	require.Equal(t, "master", rltest.Info(t, r.c, "replication")["role"])
	require.Equal(t, "0", r.c.Do("EXISTS", "k"))
}

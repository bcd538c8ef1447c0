package server_test

// Replication end to end on in-process servers over loopback
// (docs/replication.md): full sync, the stream, READONLY, partial resync,
// promotion, re-pointing, demotion, WAIT, ROLE and INFO. Every server runs
// the manual clock, so every reading is known.

import (
	"context"
	"fmt"
	"net"
	"runtime"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"
	"github.com/rlserver/rlserver/internal/rltest"
	"github.com/rlserver/rlserver/internal/testserver"
	"github.com/rlserver/rlserver/server"
	"github.com/stretchr/testify/require"
)

// replNode is one test server with a connection to it.
type replNode struct {
	s    *server.Server
	c    *rltest.Conn
	port int
}

func startRepl(t *testing.T, opts ...testserver.Option) *replNode {
	t.Helper()
	s := testserver.Start(t, opts...)
	return &replNode{s: s, c: rltest.Dial(t, s.Addr.String()), port: s.Addr.(*net.TCPAddr).Port}
}

// follow makes r a replica of p and waits until its link is up.
func follow(t *testing.T, r, p *replNode) {
	t.Helper()
	require.Equal(t, "+OK", r.c.Do("REPLICAOF", "127.0.0.1", strconv.Itoa(p.port)))
	rltest.WaitLinkUp(t, r.c)
}

// TestReplicaHoldsThePrimarysLimits runs with the replica's stream read
// by its event loop and, where its connections are served by goroutines
// (as under TLS), by its link's goroutine.
func TestReplicaHoldsThePrimarysLimits(t *testing.T) {
	for _, perConn := range []bool{false, true} {
		t.Run(fmt.Sprintf("goroutine-per-conn=%v", perConn), func(t *testing.T) { replicaHoldsThePrimarysLimits(t, perConn) })
	}
}

func replicaHoldsThePrimarysLimits(t *testing.T, perConn bool) {
	p, r := startRepl(t), startRepl(t, func(o *server.Options) { o.GoroutinePerConn = perConn })
	const n = 2000 // of each of the five kinds: 10,000 keys
	rltest.Exhaust(t, p.c, 0, n)
	before := rltest.View(t, p.c, 0, n)
	require.Equal(t, "[0 2 0 -1 60]", before[0], "a CL.THROTTLE peek of an exhausted key")
	follow(t, r, p)
	rltest.WaitFor(t, 10*time.Second, "the stream read the way the replica serves", func() (bool, string) {
		return r.s.Replication.LinkOnLoop() == !perConn, fmt.Sprint(r.s.Replication.LinkOnLoop())
	})
	// WAIT 1 on a connection that wrote: the replica has the full sync
	// and everything after it.
	rltest.Exhaust(t, p.c, n, n+10)
	require.Equal(t, "1", p.c.Do("WAIT", "1", "5000"))
	rltest.RequireSame(t, rltest.View(t, p.c, 0, n+10), rltest.View(t, r.c, 0, n+10), "after the full sync and the stream")
	require.Equal(t, strconv.Itoa(5*(n+10)), r.c.Do("DBSIZE"))

	// Time moves on the primary: expiry, DEL and FLUSHALL reach the replica.
	require.Equal(t, "+OK", p.c.Do("DEBUG", "CLOCK", "ADVANCE", "30000"))
	require.Equal(t, "5", p.c.Do("DEL", "c:0", "f:0", "l:0", "s:0", "b:0"))
	rltest.Exhaust(t, p.c, 0, 1) // fresh keys again
	require.Equal(t, "1", p.c.Do("WAIT", "1", "5000"))
	rltest.RequireSame(t, rltest.View(t, p.c, 0, 20), rltest.View(t, r.c, 0, 20), "after DEL and 30 s")
	require.Equal(t, "+OK", p.c.Do("DEBUG", "CLOCK", "ADVANCE", "200000"))
	rltest.WaitFor(t, 10*time.Second, "every key expired on both", func() (bool, string) {
		a, b := p.c.Do("DBSIZE"), r.c.Do("DBSIZE")
		return a == "0" && b == "0", a + " " + b
	})
	rltest.Exhaust(t, p.c, 0, 3)
	require.Equal(t, "+OK", p.c.Do("FLUSHALL"))
	rltest.Exhaust(t, p.c, 5, 6)
	require.Equal(t, "1", p.c.Do("WAIT", "1", "5000"))
	require.Equal(t, "5", r.c.Do("DBSIZE"), "FLUSHALL, then five keys")
	// Only keys that exist are compared from here: a peek stores a key on
	// a primary (a CL.THROTTLE of quantity 0 does, as redis-cell's), and
	// nothing on a replica.
	rltest.RequireSame(t, rltest.View(t, p.c, 5, 6), rltest.View(t, r.c, 5, 6), "after FLUSHALL")

	// The replica refuses every write with Redis's text and changes
	// nothing; its peeks store nothing.
	const readonly = "-READONLY You can't write against a read only replica."
	for _, cmd := range [][]string{
		{"CL.THROTTLE", "c:5", "1", "2", "60", "1"}, {"CL.THROTTLE", "new", "1", "2", "60"},
		{"RL.FIXED", "f:5", "2", "1m"}, {"RL.LOG", "l:5", "2", "1m", "COST", "1"},
		{"RL.SLIDE", "s:5", "2", "1m"}, {"RL.BUCKET", "b:5", "2", "1", "1m", "COST", "2"},
		{"DEL", "c:5"}, {"UNLINK", "c:5"}, {"FLUSHALL"}, {"FLUSHDB"},
	} {
		require.Equal(t, readonly, r.c.Do(cmd...), "%q", cmd)
	}
	require.Equal(t, "5", r.c.Do("DBSIZE"))
	rltest.Pipeline(t, r.c, [][]string{{"CL.THROTTLE", "peek", "1", "2", "60", "0"}, {"RL.BUCKET", "peek2", "2", "1", "1m", "COST", "0"}})
	require.Equal(t, "5", r.c.Do("DBSIZE"), "a peek on a replica stores nothing")
	rltest.RequireSame(t, rltest.View(t, p.c, 5, 6), rltest.View(t, r.c, 5, 6), "after refused writes")
	for _, cmd := range [][]string{{"EXISTS", "c:5"}, {"TYPE", "b:5"}, {"TTL", "f:5"}, {"SCAN", "0", "COUNT", "100"}, {"PING"}} {
		require.False(t, strings.HasPrefix(r.c.Do(cmd...), "-"), "%q is served on a replica", cmd)
	}

	// go-redis recognises the error.
	gr := redis.NewClient(&redis.Options{Addr: r.s.Addr.String()})
	defer gr.Close()
	err := gr.Do(context.Background(), "RL.FIXED", "f:5", "2", "1m").Err()
	require.True(t, redis.IsReadOnlyError(err), "go-redis: %v", err)
	require.Equal(t, !perConn, r.s.Replication.LinkOnLoop(), "the stream read the way the replica serves")
}

func TestReplicaResyncsPartiallyAfterItsLinkIsCut(t *testing.T) {
	p, r := startRepl(t), startRepl(t)
	rltest.Exhaust(t, p.c, 0, 50)
	follow(t, r, p)
	require.Equal(t, int64(1), rltest.InfoInt(t, p.c, "stats", "sync_full"))
	require.Equal(t, int64(0), rltest.InfoInt(t, p.c, "stats", "sync_partial_ok"))
	// Redis 7's order: the sync counters follow rejected_connections.
	require.Contains(t, rltest.InfoText(t, p.c, "stats"), "\r\nrejected_connections:0\r\nsync_full:1\r\nsync_partial_ok:0\r\nsync_partial_err:0\r\nexpired_keys:")
	for round := 1; round <= 3; round++ {
		require.Equal(t, "1", r.c.Do("CLIENT", "KILL", "TYPE", "master"))
		rltest.Exhaust(t, p.c, 50*round, 50*round+50) // written while the link may be down
		rltest.WaitFor(t, 10*time.Second, "a partial resync", func() (bool, string) {
			v := rltest.InfoInt(t, p.c, "stats", "sync_partial_ok")
			return v == int64(round), fmt.Sprint(v)
		})
		require.Equal(t, "1", p.c.Do("WAIT", "1", "5000"))
		rltest.RequireSame(t, rltest.View(t, p.c, 0, 50*round+50), rltest.View(t, r.c, 0, 50*round+50), "after a partial resync")
	}
	require.Equal(t, int64(1), rltest.InfoInt(t, p.c, "stats", "sync_full"), "no full sync after a cut")
	require.Equal(t, int64(0), rltest.InfoInt(t, p.c, "stats", "sync_partial_err"))
	require.Equal(t, "0", p.c.Do("CLIENT", "KILL", "TYPE", "master"), "a primary has no primary link")

	// CLIENT KILL TYPE replica on the primary cuts the link from the
	// other side: again a partial resync.
	require.Equal(t, "1", p.c.Do("CLIENT", "KILL", "TYPE", "replica"))
	rltest.WaitFor(t, 10*time.Second, "a partial resync", func() (bool, string) {
		v := rltest.InfoInt(t, p.c, "stats", "sync_partial_ok")
		return v == 4, fmt.Sprint(v)
	})
}

func TestReplicaOfAnswers(t *testing.T) {
	p, r := startRepl(t), startRepl(t)
	port := strconv.Itoa(p.port)
	follow(t, r, p)
	require.Equal(t, "+OK Already connected to specified master", r.c.Do("REPLICAOF", "127.0.0.1", port))
	require.Equal(t, "+OK Already connected to specified master", r.c.Do("SLAVEOF", "127.0.0.1", port))
	require.Equal(t, int64(1), rltest.InfoInt(t, p.c, "stats", "sync_full"), "nothing changed")
	for _, bad := range []string{"x", "-1", "65536", ""} {
		require.Equal(t, "-ERR Invalid master port", r.c.Do("REPLICAOF", "127.0.0.1", bad))
	}
	require.Equal(t, "-ERR wrong number of arguments for 'replicaof' command", r.c.Do("REPLICAOF", "no"))
	require.Equal(t, "+OK", p.c.Do("REPLICAOF", "NO", "ONE"), "on a primary it changes nothing")
	require.Equal(t, "master", rltest.Info(t, p.c, "replication")["role"])

	// WAIT: on a replica an error; without writes the online replicas,
	// after the timeout when they are fewer than asked (as Redis 7.0's
	// waitCommand: it blocks unless enough have acknowledged); bad
	// timeouts.
	require.Equal(t, "-ERR WAIT cannot be used with replica instances. Please also note that since Redis 4.0 if a replica is configured to be writable (which is not the default) writes to replicas are just local and are not propagated.", r.c.Do("WAIT", "1", "0"))
	fresh := rltest.Dial(t, p.s.Addr.String())
	require.Equal(t, "1", fresh.Do("WAIT", "1", "0"), "no writes, one asked: the online replica, at once")
	start := time.Now()
	require.Equal(t, "1", fresh.Do("WAIT", "5", "100"), "no writes, five asked: the online replica, once the timeout passed")
	require.GreaterOrEqual(t, time.Since(start), 100*time.Millisecond, "WAIT answered before its timeout")
	require.Equal(t, "-ERR timeout is negative", fresh.Do("WAIT", "1", "-1"))
	require.Equal(t, "-ERR timeout is not an integer or out of range", fresh.Do("WAIT", "1", "x"))
	require.Equal(t, "-ERR value is not an integer or out of range", fresh.Do("WAIT", "x", "0"))
	fresh.Do("RL.FIXED", "w", "5", "1m")
	require.Equal(t, "1", fresh.Do("WAIT", "2", "100"), "two asked, one acknowledged by the timeout")
}

// replicationFields returns INFO replication's field names in order.
func replicationFields(t *testing.T, c *rltest.Conn) []string {
	t.Helper()
	var names []string
	for _, line := range strings.Split(rltest.InfoText(t, c, "replication"), "\r\n") {
		if name, _, ok := strings.Cut(line, ":"); ok {
			names = append(names, name)
		}
	}
	return names
}

var (
	commonTail = []string{"master_failover_state", "master_replid", "master_replid2", "master_repl_offset",
		"second_repl_offset", "repl_backlog_active", "repl_backlog_size", "repl_backlog_first_byte_offset",
		"repl_backlog_histlen"}
	replicaHead = []string{"role", "master_host", "master_port", "master_link_status", "master_last_io_seconds_ago",
		"master_sync_in_progress", "slave_read_repl_offset", "slave_repl_offset"}
	replicaMid = []string{"slave_priority", "slave_read_only", "replica_announced", "connected_slaves"}
)

func atoi(t *testing.T, s string) int64 {
	t.Helper()
	n, err := strconv.ParseInt(s, 10, 64)
	require.NoError(t, err, "%q", s)
	return n
}

func concat(parts ...[]string) []string {
	var out []string
	for _, p := range parts {
		out = append(out, p...)
	}
	return out
}

func TestRoleAndInfoThroughEveryTransition(t *testing.T) {
	p := startRepl(t)
	r := startRepl(t, func(o *server.Options) { o.Config.ReplicaPriority = 10; o.Config.ReplicaAnnouncePort = 7777 })

	// A primary alone.
	require.Equal(t, concat([]string{"role", "connected_slaves"}, commonTail), replicationFields(t, p.c))
	f := rltest.Info(t, p.c, "replication")
	require.Regexp(t, "^[0-9a-f]{40}$", f["master_replid"])
	require.Equal(t, strings.Repeat("0", 40), f["master_replid2"])
	require.Equal(t, "0", f["master_repl_offset"])
	require.Equal(t, "-1", f["second_repl_offset"])
	require.Equal(t, "0", f["repl_backlog_active"])
	require.Equal(t, "[\"master\" 0 []]", p.c.Do("ROLE"))

	// A replica of a port nobody listens on: the link is down and was
	// never up.
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	require.NoError(t, err)
	dead := strconv.Itoa(ln.Addr().(*net.TCPAddr).Port)
	ln.Close()
	require.Equal(t, "+OK", r.c.Do("REPLICAOF", "127.0.0.1", dead))
	require.Equal(t, concat(replicaHead, []string{"master_link_down_since_seconds"}, replicaMid, commonTail), replicationFields(t, r.c))
	f = rltest.Info(t, r.c, "replication")
	require.Equal(t, "slave", f["role"])
	require.Equal(t, "127.0.0.1", f["master_host"])
	require.Equal(t, dead, f["master_port"])
	require.Equal(t, "down", f["master_link_status"])
	require.Equal(t, "-1", f["master_last_io_seconds_ago"])
	require.Equal(t, "-1", f["master_link_down_since_seconds"])
	require.Equal(t, "10", f["slave_priority"])
	require.Equal(t, "1", f["slave_read_only"])
	role := r.c.Do("ROLE")
	require.Regexp(t, `^\["slave" "127\.0\.0\.1" `+dead+` "(connect|connecting)" -1\]$`, role)

	// Up: both sides report the link.
	follow(t, r, p)
	require.Equal(t, concat(replicaHead, replicaMid, commonTail), replicationFields(t, r.c))
	rltest.Exhaust(t, p.c, 0, 5)
	require.Equal(t, "1", p.c.Do("WAIT", "1", "5000"))
	// Heartbeats move the offsets while the test reads them: the
	// replica's, read first, is never past the primary's, read after.
	rf := rltest.Info(t, r.c, "replication")
	pf := rltest.Info(t, p.c, "replication")
	off := rf["slave_repl_offset"]
	require.LessOrEqual(t, atoi(t, off), atoi(t, pf["master_repl_offset"]))
	require.Greater(t, atoi(t, off), int64(0))
	require.Equal(t, "1", pf["connected_slaves"])
	require.Regexp(t, `^ip=127\.0\.0\.1,port=7777,state=online,offset=\d+,lag=0$`, pf["slave0"], "the announced port")
	require.Equal(t, concat([]string{"role", "connected_slaves", "slave0"}, commonTail), replicationFields(t, p.c))
	require.Equal(t, "1", pf["repl_backlog_active"])
	require.Equal(t, "1048576", pf["repl_backlog_size"])
	require.Equal(t, "up", rf["master_link_status"])
	require.Equal(t, "0", rf["master_sync_in_progress"])
	require.Equal(t, off, rf["master_repl_offset"])
	require.Equal(t, pf["master_replid"], rf["master_replid"])
	require.Regexp(t, `^\["master" \d+ \[\["127\.0\.0\.1" "7777" "\d+"\]\]\]$`, p.c.Do("ROLE"))
	require.Regexp(t, fmt.Sprintf(`^\["slave" "127\.0\.0\.1" %d "connected" \d+\]$`, p.port), r.c.Do("ROLE"))

	// Promoted: a new id, the old one kept, valid to the offset after the
	// last byte received. A primary without replicas adds nothing to its
	// stream while nothing changes, so the offset stays put.

	require.Equal(t, "+OK", r.c.Do("REPLICAOF", "NO", "ONE"))
	rf2 := rltest.Info(t, r.c, "replication")
	off = rf2["master_repl_offset"]
	require.GreaterOrEqual(t, atoi(t, off), atoi(t, rf["slave_repl_offset"]))
	require.Equal(t, concat([]string{"role", "connected_slaves"}, commonTail), replicationFields(t, r.c))
	require.Equal(t, "master", rf2["role"])
	require.NotEqual(t, rf["master_replid"], rf2["master_replid"])
	require.Equal(t, rf["master_replid"], rf2["master_replid2"])
	n, _ := strconv.ParseInt(off, 10, 64)
	require.Equal(t, strconv.FormatInt(n+1, 10), rf2["second_repl_offset"])
	require.Equal(t, "1", rf2["repl_backlog_active"])
	require.Equal(t, fmt.Sprintf(`["master" %s []]`, off), r.c.Do("ROLE"))
	rltest.WaitFor(t, 10*time.Second, "the primary to drop the link", func() (bool, string) {
		v := rltest.Info(t, p.c, "replication")["connected_slaves"]
		return v == "0", v
	})
	// Writable again.
	require.Equal(t, "[0 2 1 -1 30]", r.c.Do("CL.THROTTLE", "after", "1", "2", "60", "1"))

	// Demoted: the old primary follows the promoted one; it wrote nothing
	// since, so its history is a prefix and it continues partially.
	follow(t, p, r)
	require.Equal(t, int64(1), rltest.InfoInt(t, r.c, "stats", "sync_partial_ok"), "the demoted primary continued")
	require.Equal(t, int64(0), rltest.InfoInt(t, r.c, "stats", "sync_full"))
	require.Equal(t, "1", r.c.Do("WAIT", "1", "5000"))
	require.Equal(t, r.c.Do("CL.THROTTLE", "after", "1", "2", "60", "0"), p.c.Do("CL.THROTTLE", "after", "1", "2", "60", "0"), "the new primary's decision reached it")
	require.Equal(t, "1", p.c.Do("EXISTS", "after"))
	require.Equal(t, concat(replicaHead, replicaMid, commonTail), replicationFields(t, p.c))

	// Down after being up: the primary goes; the replica says since when.
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	require.NoError(t, r.s.Close(ctx))
	rltest.WaitFor(t, 10*time.Second, "the link down", func() (bool, string) {
		f := rltest.Info(t, p.c, "replication")
		return f["master_link_status"] == "down", fmt.Sprint(f)
	})
	require.Equal(t, concat(replicaHead, []string{"master_link_down_since_seconds"}, replicaMid, commonTail), replicationFields(t, p.c))
	f = rltest.Info(t, p.c, "replication")
	require.Regexp(t, `^\d+$`, f["master_link_down_since_seconds"], "it was up: not -1")
	require.Equal(t, "-1", f["master_last_io_seconds_ago"])
	require.Equal(t, "0", f["master_sync_in_progress"])
	require.Regexp(t, fmt.Sprintf(`^\["slave" "127\.0\.0\.1" %d "(connect|connecting)" -1\]$`, r.port), p.c.Do("ROLE"))
}

// TestFailoverKeepsLimitsAndStreams: P with replicas R1 and R2; P goes,
// R1 is promoted, R2 re-pointed at R1 continues partially, and the limits
// P set hold on both.
func TestFailoverKeepsLimitsAndStreams(t *testing.T) {
	p, r1, r2 := startRepl(t), startRepl(t), startRepl(t)
	follow(t, r1, p)
	follow(t, r2, p)
	rltest.Exhaust(t, p.c, 0, 200)
	require.Equal(t, "2", p.c.Do("WAIT", "2", "5000"))
	want := rltest.View(t, p.c, 0, 200)
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	require.NoError(t, p.s.Close(ctx))
	// Promote the replica that received the most, as Sentinel does: a
	// heartbeat P sent as it stopped may have reached only one of them.
	rltest.WaitFor(t, 10*time.Second, "both links down", func() (bool, string) {
		a, b := rltest.Info(t, r1.c, "replication")["master_link_status"], rltest.Info(t, r2.c, "replication")["master_link_status"]
		return a == "down" && b == "down", a + " " + b
	})
	if rltest.InfoInt(t, r2.c, "replication", "slave_repl_offset") > rltest.InfoInt(t, r1.c, "replication", "slave_repl_offset") {
		r1, r2 = r2, r1
	}
	require.Equal(t, "+OK", r1.c.Do("REPLICAOF", "NO", "ONE"))
	rltest.RequireSame(t, want, rltest.View(t, r1.c, 0, 200), "the promoted replica")
	follow(t, r2, r1)
	require.Equal(t, int64(1), rltest.InfoInt(t, r1.c, "stats", "sync_partial_ok"), "R2 continued")
	require.Equal(t, int64(0), rltest.InfoInt(t, r1.c, "stats", "sync_full"), "R2 needed no full sync")
	rltest.Exhaust(t, r1.c, 200, 210)
	require.Equal(t, "1", r1.c.Do("WAIT", "1", "5000"))
	rltest.RequireSame(t, rltest.View(t, r1.c, 0, 210), rltest.View(t, r2.c, 0, 210), "R2 after the failover")
	// Every key P exhausted is still exhausted on the new primary.
	for _, k := range rltest.Limiters {
		reply := r1.c.Do(k.Take(k.Prefix + ":9")...)
		require.True(t, strings.HasPrefix(reply, "[1 "), "%s after the failover: %s", k.Prefix, reply)
	}
}

// TestDemotedPrimaryDropsWhatItDecidedAlone: a primary that decided after
// its replica was promoted is not a prefix of the new primary: it resyncs
// fully and those decisions are gone.
func TestDemotedPrimaryDropsWhatItDecidedAlone(t *testing.T) {
	p, r := startRepl(t), startRepl(t)
	follow(t, r, p)
	rltest.Exhaust(t, p.c, 0, 10)
	require.Equal(t, "1", p.c.Do("WAIT", "1", "5000"))
	require.Equal(t, "+OK", r.c.Do("REPLICAOF", "NO", "ONE"))
	// The old primary goes on deciding alone (a partition).
	require.Equal(t, "[0 2 1 -1 30]", p.c.Do("CL.THROTTLE", "alone", "1", "2", "60", "1"))
	follow(t, p, r)
	require.Equal(t, int64(1), rltest.InfoInt(t, r.c, "stats", "sync_full"))
	require.Equal(t, int64(1), rltest.InfoInt(t, r.c, "stats", "sync_partial_err"))
	require.Equal(t, "0", p.c.Do("EXISTS", "alone"), "what it decided alone is dropped")
	rltest.RequireSame(t, rltest.View(t, r.c, 0, 10), rltest.View(t, p.c, 0, 10), "the demoted primary")
}

// TestChainedReplica: a replica of a replica takes its state and the
// stream through it, and stays on when the middle one is promoted.
func TestChainedReplica(t *testing.T) {
	p, r1, r2 := startRepl(t), startRepl(t), startRepl(t)
	rltest.Exhaust(t, p.c, 0, 100)
	follow(t, r1, p)
	follow(t, r2, r1)
	rltest.Exhaust(t, p.c, 100, 200)
	require.Equal(t, "1", p.c.Do("WAIT", "1", "5000"))
	want := rltest.View(t, p.c, 0, 200)
	rltest.WaitFor(t, 10*time.Second, "R2 at R1's offset", func() (bool, string) {
		a := rltest.Info(t, r1.c, "replication")["master_repl_offset"]
		b := rltest.Info(t, r2.c, "replication")["master_repl_offset"]
		return a == b, a + " " + b
	})
	rltest.RequireSame(t, want, rltest.View(t, r2.c, 0, 200), "the replica of a replica")
	require.Equal(t, "1", rltest.Info(t, r1.c, "replication")["connected_slaves"])

	// R1 promoted: R2 reconnects, continues partially, takes the new id
	// and gets what R1 decides.
	require.Equal(t, "+OK", r1.c.Do("REPLICAOF", "NO", "ONE"))
	rltest.WaitFor(t, 10*time.Second, "R2's partial resync", func() (bool, string) {
		v := rltest.InfoInt(t, r1.c, "stats", "sync_partial_ok")
		return v == 1, fmt.Sprint(v)
	})
	rltest.WaitLinkUp(t, r2.c)
	require.Equal(t, rltest.Info(t, r1.c, "replication")["master_replid"], rltest.Info(t, r2.c, "replication")["master_replid"])
	rltest.Exhaust(t, r1.c, 200, 210)
	require.Equal(t, "1", r1.c.Do("WAIT", "1", "5000"))
	rltest.RequireSame(t, rltest.View(t, r1.c, 0, 210), rltest.View(t, r2.c, 0, 210), "after R1's promotion")
	require.Equal(t, int64(1), rltest.InfoInt(t, r1.c, "stats", "sync_full"), "R2 was not resynced fully")
}

// TestMasterAuthAndAnnounce: a primary with --requirepass takes a replica
// only with --masterauth; the replica is listed with the address and
// port it announces; an idle primary's clock reaches the replica by
// heartbeat, with no write.
func TestMasterAuthAndAnnounce(t *testing.T) {
	p := startRepl(t, func(o *server.Options) { o.Config.RequirePass = "s3cret" })
	require.Equal(t, "+OK", p.c.Do("AUTH", "s3cret"))
	port := strconv.Itoa(p.port)

	without := startRepl(t)
	require.Equal(t, "+OK", without.c.Do("REPLICAOF", "127.0.0.1", port))
	with := startRepl(t, func(o *server.Options) {
		o.Config.MasterAuth = "s3cret"
		o.Config.ReplicaAnnounceIP = "127.0.0.9"
		o.Config.ReplicaAnnouncePort = 7000
	})
	require.Equal(t, "+OK", with.c.Do("REPLICAOF", "127.0.0.1", port))
	rltest.WaitLinkUp(t, with.c)
	rltest.WaitFor(t, 10*time.Second, "the replica listed", func() (bool, string) {
		v := rltest.Info(t, p.c, "replication")["slave0"]
		return strings.HasPrefix(v, "ip=127.0.0.9,port=7000,state=online,"), v
	})
	require.Equal(t, "1", rltest.Info(t, p.c, "replication")["connected_slaves"], "only the replica with the password")
	require.Equal(t, "down", rltest.Info(t, without.c, "replication")["master_link_status"])

	// Heartbeats: the primary's clock moves with no write, and the
	// replica's TIME follows.
	require.Equal(t, "+OK", p.c.Do("DEBUG", "CLOCK", "ADVANCE", "3600000"))
	want := p.c.Do("TIME")
	rltest.WaitFor(t, 10*time.Second, "the replica's TIME to follow", func() (bool, string) {
		got := with.c.Do("TIME")
		return got == want, got + " want " + want
	})
}

// TestWaitBlocksOnlyItsClient: a WAIT that must wait parks its own
// connection only: every other connection is answered meanwhile, on
// every event loop. An acknowledgement releases it with the count. WAIT
// inside EXEC answers at once. A client gone while waiting is closed and
// nothing else is disturbed.
func TestWaitBlocksOnlyItsClient(t *testing.T) {
	p := startRepl(t)
	// A replica that shakes hands, reads the stream and acknowledges only
	// when told.
	fake := rltest.Dial(t, p.s.Addr.String())
	require.Equal(t, "+PONG", fake.Do("PING"))
	require.Equal(t, "+OK", fake.Do("REPLCONF", "listening-port", "7001"))
	fake.Send(rltest.Encode("PSYNC", "?", "-1"))
	rltest.WaitFor(t, 10*time.Second, "the fake replica attached", func() (bool, string) {
		v := rltest.Info(t, p.c, "replication")["connected_slaves"]
		return v == "1", v
	})
	ack := func(off string) { fake.Send(rltest.Encode("REPLCONF", "ACK", off)) }
	ack("0") // online: its full sync is acknowledged

	waiter := rltest.Dial(t, p.s.Addr.String())
	require.Regexp(t, `^\[0 5 4 -1 \d+\]$`, waiter.Do("RL.FIXED", "w", "5", "1m"))
	waiter.Send(rltest.Encode("WAIT", "1", "0"))
	var others []*rltest.Conn
	for range 8 { // on every loop
		others = append(others, rltest.Dial(t, p.s.Addr.String()))
	}
	for i, c := range others {
		require.Equal(t, "+PONG", c.Do("PING"), "connection %d while a WAIT waits", i)
		require.Regexp(t, `^\[[01] 5 \d+ -?\d+ \d+\]$`, c.Do("RL.FIXED", "w", "5", "1m"))
	}
	require.Equal(t, "1", p.c.Do("WAIT", "0", "0"), "WAIT 0 answers at once")
	// A second waiter that hangs up: its wait ends, the server goes on.
	gone := rltest.Dial(t, p.s.Addr.String())
	gone.Do("RL.FIXED", "g", "5", "1m")
	waiting := func() int { return rltest.StackCount("replication.(*Manager).waitAcks(") }
	gone.Send(rltest.Encode("WAIT", "1", "0"))
	rltest.WaitFor(t, 10*time.Second, "both WAITs to wait", func() (bool, string) { return waiting() == 2, fmt.Sprint(waiting()) })
	gone.Close()
	rltest.WaitFor(t, 10*time.Second, "the WAIT of the client gone to end", func() (bool, string) { return waiting() == 1, fmt.Sprint(waiting()) })
	require.Equal(t, "+PONG", p.c.Do("PING"))
	// The waiter is still waiting: its next reply is the WAIT's, once acknowledged.
	ack(strconv.FormatInt(1<<40, 10))
	r, err := waiter.Read()
	require.NoError(t, err)
	require.Equal(t, "1", r)
	require.Equal(t, "+PONG", waiter.Do("PING"), "and it reads again")

	// Inside EXEC: at once, whatever the replicas acknowledged.
	require.Equal(t, "+OK", waiter.Do("MULTI"))
	require.Equal(t, "+QUEUED", waiter.Do("RL.FIXED", "w2", "5", "1m"))
	require.Equal(t, "+QUEUED", waiter.Do("WAIT", "1", "0"))
	require.Regexp(t, `^\[\[0 5 4 -1 \d+\] [01]\]$`, waiter.Do("EXEC"))

	require.Equal(t, "+PONG", others[0].Do("PING"))
}

// TestWaitWithoutReplicas: a primary with no replica answers WAIT 1 100
// with 0 once the timeout has passed, as Redis does (a client looping on
// WAIT does not spin); inside MULTI it answers at once; WAIT 0 at once.
func TestWaitWithoutReplicas(t *testing.T) {
	p := startRepl(t)
	for _, wrote := range []bool{false, true} {
		if wrote {
			require.Equal(t, "[0 5 4 -1 40000]", p.c.Do("RL.FIXED", "w", "5", "1m"), "the manual clock starts 20 s into a minute")
		}
		start := time.Now()
		require.Equal(t, "0", p.c.Do("WAIT", "1", "100"), "wrote %v", wrote)
		require.GreaterOrEqual(t, time.Since(start), 100*time.Millisecond, "wrote %v: WAIT answered before its timeout", wrote)
		require.Equal(t, "0", p.c.Do("WAIT", "0", "0"))
	}
	require.Equal(t, "+OK", p.c.Do("MULTI"))
	require.Equal(t, "+QUEUED", p.c.Do("WAIT", "1", "0"))
	require.Equal(t, "[0]", p.c.Do("EXEC"), "inside EXEC WAIT never blocks")
}

// TestWaitInsideExecWhileThePumpRuns: WAIT, ROLE and INFO queued in a
// transaction run while EXEC holds every shard, as the pump (which reads
// the shards' changes) runs beside it on a primary with a replica.
// Neither may wait for the other: 300 transactions pipelined while
// another client writes all answer. (Before the replication lock order
// was fixed, about one run in four hung here for good.)
func TestWaitInsideExecWhileThePumpRuns(t *testing.T) {
	p, r := startRepl(t), startRepl(t)
	follow(t, r, p)
	writer := rltest.Dial(t, p.s.Addr.String())
	stop := make(chan struct{})
	wrote := make(chan struct{})
	go func() {
		defer close(wrote)
		for i := 0; ; i++ {
			select {
			case <-stop:
				return
			default:
			}
			if err := writer.Write(rltest.Encode("RL.FIXED", "w"+strconv.Itoa(i%64), "1000000", "1m")); err != nil {
				t.Errorf("write: %v", err)
				return
			}
			if got, err := writer.Read(); err != nil || !strings.HasPrefix(got, "[0 ") {
				t.Errorf("RL.FIXED: %s %v", got, err)
				return
			}
		}
	}()
	defer func() { close(stop); <-wrote }()
	var cmds [][]string
	for i := range 300 {
		k := "x" + strconv.Itoa(i%32)
		cmds = append(cmds, []string{"MULTI"}, []string{"RL.FIXED", k, "1000000", "1m"}, []string{"WAIT", "1", "0"},
			[]string{"ROLE"}, []string{"INFO", "replication"}, []string{"EXEC"})
	}
	replies := rltest.Pipeline(t, p.c, cmds)
	for i := 5; i < len(replies); i += 6 {
		require.Regexp(t, `^\[\[0 1000000 \d+ -1 \d+\] [01] \["master" .*connected_slaves:1`, replies[i])
	}
}

// TestSparePWhateverTheRole: a server runs one P beyond its event loops
// whatever its role (resp.TestServerAsksForASpareP), so that goroutines
// waiting on Go's network poller (the acceptor, the Envoy front, a
// primary's reader of its replicas' acks) run at once while the loops
// are busy (resp/spare.go): following a primary, being promoted and
// following again change nothing.
func TestSparePWhateverTheRole(t *testing.T) {
	if runtime.GOOS != "linux" {
		t.Skip("event loops are Linux-only")
	}
	p, r := startRepl(t), startRepl(t)
	procs := runtime.GOMAXPROCS(0)
	follow(t, r, p)
	require.Equal(t, procs, runtime.GOMAXPROCS(0), "a replica")
	require.Equal(t, "+OK", r.c.Do("REPLICAOF", "NO", "ONE"))
	require.Equal(t, procs, runtime.GOMAXPROCS(0), "promoted")
	follow(t, r, p)
	require.Equal(t, procs, runtime.GOMAXPROCS(0), "a replica again")
}

// TestReplicaOfRefusesWritesAtOnce: from the reply to REPLICAOF on, a
// demoted primary refuses writes, before its link is up. A write it
// admitted then would be lost to the sync with its new primary, which
// never counted it: a request admitted twice.
func TestReplicaOfRefusesWritesAtOnce(t *testing.T) {
	p, r := startRepl(t), startRepl(t)
	require.True(t, strings.HasPrefix(r.c.Do("RL.FIXED", "k", "1", "60s"), "[0 1 0 -1 "), "a primary takes writes")
	require.Equal(t, "+OK", r.c.Do("REPLICAOF", "127.0.0.1", strconv.Itoa(p.port)))
	require.Equal(t, "-READONLY You can't write against a read only replica.", r.c.Do("RL.FIXED", "k2", "1", "60s"))
}

// TestReplBatchIntervalSendsFewerFrames: with --repl-batch-interval a
// primary sends the changes of many writes in one pump. One key written
// 50 times, each write a round trip of its own, reaches the stream as a
// record per pump, so the stream grows by at most a pump's bytes per
// interval begun while the writes ran (plus the first write's and the
// WAIT's). Without the interval every write is pumped on its own: some 50
// records. The bound follows the writes' own duration, so a slow machine
// cannot break it; without the interval it fails (2,061 bytes against a
// bound of 156). The interval is set at start, or by CONFIG SET.
func TestReplBatchIntervalSendsFewerFrames(t *testing.T) {
	t.Run("at start", func(t *testing.T) {
		p := startRepl(t, func(o *server.Options) { o.Config.ReplBatchInterval = time.Second })
		testReplBatchInterval(t, p)
	})
	t.Run("CONFIG SET", func(t *testing.T) {
		p := startRepl(t)
		require.Equal(t, `["repl-batch-interval" "0s"]`, p.c.Do("CONFIG", "GET", "repl-batch-interval"))
		for _, bad := range []string{"2s", "-1ms", "1", "soon"} {
			require.Equal(t, "-ERR CONFIG SET failed (possibly related to argument 'repl-batch-interval') - argument must be a duration from 0 to 1s",
				p.c.Do("CONFIG", "SET", "repl-batch-interval", bad), bad)
		}
		require.Equal(t, `["repl-batch-interval" "0s"]`, p.c.Do("CONFIG", "GET", "repl-batch-interval"), "a refused value changes nothing")
		require.Equal(t, "+OK", p.c.Do("CONFIG", "SET", "repl-batch-interval", "1s"))
		testReplBatchInterval(t, p)
	})
}

func testReplBatchInterval(t *testing.T, p *replNode) {
	const interval = time.Second
	r := startRepl(t)
	follow(t, r, p)
	require.Equal(t, `["repl-batch-interval" "1s"]`, p.c.Do("CONFIG", "GET", "repl-batch-interval"))
	offset := func() int64 { return rltest.InfoInt(t, p.c, "replication", "master_repl_offset") }
	write := func(key string) {
		got := p.c.Do("RL.FIXED", key, "1000", "1m")
		require.True(t, strings.HasPrefix(got, "[0 1000 "), "admitted: %s", got)
	}

	// A pump's bytes are an entry per change and a fixed part: its frame
	// and WAIT's heartbeat. One new key's record in one pump, then two in
	// another (a transaction is one pump), give both.
	pump := func(keys ...string) int64 {
		before := offset()
		require.Equal(t, "+OK", p.c.Do("MULTI"))
		for _, k := range keys {
			require.Equal(t, "+QUEUED", p.c.Do("RL.FIXED", k, "1000", "1m"))
		}
		require.True(t, strings.HasPrefix(p.c.Do("EXEC"), "[[0 1000 "))
		require.Equal(t, "1", p.c.Do("WAIT", "1", "10000"))
		return offset() - before
	}
	write("k00") // the first pump also carries the replica's first heartbeat
	require.Equal(t, "1", p.c.Do("WAIT", "1", "10000"))
	one := pump("k01")
	entry := pump("k02", "k03") - one
	fixed := one - entry
	require.Positive(t, entry)
	require.Positive(t, fixed)

	start := time.Now()
	const writes = 50
	o := offset()
	for i := range writes {
		write(fmt.Sprintf("k%d", 10+i)) // new keys, their entries as long as those above
	}
	elapsed := time.Since(start)
	require.Equal(t, "1", p.c.Do("WAIT", "1", "10000"))
	grew := offset() - o
	// The first write's pump, one per interval begun, the WAIT's; and the
	// 250 ms tick's, which a slow machine may fit in between. Without the
	// interval every write would be a pump of its own.
	pumps := 3 + int64(elapsed/interval) + int64(elapsed/(250*time.Millisecond))
	t.Logf("%d writes in %v: the stream grew by %d bytes, an entry is %d, a pump's fixed part %d, at most %d pumps", writes, elapsed, grew, entry, fixed, pumps)
	require.LessOrEqual(t, grew, writes*entry+pumps*fixed, "%d writes in %v: the stream grew by %d bytes", writes, elapsed, grew)
	require.Equal(t, p.c.Do("RL.FIXED", "k59", "1000", "1m", "COST", "0"), r.c.Do("RL.FIXED", "k59", "1000", "1m", "COST", "0"), "the replica has every write")
}

// waitLinkDown waits until r, a replica, sees its link to its primary
// down.
func waitLinkDown(t *testing.T, r *replNode) {
	t.Helper()
	rltest.WaitFor(t, 10*time.Second, "the replica's link down", func() (bool, string) {
		s := rltest.Info(t, r.c, "replication")["master_link_status"]
		return s == "down", s
	})
}

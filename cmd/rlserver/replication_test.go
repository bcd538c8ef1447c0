package main

// Replication across real processes (docs/replication.md): a primary
// killed with SIGKILL and its replica promoted, with the clocks an hour
// apart either way; a replica paused with SIGSTOP past the backlog; a
// replica restarted from its own --dir.

import (
	"fmt"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/rlserver/rlserver/internal/rltest"
	"github.com/stretchr/testify/require"
)

// startReplica starts a replica of primary (an address) and waits until
// its link is up.
func startReplica(t *testing.T, dir, primary string, args ...string) *instance {
	t.Helper()
	host, port, ok := strings.Cut(primary, ":")
	require.True(t, ok, primary)
	r := startNode(t, dir, append([]string{"--replicaof", host + " " + port}, args...)...)
	rltest.WaitLinkUp(t, r.c)
	return r
}

// TestFailoverKill9KeepsLimitsAndTime: the primary's manual clock is an
// hour ahead of the replica's, level with it, or an hour behind. Keys of
// every kind are exhausted on the primary, the primary is killed with
// SIGKILL and the replica promoted: every key is still limited, and TIME
// continues exactly from the primary's last reading (no time passed on
// the replica's own clock), then advances with the replica's clock.
func TestFailoverKill9KeepsLimitsAndTime(t *testing.T) {
	for _, c := range []struct {
		name  string
		ahead int64 // the primary's clock minus the replica's, ms
	}{{"primary an hour ahead", 3600_000}, {"level", 0}, {"primary an hour behind", -3600_000}} {
		t.Run(c.name, func(t *testing.T) {
			p := startNode(t, t.TempDir(), manual(startMs+c.ahead)...)
			r := startReplica(t, t.TempDir(), p.addr, manual(startMs)...)
			rltest.Exhaust(t, p.c, 0, 100)
			require.Equal(t, "1", p.c.Do("WAIT", "1", "10000"))
			want := rltest.View(t, p.c, 0, 100)
			last := serverTime(t, p.c)
			require.Equal(t, (startMs+c.ahead)*1000, last)
			require.Equal(t, "1", p.c.Do("WAIT", "1", "10000")) // nothing written since: the replica count

			p.stop(t, "SIGKILL")
			rltest.WaitFor(t, 20*time.Second, "the replica to see the link down", func() (bool, string) {
				v := rltest.Info(t, r.c, "replication")["master_link_status"]
				return v == "down", v
			})
			require.Equal(t, last, serverTime(t, r.c), "a replica's TIME is the primary's timeline")
			require.Equal(t, "+OK", r.c.Do("REPLICAOF", "NO", "ONE"))
			require.Equal(t, last, serverTime(t, r.c), "promoted: neither below the primary's last TIME nor ahead of it")
			rltest.RequireSame(t, want, rltest.View(t, r.c, 0, 100), "the promoted replica")
			for _, k := range rltest.Limiters {
				for i := range 100 {
					reply := r.c.Do(k.Take(k.Prefix + ":" + strconv.Itoa(i))...)
					require.True(t, strings.HasPrefix(reply, "[1 "), "%s:%d after the failover: %s", k.Prefix, i, reply)
				}
			}
			// Time goes on from there with the replica's own clock.
			require.Equal(t, "+OK", r.c.Do("DEBUG", "CLOCK", "ADVANCE", "1500"))
			require.Equal(t, last+1_500_000, serverTime(t, r.c))
		})
	}
}

// TestBacklogOverrunResyncsFully: a replica paused with SIGSTOP while its
// link is cut and the primary writes well past --repl-backlog-size comes
// back with a full sync; one paused for a short write continues.
func TestBacklogOverrunResyncsFully(t *testing.T) {
	p := startNode(t, t.TempDir(), manual(startMs, "--repl-backlog-size", "16kb")...)
	require.Equal(t, "16384", rltest.Info(t, p.c, "replication")["repl_backlog_size"])
	r := startReplica(t, t.TempDir(), p.addr, manual(startMs)...)
	stats := func() string {
		f := rltest.Info(t, p.c, "stats")
		return fmt.Sprintf("full=%s ok=%s err=%s", f["sync_full"], f["sync_partial_ok"], f["sync_partial_err"])
	}
	require.Equal(t, "full=1 ok=0 err=0", stats())
	pause := func(write func(), want string) {
		require.NoError(t, r.cmd.Process.Signal(syscall.SIGSTOP))
		require.Equal(t, "1", p.c.Do("CLIENT", "KILL", "TYPE", "replica"))
		write()
		require.NoError(t, r.cmd.Process.Signal(syscall.SIGCONT))
		rltest.WaitFor(t, 20*time.Second, want, func() (bool, string) { s := stats(); return s == want, s })
		rltest.WaitLinkUp(t, r.c)
	}
	pause(func() { rltest.Exhaust(t, p.c, 0, 10) }, "full=1 ok=1 err=0")   // a few KB: still in the backlog
	pause(func() { rltest.Exhaust(t, p.c, 10, 500) }, "full=2 ok=1 err=1") // far past 16 KB
	require.Greater(t, rltest.InfoInt(t, p.c, "replication", "master_repl_offset"), int64(64<<10), "well past the backlog")
	require.Equal(t, "1", p.c.Do("WAIT", "1", "10000"))
	rltest.RequireSame(t, rltest.View(t, p.c, 0, 500), rltest.View(t, r.c, 0, 500), "after the full resync")
}

// TestReplicaRestartResyncsPartially: a replica stopped and started again
// on its own --dir continues from the position its snapshot stored: a
// partial resync of what the primary wrote meanwhile, not a full sync.
// Killed with SIGKILL it does the same from its last snapshot.
func TestReplicaRestartResyncsPartially(t *testing.T) {
	p := startNode(t, t.TempDir(), manual(startMs)...)
	dir := t.TempDir()
	r := startReplica(t, dir, p.addr, manual(startMs)...)
	rltest.Exhaust(t, p.c, 0, 100)
	require.Equal(t, "1", p.c.Do("WAIT", "1", "10000"))
	r.stop(t, "SHUTDOWN")
	rltest.Exhaust(t, p.c, 100, 150) // while it is away
	r = startReplica(t, dir, p.addr, manual(startMs)...)
	f := rltest.Info(t, p.c, "stats")
	require.Equal(t, "1", f["sync_full"], "only the first sync was full")
	require.Equal(t, "1", f["sync_partial_ok"], "the restarted replica continued")
	require.Equal(t, "1", p.c.Do("WAIT", "1", "10000"))
	rltest.RequireSame(t, rltest.View(t, p.c, 0, 150), rltest.View(t, r.c, 0, 150), "the restarted replica")

	// SIGKILL: the last snapshot (every second) holds a position at or
	// before its records, so the replica continues from there.
	rltest.Exhaust(t, p.c, 150, 160)
	require.Equal(t, "1", p.c.Do("WAIT", "1", "10000"))
	require.Equal(t, "+OK", r.c.Do("SAVE"))
	r.stop(t, "SIGKILL")
	rltest.Exhaust(t, p.c, 160, 170)
	r = startReplica(t, dir, p.addr, manual(startMs)...)
	f = rltest.Info(t, p.c, "stats")
	require.Equal(t, "1", f["sync_full"])
	require.Equal(t, "2", f["sync_partial_ok"])
	require.Equal(t, "1", p.c.Do("WAIT", "1", "10000"))
	rltest.RequireSame(t, rltest.View(t, p.c, 0, 170), rltest.View(t, r.c, 0, 170), "the replica restarted after SIGKILL")
}

// TestFailoverRealClocks: the replica's wall clock is an hour fast, or an
// hour slow (--clock-start on the real clock sets the wall clock it
// follows). Following, and once promoted, its TIME is the primary's
// timeline: not below the primary's last TIME, nor ahead of it by more
// than the time that passed (plus the 1% slew); INFO server
// clock_offset_ms shows the hour; the limits hold.
func TestFailoverRealClocks(t *testing.T) {
	for _, c := range []struct {
		name string
		fast int64 // the replica's wall clock minus the real one, ms
	}{{"replica an hour fast", 3600_000}, {"replica an hour slow", -3600_000}} {
		t.Run(c.name, func(t *testing.T) {
			p := startNode(t, t.TempDir())
			r := startReplica(t, t.TempDir(), p.addr, "--clock-start", strconv.FormatInt(time.Now().UnixMilli()+c.fast, 10))
			rltest.Exhaust(t, p.c, 0, 50)
			start := time.Now()
			last := serverTime(t, p.c)
			// A write after that TIME, acknowledged: the replica has a
			// primary reading at least as late.
			p.c.Do("RL.FIXED", "after-time", "5", "1m")
			require.Equal(t, "1", p.c.Do("WAIT", "1", "10000"))
			p.stop(t, "SIGKILL")
			require.Equal(t, "+OK", r.c.Do("REPLICAOF", "NO", "ONE"))
			now := serverTime(t, r.c)
			passed := time.Since(start).Microseconds()
			require.GreaterOrEqual(t, now, last, "not below the primary's last TIME")
			require.LessOrEqual(t, now-last, passed+passed/100+1000, "not ahead by more than the time that passed")
			off := rltest.InfoInt(t, r.c, "server", "clock_offset_ms")
			require.InDelta(t, -c.fast, off, 60_000, "clock_offset_ms: the server clock minus the replica's wall clock")
			for _, k := range rltest.Limiters {
				for i := range 50 {
					reply := r.c.Do(k.Take(k.Prefix + ":" + strconv.Itoa(i))...)
					require.True(t, strings.HasPrefix(reply, "[1 "), "%s:%d after the failover: %s", k.Prefix, i, reply)
				}
			}
			later := serverTime(t, r.c)
			require.GreaterOrEqual(t, later, now)
			require.LessOrEqual(t, later-last, time.Since(start).Microseconds()*101/100+1000)
		})
	}
}

// TestMinReplicasToWrite: a primary restarted alone (as a killed primary
// comes back before Sentinel demotes it) admits requests without
// --min-replicas-to-write: the window of double admission is open. With
// it, every write is refused with Redis's -NOREPLICAS text until a good
// replica is attached, peeks still answer, and a replica paused past
// --min-replicas-max-lag closes writes again until it comes back.
func TestMinReplicasToWrite(t *testing.T) {
	rltest.Long(t, "a primary and replicas as processes")
	open := startNode(t, t.TempDir(), manual(startMs)...)
	require.Equal(t, "[0 1 0 -1 3600]", open.c.Do("CL.THROTTLE", "k", "0", "1", "3600", "1"), "without it: admitted")

	p := startNode(t, t.TempDir(), manual(startMs, "--min-replicas-to-write", "1", "--min-replicas-max-lag", "1")...)
	const noreplicas = "-NOREPLICAS Not enough good replicas to write."
	rltest.WaitFor(t, 10*time.Second, "writes refused", func() (bool, string) {
		r := p.c.Do("CL.THROTTLE", "k", "0", "1", "3600", "1")
		return r == noreplicas, r
	})
	for _, cmd := range [][]string{{"RL.FIXED", "f", "5", "1m"}, {"DEL", "k"}, {"FLUSHALL"}} {
		require.Equal(t, noreplicas, p.c.Do(cmd...), "%q", cmd)
	}
	require.Equal(t, "[0 1 1 -1 0]", p.c.Do("CL.THROTTLE", "k", "0", "1", "3600", "0"), "a peek answers")
	require.Equal(t, "0", p.c.Do("DBSIZE"), "and stores nothing")
	require.Equal(t, `["min-replicas-to-write" "1"]`, p.c.Do("CONFIG", "GET", "min-replicas-to-write"))

	r := startReplica(t, t.TempDir(), p.addr, manual(startMs)...)
	rltest.WaitFor(t, 10*time.Second, "writes taken with a good replica", func() (bool, string) {
		v := p.c.Do("CL.THROTTLE", "k", "0", "1", "3600", "1")
		return strings.HasPrefix(v, "[0 1 0 "), v
	})

	// The replica stops acknowledging: after a lag over a second, refused.
	require.NoError(t, r.cmd.Process.Signal(syscall.SIGSTOP))
	rltest.WaitFor(t, 20*time.Second, "writes refused again", func() (bool, string) {
		v := p.c.Do("RL.FIXED", "f", "5", "1m")
		return v == noreplicas, v
	})
	require.NoError(t, r.cmd.Process.Signal(syscall.SIGCONT))
	rltest.WaitFor(t, 20*time.Second, "writes taken again", func() (bool, string) {
		v := p.c.Do("RL.FIXED", "f", "5", "1m")
		return strings.HasPrefix(v, "["), v // decided (admitted or limited), not refused
	})
}

package main

import (
	"bufio"
	"fmt"
	"os"
	"strconv"
	"strings"
	"testing"

	"github.com/rlserver/rlserver/internal/rltest"
	"github.com/stretchr/testify/require"
)

// rssOf is a process's resident memory in bytes (/proc/PID/status).
func rssOf(t *testing.T, pid int) int64 {
	t.Helper()
	f, err := os.Open(fmt.Sprintf("/proc/%d/status", pid))
	if err != nil {
		t.Skipf("no /proc: %v", err)
	}
	defer f.Close()
	sc := bufio.NewScanner(f)
	for sc.Scan() {
		if kb, ok := strings.CutPrefix(sc.Text(), "VmRSS:"); ok {
			n, err := strconv.ParseInt(strings.TrimSuffix(strings.TrimSpace(kb), " kB"), 10, 64)
			require.NoError(t, err)
			return n << 10
		}
	}
	t.Fatal("no VmRSS")
	return 0
}

// fill sends CL.THROTTLE on new keys from key number from, pipelined, until
// stop says so on a reply (or to keys), and returns the next key number
// and how many replies were each error.
func fill(t *testing.T, c *rltest.Conn, from, to int, stop func(reply string) bool) (int, map[string]int) {
	errs := map[string]int{}
	for i := from; i < to; {
		var cmds [][]string
		for range 5000 {
			cmds = append(cmds, []string{"CL.THROTTLE", "key:" + strconv.Itoa(i), "0", "1", "3600"})
			i++
		}
		done := false
		for _, r := range rltest.Pipeline(t, c, cmds) {
			if strings.HasPrefix(r, "-") {
				errs[r]++
			}
			done = done || stop(r)
		}
		if done {
			return i, errs
		}
	}
	return to, errs
}

// TestMaxMemory: a server filled past --maxmemory under load grows its
// resident memory by at most 1.2 times the limit over the empty
// server's, keeps answering, and, under noeviction, refuses new keys with
// Redis's -OOM while existing ones and peeks keep working; under
// volatile-ttl it evicts instead and refuses nothing.
func TestMaxMemory(t *testing.T) {
	rltest.Long(t, "fills a binary past its maxmemory")
	const limit = 32 << 20
	bin := buildBinary(t)
	t.Run("noeviction", func(t *testing.T) {
		cmd, addr := startBinary(t, bin, "--save-interval", "0", "--clock", "manual", "--maxmemory", "32mb", "--maxmemory-policy", "noeviction")
		c := rltest.Dial(t, addr)
		require.Equal(t, "+PONG", c.Do("PING"))
		base := rssOf(t, cmd.Process.Pid)
		oom := "-OOM command not allowed when used memory > 'maxmemory'."
		next, errs := fill(t, c, 0, 3_000_000, func(r string) bool { return r == oom })
		require.Positive(t, errs[oom], "no -OOM after %d new keys: %v", next, errs)
		require.Len(t, errs, 1, "only -OOM: %v", errs)
		// Keep pushing new keys: some get in whenever the Go heap's
		// garbage is collected and the node is back under its limit (how
		// many depends on the collector's timing: under load, 100,000 once
		// all got in), then they are refused again, and memory stays.
		after, errs := fill(t, c, next, next+1_000_000, func(r string) bool { return r == oom })
		require.Positive(t, errs[oom], "no -OOM again after %d more new keys", after-next)
		require.Len(t, errs, 1, "only -OOM: %v", errs)
		t.Logf("%d more keys sent before the next -OOM", after-next)
		grown := rssOf(t, cmd.Process.Pid) - base
		t.Logf("resident memory grew %d MiB for a %d MiB limit (%s keys held)", grown>>20, limit>>20, c.Do("DBSIZE"))
		require.LessOrEqual(t, grown, int64(limit)*6/5, "resident memory grew %d bytes for a %d byte limit", grown, limit)
		require.Equal(t, "+PONG", c.Do("PING"))
		require.Equal(t, "[1 1 0 3600 3600]", c.Do("CL.THROTTLE", "key:0", "0", "1", "3600"), "an existing key is decided")
		// A peek of a new key is answered, and while the node refuses new
		// keys it stores nothing. The node may be back under its limit
		// for a moment (a collection of the Go heap), when a CL.THROTTLE
		// peek stores its key as redis-cell's does: so the peek is sent
		// between two new keys in one pipeline, and judged when both were
		// refused (the node was full on both sides of it). A collection
		// can free more of the heap than these few keys take back: then
		// the node is filled again until it refuses, and the peek retried.
		bracketed := false
		for i := 0; i < 1000 && !bracketed; i++ {
			k := fmt.Sprintf("never-seen:%d", i)
			r := rltest.Pipeline(t, c, [][]string{{"CL.THROTTLE", fmt.Sprintf("before:%d", i), "0", "1", "3600"},
				{"CL.THROTTLE", k, "0", "1", "3600", "0"}, {"CL.THROTTLE", fmt.Sprintf("after:%d", i), "0", "1", "3600"}})
			require.Equal(t, "[0 1 1 -1 0]", r[1], "a peek of a new key is answered")
			if bracketed = r[0] == oom && r[2] == oom; bracketed {
				require.Equal(t, "0", c.Do("EXISTS", k), "a peek stores nothing while new keys are refused")
			} else {
				from := after
				after, _ = fill(t, c, after, after+1_000_000, func(r string) bool { return r == oom })
				t.Logf("peek %d: the node was under its limit; %d new keys sent before the next -OOM", i, after-from)
			}
		}
		require.True(t, bracketed, "no peek found the node full on both sides")
		mem := rltest.Info(t, c, "memory")
		require.Equal(t, strconv.Itoa(limit), mem["maxmemory"])
		require.Equal(t, "noeviction", mem["maxmemory_policy"])
	})
	t.Run("volatile-ttl", func(t *testing.T) {
		cmd, addr := startBinary(t, bin, "--save-interval", "0", "--clock", "manual", "--maxmemory", "32mb", "--maxmemory-policy", "volatile-ttl")
		c := rltest.Dial(t, addr)
		require.Equal(t, "+PONG", c.Do("PING"))
		base := rssOf(t, cmd.Process.Pid)
		// Until evictions begin, then as many keys again.
		next := 0
		for rltest.InfoInt(t, c, "stats", "evicted_keys") == 0 {
			require.Less(t, next, 3_000_000, "no eviction")
			var errs map[string]int
			next, errs = fill(t, c, next, next+5000, func(string) bool { return false })
			require.Empty(t, errs)
		}
		_, errs := fill(t, c, next, 2*next, func(string) bool { return false })
		require.Empty(t, errs, "volatile-ttl refuses nothing")
		evicted := rltest.InfoInt(t, c, "stats", "evicted_keys")
		require.Positive(t, evicted)
		grown := rssOf(t, cmd.Process.Pid) - base
		t.Logf("resident memory grew %d MiB for a %d MiB limit; %d keys evicted of %d", grown>>20, limit>>20, evicted, 2*next)
		require.LessOrEqual(t, grown, int64(limit)*6/5)
		require.Equal(t, "volatile-ttl", rltest.Info(t, c, "memory")["maxmemory_policy"])
	})
}

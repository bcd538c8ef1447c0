package main

// The acceptance test of automatic failover with the real redis-sentinel
// (Debian's redis-sentinel package; docs/replication.md, "Sentinel"): a
// primary P, replicas R1 and R2 (replica-priority 10) and three Sentinels
// on loopback. A go-redis FailoverClient exhausts 1,000 keys; P is killed
// with SIGKILL; the Sentinels promote R2, R1 follows it, the same client
// finds every limit held, R2's TIME is not behind P's last; P restarted
// becomes R2's replica.

import (
	"bufio"
	"context"
	"fmt"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"
	"github.com/rlserver/rlserver/internal/rltest"
	"github.com/stretchr/testify/require"
)

// pythonWithRedis returns a Python with redis-py (Debian's python3-redis),
// or skips the test (fails with RLSERVER_REQUIRE_TOOLS=1).

// sentinelActs bounds a wait for Sentinel to act (fail over, reconfigure
// a replica). Sentinel enters TILT mode when its timer runs more than 2 s
// late, as a starved process does on a loaded machine, and then does
// nothing for 30 s (Redis's SENTINEL_TILT_PERIOD): seen in a stress run,
// "+tilt #tilt mode entered" in its log. The wait covers a TILT and the
// failover after it; the time taken is logged.
const sentinelActs = 90 * time.Second

func pythonWithRedis(t *testing.T) string {
	t.Helper()
	for _, py := range []string{"/usr/bin/python3", "python3"} {
		if exec.Command(py, "-c", "import redis.sentinel").Run() == nil {
			return py
		}
	}
	msg := "a python3 with redis-py not found: install Debian's python3-redis (apt-get install python3-redis) to run this test"
	if os.Getenv(rltest.RequireToolsEnv) == "1" {
		t.Fatalf("%s (%s=1 makes this a failure)", msg, rltest.RequireToolsEnv)
	}
	t.Skip(msg)
	return ""
}

// freePort returns a loopback port nobody listens on now, and one it has
// not returned before in this process. The kernel may hand a port it just
// gave and got back out again at once: two calls in a row returned the
// same port, and a cluster test's map then named one address twice.
func freePort(t *testing.T) int {
	t.Helper()
	portsMu.Lock()
	defer portsMu.Unlock()
	for range 100 {
		ln, err := net.Listen("tcp", "127.0.0.1:0")
		require.NoError(t, err)
		port := ln.Addr().(*net.TCPAddr).Port
		ln.Close()
		if !portsGiven[port] {
			portsGiven[port] = true
			return port
		}
	}
	t.Fatal("no loopback port not given before in 100 tries")
	return 0
}

// portsGiven are the ports freePort returned, under portsMu.
var (
	portsMu    sync.Mutex
	portsGiven = map[int]bool{}
)

// startSentinel runs redis-sentinel on port, monitoring master "m" at
// primary with quorum 2, a node down after 2 s; its log is returned.
func startSentinel(t *testing.T, bin string, port int, primary string) string {
	t.Helper()
	dir := t.TempDir()
	host, pport, _ := strings.Cut(primary, ":")
	conf := filepath.Join(dir, "sentinel.conf")
	log := filepath.Join(dir, "sentinel.log")
	require.NoError(t, os.WriteFile(conf, []byte(fmt.Sprintf(
		"port %d\nbind 127.0.0.1\ndaemonize no\ndir %s\nlogfile %s\n"+
			"sentinel monitor m %s %s 2\nsentinel down-after-milliseconds m 2000\nsentinel failover-timeout m 10000\n",
		port, dir, log, host, pport)), 0o644))
	cmd := exec.Command(bin, conf)
	require.NoError(t, cmd.Start())
	t.Cleanup(func() { cmd.Process.Kill(); cmd.Wait() })
	return log
}

// sentinelEntries parses SENTINEL REPLICAS/SENTINELS: one map per entry.
func sentinelEntries(t *testing.T, c *redis.Client, what, master string) []map[string]string {
	t.Helper()
	v, err := c.Do(context.Background(), "SENTINEL", what, master).Slice()
	if err != nil {
		return nil
	}
	var out []map[string]string
	for _, e := range v {
		m := map[string]string{}
		switch e := e.(type) {
		case []any: // RESP2: name, value, ...
			for i := 0; i+1 < len(e); i += 2 {
				m[fmt.Sprint(e[i])] = fmt.Sprint(e[i+1])
			}
		case map[any]any: // RESP3
			for k, v := range e {
				m[fmt.Sprint(k)] = fmt.Sprint(v)
			}
		}
		out = append(out, m)
	}
	return out
}

func TestSentinelFailover(t *testing.T) {
	rltest.Long(t, "three redis-sentinel and a failover")
	sentinelBin := rltest.Tool(t, "redis-sentinel")
	ctx := context.Background()
	pPort := freePort(t)
	pDir := t.TempDir()
	// P runs from a configuration file, which Sentinel's CONFIG REWRITE
	// keeps in step with the role it gives P.
	pConf := filepath.Join(t.TempDir(), "p.conf")
	require.NoError(t, os.WriteFile(pConf, []byte(fmt.Sprintf("# P\nport %d\ndir %q\n", pPort, pDir)), 0o644))
	startP := func() *instance {
		cmd, addr := startBinary(t, buildBinary(t), pConf, "--port", strconv.Itoa(pPort))
		return &instance{cmd: cmd, addr: addr, c: rltest.Dial(t, addr)}
	}
	p := startP()
	r1 := startReplica(t, t.TempDir(), p.addr)
	r2 := startReplica(t, t.TempDir(), p.addr, "--replica-priority", "10")
	var sentinels []*redis.Client
	var logs, addrs []string
	for range 3 {
		port := freePort(t)
		logs = append(logs, startSentinel(t, sentinelBin, port, p.addr))
		addr := "127.0.0.1:" + strconv.Itoa(port)
		addrs = append(addrs, addr)
		c := redis.NewClient(&redis.Options{Addr: addr})
		t.Cleanup(func() { c.Close() })
		sentinels = append(sentinels, c)
	}

	// Every Sentinel lists both replicas, flags exactly "slave", and sees
	// the other two Sentinels.
	rltest.WaitFor(t, 30*time.Second, "the Sentinels to see the replicas and each other", func() (bool, string) {
		for i, s := range sentinels {
			reps, others := sentinelEntries(t, s, "REPLICAS", "m"), sentinelEntries(t, s, "SENTINELS", "m")
			ports := map[string]bool{}
			for _, r := range reps {
				if r["flags"] != "slave" {
					return false, fmt.Sprintf("sentinel %d: replica %s:%s flags %q", i, r["ip"], r["port"], r["flags"])
				}
				ports[r["port"]] = true
			}
			_, p1, _ := strings.Cut(r1.addr, ":")
			_, p2, _ := strings.Cut(r2.addr, ":")
			if len(reps) != 2 || !ports[p1] || !ports[p2] || len(others) != 2 {
				return false, fmt.Sprintf("sentinel %d: %d replicas %v, %d sentinels", i, len(reps), ports, len(others))
			}
		}
		return true, ""
	})

	client := redis.NewFailoverClient(&redis.FailoverOptions{MasterName: "m", SentinelAddrs: addrs,
		MaxRetries: -1, DialTimeout: time.Second, ReadTimeout: time.Second, WriteTimeout: time.Second})
	t.Cleanup(func() { client.Close() })
	const keys = 1000
	throttle := func(i int) ([]any, error) {
		return client.Do(ctx, "CL.THROTTLE", "user:"+strconv.Itoa(i), "0", "1", "3600", "1").Slice()
	}
	for i := range keys {
		v, err := throttle(i)
		require.NoError(t, err)
		require.EqualValues(t, 0, v[0], "key %d: the first request is admitted", i)
		v, err = throttle(i)
		require.NoError(t, err)
		require.EqualValues(t, 1, v[0], "key %d: the second is limited", i)
	}
	waited, err := client.Do(ctx, "WAIT", "2", "10000").Int()
	require.NoError(t, err)
	require.Equal(t, 2, waited)
	last := serverTime(t, p.c)

	killed := time.Now()
	p.stop(t, "SIGKILL")
	_, r2Port, _ := strings.Cut(r2.addr, ":")
	rltest.WaitFor(t, sentinelActs, "every Sentinel to name R2 master", func() (bool, string) {
		for i, s := range sentinels {
			a, err := s.Do(ctx, "SENTINEL", "GET-MASTER-ADDR-BY-NAME", "m").StringSlice()
			if err != nil || len(a) != 2 || a[1] != r2Port {
				return false, fmt.Sprintf("sentinel %d: %v %v", i, a, err)
			}
		}
		return true, ""
	})
	switched := time.Since(killed)
	// Sentinel's CLIENT KILL TYPE normal closes the test's connections to
	// the nodes it reconfigures, at any moment of a poll: each check dials
	// anew and takes a closed connection as "not yet".
	rltest.WaitFor(t, sentinelActs, "R1 to follow R2", func() (bool, string) {
		f, err := rltest.AskInfo(r1.addr, "replication")
		return err == nil && f["master_port"] == r2Port && f["master_link_status"] == "up", fmt.Sprint(f, err)
	})

	// The same client, not restarted: every limit held.
	var firstGood time.Duration
	for i := range keys {
		var v []any
		rltest.WaitFor(t, 15*time.Second, "the client's reply", func() (bool, string) {
			v, err = throttle(i)
			return err == nil, fmt.Sprint(err)
		})
		if i == 0 {
			firstGood = time.Since(killed)
		}
		require.EqualValues(t, 1, v[0], "key %d after the failover: still limited", i)
	}
	var r2Time string
	rltest.WaitFor(t, 15*time.Second, "R2's TIME", func() (bool, string) {
		r2Time, err = rltest.Ask(r2.addr, "TIME")
		return err == nil, fmt.Sprint(err)
	})
	require.GreaterOrEqual(t, parseTime(t, r2Time), last, "R2's TIME is not behind P's last")

	// The first +switch-master in the Sentinels' logs ("pid:X 02 Dec 2026
	// 01:57:02.775 # +switch-master ...", local time).
	var switchAt time.Time
	for _, l := range logs {
		b, err := os.ReadFile(l)
		require.NoError(t, err)
		sc := bufio.NewScanner(strings.NewReader(string(b)))
		for sc.Scan() {
			line := sc.Text()
			if !strings.Contains(line, "+switch-master") {
				continue
			}
			t.Log(line)
			_, rest, _ := strings.Cut(line, ":X ")
			if at, err := time.ParseInLocation("02 Jan 2006 15:04:05.000", rest[:min(len(rest), 24)], time.Local); err == nil && (switchAt.IsZero() || at.Before(switchAt)) {
				switchAt = at
			}
		}
	}
	require.False(t, switchAt.IsZero(), "a +switch-master in the Sentinels' logs")
	t.Logf("failover: kill to +switch-master %v, to every Sentinel naming R2 %v, to the client's first good reply %v",
		switchAt.Sub(killed).Round(time.Millisecond), switched.Round(time.Millisecond), firstGood.Round(time.Millisecond))

	// P restarted as it was (a primary, on its own store) is made R2's
	// replica by the Sentinels.
	restarted := time.Now()
	p = startP()
	rltest.WaitFor(t, sentinelActs, "P to become R2's replica", func() (bool, string) {
		f, err := rltest.AskInfo(p.addr, "replication")
		return err == nil && f["role"] == "slave" && f["master_port"] == r2Port && f["master_link_status"] == "up", fmt.Sprint(f, err)
	})
	t.Logf("P restarted: R2's replica after %v", time.Since(restarted).Round(time.Millisecond))
	var v string
	rltest.WaitFor(t, 15*time.Second, "a peek on P", func() (bool, string) {
		v, err = rltest.Ask(p.addr, "CL.THROTTLE", "user:7", "0", "1", "3600", "0")
		return err == nil, fmt.Sprint(err)
	})
	require.True(t, strings.HasPrefix(v, "[0 1 0 "), "P holds R2's state: %s", v)

	// Restarted once more, P is a replica from the start: its file says so.
	b, err := os.ReadFile(pConf)
	require.NoError(t, err)
	require.Contains(t, string(b), "replicaof 127.0.0.1 "+r2Port, "Sentinel's CONFIG REWRITE")
	p.stop(t, "SIGTERM")
	p = startP()
	var f map[string]string
	rltest.WaitFor(t, 15*time.Second, "INFO replication of P", func() (bool, string) {
		f, err = rltest.AskInfo(p.addr, "replication")
		return err == nil, fmt.Sprint(err)
	})
	require.Equal(t, "slave", f["role"], "a replica at once after another restart")
	require.Equal(t, r2Port, f["master_port"])
	rltest.WaitFor(t, 15*time.Second, "P's link up", func() (bool, string) {
		f, err := rltest.AskInfo(p.addr, "replication")
		return err == nil && f["master_link_status"] == "up", fmt.Sprint(f, err)
	})

	// redis-py's Sentinel support finds R2 too, and the limits held (last:
	// it skips where redis-py is missing).
	py := pythonWithRedis(t)
	var sentinelList []string
	for _, a := range addrs {
		h, port, _ := strings.Cut(a, ":")
		sentinelList = append(sentinelList, fmt.Sprintf("(%q, %s)", h, port))
	}
	script := fmt.Sprintf(`from redis.sentinel import Sentinel
s = Sentinel([%s], socket_timeout=2)
print(s.discover_master("m")[1], s.master_for("m", socket_timeout=2).execute_command("CL.THROTTLE", "user:3", 0, 1, 3600, 1))`,
		strings.Join(sentinelList, ", "))
	out, err := exec.Command(py, "-c", script).CombinedOutput()
	require.NoError(t, err, "%s", out)
	require.Regexp(t, "^"+r2Port+` \[1, 1, 0, \d+, \d+\]`, string(out), "redis-py: R2, and user:3 still limited")
}

// Command leaseload measures what a concurrency slot costs the server: a
// unit is one lease taken and given back (RL.ACQUIRE, then RL.RELEASE ANY
// on the same key), one RL.FIXED call (the reference), or the same slot
// taken and given back with Redis's usual recipe, a sorted-set semaphore
// in two Lua scripts (-mode zset: expired leases trimmed, the set counted,
// a token from INCR added with its end as score; ZPOPMIN to give one
// back). -c workers each send -p units per round trip on keys drawn from
// -keys, for -duration. It prints one line of key=value fields: units,
// units a second, the server's CPU per unit (from /proc, -pid), how many
// slots were taken and given back, and a noise gauge before and after
// (the ms a fixed CPU-bound loop takes on this machine).
//
//	go run ./bench/cmd/leaseload -addr 127.0.0.1:6379 -pid 1234 -mode lease
package main

import (
	"bufio"
	"flag"
	"fmt"
	"math/rand/v2"
	"net"
	"os"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/rlserver/rlserver/bench/gauge"
)

// acquireLua and releaseLua are the sorted-set semaphore: a lease's end
// (ms, from Redis's own TIME, so no client clock is trusted) is its
// score; a token is a counter's next value.
const acquireLua = `
local t = redis.call('TIME')
local now = tonumber(t[1]) * 1000 + math.floor(tonumber(t[2]) / 1000)
redis.call('ZREMRANGEBYSCORE', KEYS[1], '-inf', now)
if redis.call('ZCARD', KEYS[1]) < tonumber(ARGV[1]) then
  local token = redis.call('INCR', KEYS[1] .. ':seq')
  redis.call('ZADD', KEYS[1], now + tonumber(ARGV[2]), token)
  redis.call('PEXPIRE', KEYS[1], ARGV[2])
  return token
end
return false`

const releaseLua = `
if #redis.call('ZPOPMIN', KEYS[1]) > 0 then return 1 end
return 0`

func main() {
	addr := flag.String("addr", "127.0.0.1:6379", "the server")
	mode := flag.String("mode", "lease", "lease (RL.ACQUIRE + RL.RELEASE), fixed (RL.FIXED) or zset (the Lua semaphore on Redis)")
	workers := flag.Int("c", 50, "connections, each a worker")
	pipe := flag.Int("p", 16, "units per round trip")
	keys := flag.Int("keys", 100000, "distinct keys")
	duration := flag.Duration("duration", 3*time.Second, "how long")
	pid := flag.Int("pid", 0, "the server's PID, whose CPU time to report")
	label := flag.String("label", "", "a label printed first")
	flag.Parse()

	// The client must cost the server's machine little: requests are
	// encoded by hand and replies read without building values.
	var acq, rel string
	if *mode == "zset" {
		c := dial(*addr)
		acq, rel = c.load(acquireLua), c.load(releaseLua)
		c.Close()
	}
	// unit appends one unit's commands for key k; perUnit is their count.
	perUnit := 2
	unit := func(b []byte, k int) []byte {
		key := strconv.Itoa(k)
		switch *mode {
		case "lease":
			b = appendCmd(b, "RL.ACQUIRE", "lease:"+key, "100", "60s")
			return appendCmd(b, "RL.RELEASE", "lease:"+key, "ANY")
		case "fixed":
			return appendCmd(b, "RL.FIXED", "fixed:"+key, "1000000", "60s")
		case "zset":
			b = appendCmd(b, "EVALSHA", acq, "1", "sem:"+key, "100", "60000")
			return appendCmd(b, "EVALSHA", rel, "1", "sem:"+key)
		}
		fail("unknown mode %q", *mode)
		return nil
	}
	if *mode == "fixed" {
		perUnit = 1
	}
	// A warm-up, which also checks the commands work.
	c := dial(*addr)
	if _, err := c.Write(unit(nil, 0)); err != nil {
		fail("write: %v", err)
	}
	for range perUnit {
		if r := c.reply(); r.err != "" {
			fail("%s: %s", *mode, r.err)
		}
	}
	c.Close()

	gaugeBefore := gauge.Ms()
	cpu0 := cpuTicks(*pid)
	var units, taken, given, errs atomic.Int64
	deadline := time.Now().Add(*duration)
	t0 := time.Now()
	var wg sync.WaitGroup
	for w := range *workers {
		wg.Add(1)
		go func() {
			defer wg.Done()
			c := dial(*addr)
			defer c.Close()
			r := rand.New(rand.NewPCG(uint64(w), 28))
			var buf []byte
			for time.Now().Before(deadline) {
				buf = buf[:0]
				for range *pipe {
					buf = unit(buf, r.IntN(*keys))
				}
				if _, err := c.Write(buf); err != nil {
					fail("write: %v", err)
				}
				for i := range *pipe * perUnit {
					rp := c.reply()
					switch {
					case rp.err != "":
						errs.Add(1)
					case perUnit == 1:
					case i%2 == 0 && rp.token:
						taken.Add(1)
					case i%2 == 1 && rp.n == 1:
						given.Add(1)
					}
				}
				units.Add(int64(*pipe))
			}
		}()
	}
	wg.Wait()
	elapsed := time.Since(t0)
	cpu := float64(cpuTicks(*pid)-cpu0) / 100 // USER_HZ
	gaugeAfter := gauge.Ms()
	n := units.Load()
	line := fmt.Sprintf("label=%s mode=%s units=%d secs=%.2f units_per_sec=%.0f taken=%d given=%d errors=%d cpu_secs=%.2f",
		*label, *mode, n, elapsed.Seconds(), float64(n)/elapsed.Seconds(), taken.Load(), given.Load(), errs.Load(), cpu)
	if cpu > 0 && n > 0 {
		line += fmt.Sprintf(" us_cpu_per_unit=%.3f", cpu*1e6/float64(n))
	}
	fmt.Println(line + fmt.Sprintf(" gauge_before_ms=%.1f gauge_after_ms=%.1f", gaugeBefore, gaugeAfter))
}

// conn is a RESP connection.
type conn struct {
	net.Conn
	rd *bufio.Reader
}

func dial(addr string) *conn {
	nc, err := net.Dial("tcp", addr)
	if err != nil {
		fail("dial %s: %v", addr, err)
	}
	return &conn{Conn: nc, rd: bufio.NewReaderSize(nc, 64<<10)}
}

// load loads a script and returns its SHA1.
func (c *conn) load(script string) string {
	if _, err := c.Write(appendCmd(nil, "SCRIPT", "LOAD", script)); err != nil {
		fail("write: %v", err)
	}
	line, err := c.rd.ReadString('\n')
	if err != nil || line[0] != '$' {
		fail("SCRIPT LOAD: %q %v", line, err)
	}
	sha, err := c.rd.ReadString('\n')
	if err != nil {
		fail("SCRIPT LOAD: %v", err)
	}
	return strings.TrimSpace(sha)
}

// reply is what a unit's replies say: an error's text, an integer, and
// whether an acquisition gave a token (an integer, alone or as an
// RL.ACQUIRE reply's last element).
type reply struct {
	err   string
	n     int64
	token bool
}

// reply reads one reply.
func (c *conn) reply() reply {
	line, err := c.rd.ReadSlice('\n')
	if err != nil {
		fail("read: %v", err)
	}
	body := string(line[1 : len(line)-2])
	switch line[0] {
	case '-':
		return reply{err: body}
	case ':':
		n, _ := strconv.ParseInt(body, 10, 64)
		return reply{n: n, token: true}
	case '$':
		n, _ := strconv.Atoi(body)
		if n >= 0 {
			if _, err := c.rd.Discard(n + 2); err != nil {
				fail("read: %v", err)
			}
		}
		return reply{}
	case '*':
		n, _ := strconv.Atoi(body)
		var last reply
		for range max(n, 0) {
			last = c.reply()
		}
		return reply{token: n == 6 && last.token}
	}
	return reply{err: "unexpected " + body}
}

// appendCmd appends a command in RESP.
func appendCmd(b []byte, args ...string) []byte {
	b = append(b, '*')
	b = strconv.AppendInt(b, int64(len(args)), 10)
	b = append(b, '\r', '\n')
	for _, a := range args {
		b = append(b, '$')
		b = strconv.AppendInt(b, int64(len(a)), 10)
		b = append(b, '\r', '\n')
		b = append(b, a...)
		b = append(b, '\r', '\n')
	}
	return b
}

// cpuTicks reads a process's user plus system time, in clock ticks (0 for
// no process).
func cpuTicks(pid int) int64 {
	if pid == 0 {
		return 0
	}
	b, err := os.ReadFile(fmt.Sprintf("/proc/%d/stat", pid))
	if err != nil {
		fail("read /proc/%d/stat: %v", pid, err)
	}
	f := strings.Fields(string(b[strings.LastIndexByte(string(b), ')')+2:]))
	u, _ := strconv.ParseInt(f[11], 10, 64)
	s, _ := strconv.ParseInt(f[12], 10, 64)
	return u + s
}

func fail(format string, args ...any) {
	fmt.Fprintf(os.Stderr, "leaseload: "+format+"\n", args...)
	os.Exit(1)
}

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
	"flag"
	"fmt"
	"math/rand/v2"
	"strconv"
	"sync"
	"sync/atomic"
	"time"

	"github.com/rlserver/rlserver/bench/gauge"
	"github.com/rlserver/rlserver/bench/respconn"
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
		c := respconn.Dial(*addr)
		acq, rel = c.Load(acquireLua), c.Load(releaseLua)
		c.Close()
	}
	// unit appends one unit's commands for key k; perUnit is their count.
	perUnit := 2
	unit := func(b []byte, k int) []byte {
		key := strconv.Itoa(k)
		switch *mode {
		case "lease":
			b = respconn.AppendCmd(b, "RL.ACQUIRE", "lease:"+key, "100", "60s")
			return respconn.AppendCmd(b, "RL.RELEASE", "lease:"+key, "ANY")
		case "fixed":
			return respconn.AppendCmd(b, "RL.FIXED", "fixed:"+key, "1000000", "60s")
		case "zset":
			b = respconn.AppendCmd(b, "EVALSHA", acq, "1", "sem:"+key, "100", "60000")
			return respconn.AppendCmd(b, "EVALSHA", rel, "1", "sem:"+key)
		}
		respconn.Fail("unknown mode %q", *mode)
		return nil
	}
	if *mode == "fixed" {
		perUnit = 1
	}
	// A warm-up, which also checks the commands work.
	c := respconn.Dial(*addr)
	if _, err := c.Write(unit(nil, 0)); err != nil {
		respconn.Fail("write: %v", err)
	}
	for range perUnit {
		if r := c.Reply(); r.Err != "" {
			respconn.Fail("%s: %s", *mode, r.Err)
		}
	}
	c.Close()

	gaugeBefore := gauge.Ms()
	cpu0 := respconn.CPUTicks(*pid)
	var units, taken, given, errs atomic.Int64
	deadline := time.Now().Add(*duration)
	t0 := time.Now()
	var wg sync.WaitGroup
	for w := range *workers {
		wg.Add(1)
		go func() {
			defer wg.Done()
			c := respconn.Dial(*addr)
			defer c.Close()
			r := rand.New(rand.NewPCG(uint64(w), 28))
			var buf []byte
			for time.Now().Before(deadline) {
				buf = buf[:0]
				for range *pipe {
					buf = unit(buf, r.IntN(*keys))
				}
				if _, err := c.Write(buf); err != nil {
					respconn.Fail("write: %v", err)
				}
				for i := range *pipe * perUnit {
					rp := c.Reply()
					switch {
					case rp.Err != "":
						errs.Add(1)
					case perUnit == 1:
					case i%2 == 0 && rp.Token:
						taken.Add(1)
					case i%2 == 1 && rp.N == 1:
						given.Add(1)
					}
				}
				units.Add(int64(*pipe))
			}
		}()
	}
	wg.Wait()
	elapsed := time.Since(t0)
	cpu := float64(respconn.CPUTicks(*pid)-cpu0) / 100 // USER_HZ
	gaugeAfter := gauge.Ms()
	n := units.Load()
	line := fmt.Sprintf("label=%s mode=%s units=%d secs=%.2f units_per_sec=%.0f taken=%d given=%d errors=%d cpu_secs=%.2f",
		*label, *mode, n, elapsed.Seconds(), float64(n)/elapsed.Seconds(), taken.Load(), given.Load(), errs.Load(), cpu)
	if cpu > 0 && n > 0 {
		line += fmt.Sprintf(" us_cpu_per_unit=%.3f", cpu*1e6/float64(n))
	}
	fmt.Println(line + fmt.Sprintf(" gauge_before_ms=%.1f gauge_after_ms=%.1f", gaugeBefore, gaugeAfter))
}

// Command rlsload is a load generator for Envoy's rate limit service:
// ShouldRateLimit calls of two descriptors (a user among -users and a
// tenant among -tenants) over -conns gRPC connections from -c workers,
// for -duration, unpaced or paced to -rate calls a second. It prints one
// line of key=value fields: calls, OK and OVER_LIMIT answers, errors, the
// calls a second, latency percentiles, and, for each -pids process, the
// CPU it used during the run (from /proc), so that decisions per
// CPU-second compare services made of one process or several.
//
//	go run ./bench/cmd/rlsload -addr 127.0.0.1:8081 -pids 1234,5678 -duration 5s
//
// A noise gauge runs before and after: the ms a fixed CPU-bound loop
// takes on this machine (gauge_before, gauge_after). A run whose gauges
// differ much from the sitting's others ran on a disturbed machine.
package main

import (
	"context"
	"flag"
	"fmt"
	"os"
	"slices"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	rlv3 "github.com/envoyproxy/go-control-plane/envoy/extensions/common/ratelimit/v3"
	pb "github.com/envoyproxy/go-control-plane/envoy/service/ratelimit/v3"
	"github.com/rlserver/rlserver/bench/gauge"
	"google.golang.org/grpc"
	"google.golang.org/grpc/credentials/insecure"
)

func main() {
	addr := flag.String("addr", "127.0.0.1:8081", "the rate limit service's gRPC address")
	domain := flag.String("domain", "bench", "the domain")
	workers := flag.Int("c", 50, "concurrent callers")
	conns := flag.Int("conns", 4, "gRPC connections, shared by the callers")
	users := flag.Int("users", 10000, "distinct users (first descriptor)")
	tenants := flag.Int("tenants", 100, "distinct tenants (second descriptor)")
	duration := flag.Duration("duration", 5*time.Second, "how long to call")
	rate := flag.Float64("rate", 0, "calls a second in all (0: as fast as the callers go)")
	pidList := flag.String("pids", "", "comma-separated PIDs whose CPU time to report")
	label := flag.String("label", "", "a label printed first")
	flag.Parse()

	var pids []int
	for _, p := range strings.Split(*pidList, ",") {
		if p == "" {
			continue
		}
		n, err := strconv.Atoi(p)
		if err != nil {
			fail("bad pid %q", p)
		}
		pids = append(pids, n)
	}
	ccs := make([]pb.RateLimitServiceClient, *conns)
	for i := range ccs {
		cc, err := grpc.NewClient("passthrough:///"+*addr, grpc.WithTransportCredentials(insecure.NewCredentials()))
		if err != nil {
			fail("dial: %v", err)
		}
		defer cc.Close()
		ccs[i] = pb.NewRateLimitServiceClient(cc)
	}
	// Requests built ahead: the generator's own cost stays out of the loop.
	reqs := make([]*pb.RateLimitRequest, 4096)
	for i := range reqs {
		u, tn := (i*7919)%*users, i%*tenants
		reqs[i] = &pb.RateLimitRequest{Domain: *domain, Descriptors: []*rlv3.RateLimitDescriptor{
			{Entries: []*rlv3.RateLimitDescriptor_Entry{{Key: "user", Value: "u" + strconv.Itoa(u)}}},
			{Entries: []*rlv3.RateLimitDescriptor_Entry{{Key: "tenant", Value: "t" + strconv.Itoa(tn)}}},
		}}
	}
	// Warm up the connections.
	for _, c := range ccs {
		if _, err := c.ShouldRateLimit(context.Background(), reqs[0]); err != nil {
			fail("first call: %v", err)
		}
	}

	gaugeBefore := gauge.Ms()
	var (
		ok, over, errs atomic.Int64
		mu             sync.Mutex
		lat            []time.Duration
		wg             sync.WaitGroup
		next           atomic.Int64
	)
	var tokens chan struct{}
	ctx, cancel := context.WithTimeout(context.Background(), *duration)
	defer cancel()
	if *rate > 0 {
		tokens = make(chan struct{}, *workers)
		go func() {
			every := time.Duration(float64(time.Second) / *rate)
			t := time.NewTicker(min(every, 10*time.Millisecond))
			defer t.Stop()
			start, sent := time.Now(), 0
			for {
				select {
				case <-ctx.Done():
					close(tokens)
					return
				case now := <-t.C:
					due := int(float64(now.Sub(start)) / float64(every))
					for ; sent < due; sent++ {
						select {
						case tokens <- struct{}{}:
						default: // the callers are behind: this call is not made
						}
					}
				}
			}
		}()
	}
	cpu0 := cpuTicks(pids)
	t0 := time.Now()
	for w := range *workers {
		wg.Add(1)
		go func() {
			defer wg.Done()
			c := ccs[w%len(ccs)]
			var mine []time.Duration
			for ctx.Err() == nil {
				if tokens != nil {
					if _, open := <-tokens; !open {
						break
					}
				}
				i := next.Add(1)
				s := time.Now()
				r, err := c.ShouldRateLimit(context.Background(), reqs[int(i)%len(reqs)])
				mine = append(mine, time.Since(s))
				switch {
				case err != nil:
					errs.Add(1)
				case r.OverallCode == pb.RateLimitResponse_OK:
					ok.Add(1)
				default:
					over.Add(1)
				}
			}
			mu.Lock()
			lat = append(lat, mine...)
			mu.Unlock()
		}()
	}
	wg.Wait()
	elapsed := time.Since(t0)
	cpu1 := cpuTicks(pids)
	gaugeAfter := gauge.Ms()

	slices.Sort(lat)
	pct := func(p float64) float64 {
		if len(lat) == 0 {
			return 0
		}
		return float64(lat[min(len(lat)-1, int(p*float64(len(lat))))].Microseconds()) / 1000
	}
	calls := ok.Load() + over.Load() + errs.Load()
	const tick = 100 // the kernel's clock ticks a second in /proc (USER_HZ): 100 on Linux
	var cpu float64
	var per []string
	for i, p := range pids {
		s := float64(cpu1[i]-cpu0[i]) / tick
		cpu += s
		per = append(per, fmt.Sprintf("%d:%.2f", p, s))
	}
	line := fmt.Sprintf("label=%s calls=%d ok=%d over=%d errors=%d secs=%.2f calls_per_sec=%.0f p50_ms=%.3f p90_ms=%.3f p99_ms=%.3f cpu_secs=%.2f cpu_per_pid=%s",
		*label, calls, ok.Load(), over.Load(), errs.Load(), elapsed.Seconds(), float64(calls)/elapsed.Seconds(),
		pct(0.50), pct(0.90), pct(0.99), cpu, strings.Join(per, ","))
	if cpu > 0 {
		line += fmt.Sprintf(" calls_per_cpu_sec=%.0f us_cpu_per_call=%.2f", float64(calls)/cpu, cpu*1e6/float64(calls))
	}
	line += fmt.Sprintf(" gauge_before_ms=%.1f gauge_after_ms=%.1f", gaugeBefore, gaugeAfter)
	fmt.Println(line)
}

// cpuTicks reads each process's user plus system time, in clock ticks.
func cpuTicks(pids []int) []int64 {
	out := make([]int64, len(pids))
	for i, p := range pids {
		b, err := os.ReadFile(fmt.Sprintf("/proc/%d/stat", p))
		if err != nil {
			fail("read /proc/%d/stat: %v", p, err)
		}
		// The fields after the command name (which may hold spaces).
		f := strings.Fields(string(b[strings.LastIndexByte(string(b), ')')+2:]))
		u, _ := strconv.ParseInt(f[11], 10, 64)
		s, _ := strconv.ParseInt(f[12], 10, 64)
		out[i] = u + s
	}
	return out
}

func fail(format string, args ...any) {
	fmt.Fprintf(os.Stderr, "rlsload: "+format+"\n", args...)
	os.Exit(1)
}

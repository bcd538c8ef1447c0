// Command repllag measures replication lag: the time from a write's reply on
// a primary to the moment its key is visible on a replica. It writes probe
// keys one at a time with -write (where {key} stands for a fresh key), then
// asks the replica EXISTS key in a tight loop until it answers 1. The lag
// of one probe is the time from the primary's reply to the replica's
// answer 1: an upper bound that includes one round trip to the replica,
// reported alone as the replica's EXISTS round trip, with the share of
// probes the replica had applied by the first EXISTS (the write's change
// reached it before the write's reply reached the client and the client's
// next request reached the replica). Run it while a load (redis-benchmark)
// runs against the primary; it prints one CSV line:
//
//	probes,lag_p50_us,lag_p90_us,lag_p99_us,lag_max_us,rtt_p50_us,first_poll_pct
//
// Usage (bench/replication.sh runs it):
//
//	go run ./bench/cmd/repllag -primary 127.0.0.1:7379 -replica 127.0.0.1:7380 \
//	    -write 'RL.FIXED {key} 1 60s' -n 2000
package main

import (
	"context"
	"flag"
	"fmt"
	"os"
	"slices"
	"strings"
	"time"

	"github.com/redis/go-redis/v9"
)

func main() {
	primary := flag.String("primary", "127.0.0.1:7379", "the primary's address")
	replica := flag.String("replica", "127.0.0.1:7380", "the replica's address")
	write := flag.String("write", "RL.FIXED {key} 1 60s", "the write, {key} standing for the probe's key")
	n := flag.Int("n", 2000, "probes")
	every := flag.Duration("every", 2*time.Millisecond, "the pause between probes")
	timeout := flag.Duration("timeout", 10*time.Second, "a probe not seen on the replica by then fails the run")
	flag.Parse()
	if err := run(*primary, *replica, *write, *n, *every, *timeout); err != nil {
		fmt.Fprintln(os.Stderr, "repllag:", err)
		os.Exit(1)
	}
}

func run(primary, replica, write string, n int, every, timeout time.Duration) error {
	ctx := context.Background()
	p := redis.NewClient(&redis.Options{Addr: primary, PoolSize: 1})
	r := redis.NewClient(&redis.Options{Addr: replica, PoolSize: 1})
	defer p.Close()
	defer r.Close()
	words := strings.Fields(write)
	prefix := fmt.Sprintf("lagprobe:%d:", time.Now().UnixNano())
	lags := make([]time.Duration, 0, n)
	var rtts []time.Duration
	first := 0 // probes seen by the first EXISTS
	for i := range n {
		key := prefix + fmt.Sprint(i)
		args := make([]any, len(words))
		for j, w := range words {
			args[j] = strings.ReplaceAll(w, "{key}", key)
		}
		if err := p.Do(ctx, args...).Err(); err != nil {
			return fmt.Errorf("write %q: %w", args, err)
		}
		wrote := time.Now()
		for poll := 0; ; poll++ {
			t0 := time.Now()
			v, err := r.Exists(ctx, key).Result()
			if err != nil {
				return fmt.Errorf("EXISTS on the replica: %w", err)
			}
			rtts = append(rtts, time.Since(t0))
			if v == 1 {
				lags = append(lags, time.Since(wrote))
				if poll == 0 {
					first++
				}
				break
			}
			if time.Since(wrote) > timeout {
				return fmt.Errorf("probe %d not on the replica after %v", i, timeout)
			}
		}
		time.Sleep(every)
	}
	slices.Sort(lags)
	slices.Sort(rtts)
	q := func(d []time.Duration, f float64) int64 {
		return d[min(len(d)-1, int(f*float64(len(d))))].Microseconds()
	}
	fmt.Printf("%d,%d,%d,%d,%d,%d,%.1f\n", len(lags), q(lags, 0.5), q(lags, 0.9), q(lags, 0.99), lags[len(lags)-1].Microseconds(), q(rtts, 0.5),
		100*float64(first)/float64(len(lags)))
	return nil
}

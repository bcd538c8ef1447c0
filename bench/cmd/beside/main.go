// Command beside measures what waits on a server beside its request
// traffic: how soon a new connection gets its first reply (-mode connect:
// dial, PING, read the reply, close), or how long WAIT 1 takes after a
// write (-mode wait: a fresh RL.FIXED key, then WAIT 1 1000; the server
// needs a replica). Run it while a load (bench/cmd/pacedload) runs against
// the server; it prints one CSV line, latencies in µs:
//
//	mode,probes,p50_us,p90_us,p99_us,max_us
//
// Usage (bench/beside.sh runs it):
//
//	go run ./bench/cmd/beside -addr 127.0.0.1:7379 -mode connect -n 500
package main

import (
	"bufio"
	"context"
	"flag"
	"fmt"
	"net"
	"os"
	"slices"
	"time"

	"github.com/redis/go-redis/v9"
)

func main() {
	addr := flag.String("addr", "127.0.0.1:7379", "the server's address")
	mode := flag.String("mode", "connect", "connect (a new connection's first reply) or wait (WAIT 1 after a write)")
	n := flag.Int("n", 500, "probes")
	every := flag.Duration("every", 2*time.Millisecond, "the pause between probes")
	flag.Parse()
	var (
		ds  []time.Duration
		err error
	)
	switch *mode {
	case "connect":
		ds, err = connect(*addr, *n, *every)
	case "wait":
		ds, err = wait(*addr, *n, *every)
	default:
		err = fmt.Errorf("unknown mode %q", *mode)
	}
	if err != nil {
		fmt.Fprintln(os.Stderr, "beside:", err)
		os.Exit(1)
	}
	slices.Sort(ds)
	q := func(f float64) int64 { return ds[min(len(ds)-1, int(f*float64(len(ds))))].Microseconds() }
	fmt.Printf("%s,%d,%d,%d,%d,%d\n", *mode, len(ds), q(0.5), q(0.9), q(0.99), ds[len(ds)-1].Microseconds())
}

// connect times n new connections from the dial to their first reply.
func connect(addr string, n int, every time.Duration) ([]time.Duration, error) {
	ds := make([]time.Duration, 0, n)
	for range n {
		t0 := time.Now()
		c, err := net.Dial("tcp", addr)
		if err != nil {
			return nil, err
		}
		if _, err := c.Write([]byte("*1\r\n$4\r\nPING\r\n")); err != nil {
			return nil, err
		}
		line, err := bufio.NewReader(c).ReadString('\n')
		if err != nil {
			return nil, err
		}
		ds = append(ds, time.Since(t0))
		c.Close()
		if line != "+PONG\r\n" {
			return nil, fmt.Errorf("PING answered %q", line)
		}
		time.Sleep(every)
	}
	return ds, nil
}

// wait times n WAIT 1 1000, each after a write of a fresh key, on one
// connection; a WAIT that timed out (no replica acknowledged) fails the run.
func wait(addr string, n int, every time.Duration) ([]time.Duration, error) {
	ctx := context.Background()
	c := redis.NewClient(&redis.Options{Addr: addr, PoolSize: 1})
	defer c.Close()
	prefix := fmt.Sprintf("beside:%d:", time.Now().UnixNano())
	ds := make([]time.Duration, 0, n)
	for i := range n {
		if err := c.Do(ctx, "RL.FIXED", prefix+fmt.Sprint(i), 1, "60s").Err(); err != nil {
			if err := c.Do(ctx, "SET", prefix+fmt.Sprint(i), 1).Err(); err != nil { // Redis
				return nil, err
			}
		}
		t0 := time.Now()
		acked, err := c.Do(ctx, "WAIT", 1, 1000).Int64()
		if err != nil {
			return nil, err
		}
		ds = append(ds, time.Since(t0))
		if acked < 1 {
			return nil, fmt.Errorf("WAIT 1 1000: no replica acknowledged")
		}
		time.Sleep(every)
	}
	return ds, nil
}

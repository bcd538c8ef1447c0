// Command pacedload sends one command line at a set rate: -c connections,
// each sending a pipeline of -p commands on its own schedule, so that the
// server receives -rate commands a second in all, whatever its speed
// (redis-benchmark sends as fast as the server answers, which makes the
// load of two servers differ). __rand_int__ in the line stands for a
// random key number below -keys, as in redis-benchmark. It runs for
// -duration, or until SIGTERM or SIGINT, then prints one line of
// key=value fields: commands sent, the rate reached, error replies, and
// pipelines sent late (more than one period behind their schedule: the
// client or the server could not keep up, and the rate reached is lower).
//
//	go run ./bench/cmd/pacedload -addr 127.0.0.1:7379 -rate 20000 -p 1 CL.THROTTLE 'rl:gcra:__rand_int__' 100 100 60 1
package main

import (
	"flag"
	"fmt"
	"math/rand/v2"
	"os"
	"os/signal"
	"strings"
	"sync"
	"sync/atomic"
	"syscall"
	"time"

	"github.com/rlserver/rlserver/bench/respconn"
)

func main() {
	addr := flag.String("addr", "127.0.0.1:6379", "the server")
	workers := flag.Int("c", 50, "connections")
	pipe := flag.Int("p", 1, "commands per pipeline")
	rate := flag.Float64("rate", 10000, "commands a second in all")
	keys := flag.Int("keys", 100000, "key numbers __rand_int__ draws from")
	duration := flag.Duration("duration", 0, "how long (0: until SIGTERM or SIGINT)")
	label := flag.String("label", "", "a label printed first")
	flag.Parse()
	args := flag.Args()
	if len(args) == 0 || *rate <= 0 || *workers < 1 || *pipe < 1 {
		respconn.Fail("usage: pacedload [flags] command args... (-rate > 0, -c and -p at least 1)")
	}

	stop := make(chan struct{})
	sig := make(chan os.Signal, 1)
	signal.Notify(sig, syscall.SIGTERM, syscall.SIGINT)
	go func() {
		if *duration > 0 {
			select {
			case <-sig:
			case <-time.After(*duration):
			}
		} else {
			<-sig
		}
		close(stop)
	}()

	// Each connection sends a pipeline every period, the connections'
	// schedules spread evenly over one period.
	period := time.Duration(float64(time.Second) * float64(*workers**pipe) / *rate)
	var sent, errs, late atomic.Int64
	var wg sync.WaitGroup
	t0 := time.Now()
	for w := range *workers {
		wg.Add(1)
		go func() {
			defer wg.Done()
			c := respconn.Dial(*addr)
			defer c.Close()
			r := rand.New(rand.NewPCG(uint64(w), 31))
			var buf []byte
			line := make([]string, len(args))
			next := t0.Add(period * time.Duration(w) / time.Duration(*workers))
			for {
				if d := time.Until(next); d > 0 {
					select {
					case <-stop:
						return
					case <-time.After(d):
					}
				} else {
					select {
					case <-stop:
						return
					default:
					}
					if -d > period {
						late.Add(1)
					}
				}
				buf = buf[:0]
				for range *pipe {
					key := fmt.Sprintf("%012d", r.IntN(*keys))
					for i, a := range args {
						line[i] = strings.ReplaceAll(a, "__rand_int__", key)
					}
					buf = respconn.AppendCmd(buf, line...)
				}
				if _, err := c.Write(buf); err != nil {
					respconn.Fail("write: %v", err)
				}
				for range *pipe {
					if c.Reply().Err != "" {
						errs.Add(1)
					}
				}
				sent.Add(int64(*pipe))
				next = next.Add(period)
			}
		}()
	}
	wg.Wait()
	secs := time.Since(t0).Seconds()
	fmt.Printf("label=%s sent=%d secs=%.2f rate=%.0f target_rate=%.0f errors=%d late_pipelines=%d\n",
		*label, sent.Load(), secs, float64(sent.Load())/secs, *rate, errs.Load(), late.Load())
}

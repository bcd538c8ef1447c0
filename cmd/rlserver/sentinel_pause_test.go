package main

import (
	"context"
	"errors"
	"fmt"
	"os"
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

// TestSentinelSwitchUnderPause runs docs/replication.md's recipe for a
// switch under Sentinel that loses no decision, with the real
// redis-sentinel: CLIENT PAUSE WRITE on the primary P, P's replica R
// acknowledging P's whole stream, then SENTINEL FAILOVER. Eight
// connections write to P as fast as they can, each pipelining RL.FIXED
// calls on keys of its own, until their connection is closed. Sentinel
// promotes R and re-points P, closing P's clients: the writes the pause
// held never run. Then R holds exactly the calls P admitted, key by key,
// and so does P, now R's replica. Without the pause, the calls P admitted
// after R's promotion would be missing on R.
func TestSentinelSwitchUnderPause(t *testing.T) {
	rltest.Long(t, "redis-sentinel and a switch under CLIENT PAUSE")
	sentinelBin := rltest.Tool(t, "redis-sentinel")
	ctx := context.Background()
	pPort := freePort(t)
	// P runs from a configuration file, which Sentinel's CONFIG REWRITE
	// keeps in step with the role it gives P.
	pConf := filepath.Join(t.TempDir(), "p.conf")
	require.NoError(t, os.WriteFile(pConf, []byte(fmt.Sprintf("port %d\ndir %q\n", pPort, t.TempDir())), 0o644))
	cmd, pAddr := startBinary(t, buildBinary(t), pConf, "--port", strconv.Itoa(pPort))
	p := &instance{cmd: cmd, addr: pAddr, c: rltest.Dial(t, pAddr)}
	r := startReplica(t, t.TempDir(), p.addr)
	_, rPort, _ := strings.Cut(r.addr, ":")
	sPort := freePort(t)
	startSentinel(t, sentinelBin, sPort, p.addr)
	s := redis.NewClient(&redis.Options{Addr: "127.0.0.1:" + strconv.Itoa(sPort)})
	t.Cleanup(func() { s.Close() })
	rltest.WaitFor(t, 30*time.Second, "Sentinel to list R", func() (bool, string) {
		reps := sentinelEntries(t, s, "REPLICAS", "m")
		return len(reps) == 1 && reps[0]["port"] == rPort && reps[0]["flags"] == "slave", fmt.Sprint(reps)
	})

	const writers, keys, depth = 8, 20, 16
	admitted := make([]map[string]int, writers)
	errs := make(chan error, writers)
	started := make(chan struct{}, writers)
	var wg sync.WaitGroup
	for w := range writers {
		c := rltest.Dial(t, p.addr)
		wg.Add(1)
		go func() {
			defer wg.Done()
			// Each writer ends when Sentinel closes P's clients (or, were
			// the pause to end first, at P's READONLY), after 50 batches.
			a, batches, err := rltest.WriteFixed(c, fmt.Sprintf("sp:%d", w), keys, depth, 50, started)
			admitted[w] = a
			switch {
			case err != nil && !errors.Is(err, rltest.ErrEnded): // an answer out of place
			case batches < 50:
				err = fmt.Errorf("ended after %d batches (%v)", batches, err)
			default:
				err = nil
			}
			if err != nil {
				err = fmt.Errorf("writer %d: %w", w, err)
			}
			errs <- err
		}()
	}
	for range writers {
		<-started // each has had 50 batches answered
	}

	require.Equal(t, "+OK", p.c.Do("CLIENT", "PAUSE", "120000", "WRITE"))
	// Every decision P made is in its stream now, and no more will be:
	// R acknowledges it all before Sentinel is asked.
	var offset string
	rltest.WaitFor(t, 30*time.Second, "R to acknowledge P's stream", func() (bool, string) {
		f := rltest.Info(t, p.c, "replication")
		offset = f["master_repl_offset"]
		return strings.Contains(f["slave0"], ",offset="+offset+","), fmt.Sprint(f)
	})
	asked := time.Now()
	require.NoError(t, s.Do(ctx, "SENTINEL", "FAILOVER", "m").Err())
	rltest.WaitFor(t, sentinelActs, "Sentinel to name R master", func() (bool, string) {
		a, err := s.Do(ctx, "SENTINEL", "GET-MASTER-ADDR-BY-NAME", "m").StringSlice()
		return err == nil && len(a) == 2 && a[1] == rPort, fmt.Sprint(a, err)
	})
	named := time.Since(asked)
	// Sentinel re-points P and closes its clients (CLIENT KILL TYPE
	// normal): the writers' held calls are never answered.
	done := make(chan struct{})
	go func() { wg.Wait(); close(done) }()
	select {
	case <-done:
	case <-time.After(sentinelActs):
		t.Fatal("writers still running: Sentinel did not close P's clients")
	}
	closed := time.Since(asked)
	close(errs)
	for err := range errs {
		require.NoError(t, err)
	}
	rltest.WaitFor(t, sentinelActs, "P to follow R", func() (bool, string) {
		f, err := rltest.AskInfo(p.addr, "replication")
		return err == nil && f["role"] == "slave" && f["master_port"] == rPort && f["master_link_status"] == "up", fmt.Sprint(f, err)
	})
	rltest.WaitFor(t, 15*time.Second, "P to apply R's stream", func() (bool, string) {
		rf, err1 := rltest.AskInfo(r.addr, "replication")
		pf, err2 := rltest.AskInfo(p.addr, "replication")
		return err1 == nil && err2 == nil && rf["master_repl_offset"] == pf["slave_repl_offset"], fmt.Sprint(rf["master_repl_offset"], pf["slave_repl_offset"], err1, err2)
	})

	total := 0
	for w := range writers {
		for k := range keys {
			key := fmt.Sprintf("sp:%d:%d", w, k)
			n := admitted[w][key]
			total += n
			want := fmt.Sprintf("[0 1000000 %d -1 ", 1000000-n)
			for _, node := range []*instance{r, p} {
				got, err := rltest.Ask(node.addr, "RL.FIXED", key, "1000000", "1h", "COST", "0")
				require.NoError(t, err)
				require.True(t, strings.HasPrefix(got, want), "%s on %s: %s, want %s... (%d admitted)", key, node.addr, got, want, n)
			}
		}
	}
	t.Logf("%d calls admitted before the pause; P's offset at the pause %s; from SENTINEL FAILOVER: R named %v, P's writers closed %v",
		total, offset, named.Round(time.Millisecond), closed.Round(time.Millisecond))
	got, err := rltest.Ask(r.addr, "RL.FIXED", "after", "1000000", "1h")
	require.NoError(t, err)
	require.Regexp(t, `^\[0 1000000 999999 -1 \d+\]$`, got, "R takes writes")
}

package main

import (
	"fmt"
	"regexp"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/rlserver/rlserver/internal/rltest"
	"github.com/stretchr/testify/require"
)

// TestFailoverCommandKeepsEveryDecision: two rlserver processes, a
// primary and its replica, and FAILOVER on the primary while four
// connections write RL.LOG calls as fast as their round trips go. Each
// call is admitted by the old primary or refused with READONLY once the
// roles changed; the new primary holds every admitted call, key by key.
// The old primary, now its replica, does too, and the next call on the new
// primary is the first one not yet admitted.
func TestFailoverCommandKeepsEveryDecision(t *testing.T) {
	p := startNode(t, t.TempDir(), manual(startMs)...)
	r := startReplica(t, t.TempDir(), p.addr, manual(startMs)...)
	const writers, keys = 4, 10
	admit := regexp.MustCompile(`^\[0 1000000 \d+ -1 \d+\]$`)
	counts := make([][keys]int, writers)
	var wg sync.WaitGroup
	errs := make(chan error, writers)
	going := make(chan struct{}, writers)
	for w := range writers {
		c := rltest.Dial(t, p.addr)
		wg.Add(1)
		go func() {
			defer wg.Done()
			for i := 0; ; i++ {
				if i == 200 {
					going <- struct{}{}
				}
				key := fmt.Sprintf("fo%d:%d", w, i%keys)
				if err := c.Write(rltest.Encode("RL.LOG", key, "1000000", "1h")); err != nil {
					errs <- err
					return
				}
				got, err := c.Read()
				switch {
				case err != nil:
					errs <- err
					return
				case admit.MatchString(got):
					counts[w][i%keys]++
				case strings.HasPrefix(got, "-READONLY "):
					if i < 200 {
						going <- struct{}{}
					}
					return
				default:
					errs <- fmt.Errorf("writer %d: %q", w, got)
					return
				}
			}
		}()
	}
	for range writers {
		<-going
	}
	require.Equal(t, "+OK", p.c.Do("FAILOVER"))
	wg.Wait()
	close(errs)
	for err := range errs {
		require.NoError(t, err)
	}
	rltest.WaitFor(t, 20*time.Second, "the old primary to follow the new one", func() (bool, string) {
		f := rltest.Info(t, p.c, "replication")
		return f["role"] == "slave" && f["master_link_status"] == "up", fmt.Sprint(f["role"], f["master_link_status"])
	})
	require.Equal(t, "master", rltest.Info(t, r.c, "replication")["role"])
	for w := range writers {
		for k := range keys {
			key := fmt.Sprintf("fo%d:%d", w, k)
			want := "[0 1000000 " + strconv.Itoa(1000000-counts[w][k]) + " -1 "
			for _, n := range []*instance{r, p} {
				got := n.c.Do("RL.LOG", key, "1000000", "1h", "COST", "0")
				require.True(t, strings.HasPrefix(got, want), "%s at %s: %s, want %s... (%d admitted)", key, n.addr, got, want, counts[w][k])
			}
		}
	}
	require.Regexp(t, `^\[0 1000000 \d+ -1 \d+\]$`, r.c.Do("RL.LOG", "fo0:0", "1000000", "1h"), "the new primary takes writes")
}

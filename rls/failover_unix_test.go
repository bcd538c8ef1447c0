//go:build unix

package rls_test

import (
	"context"
	"runtime"
	"strconv"
	"strings"
	"testing"
	"time"

	rlv3 "github.com/envoyproxy/go-control-plane/envoy/extensions/common/ratelimit/v3"
	pb "github.com/envoyproxy/go-control-plane/envoy/service/ratelimit/v3"
	"github.com/rlserver/rlserver/internal/rltest"
	"github.com/stretchr/testify/require"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"
)

// TestFailoverHoldsRequests: a FAILOVER holds the front's requests as it
// holds a connection's writes; the front's worker, which has no
// connection to park, waits. The replica's stream is held back by a
// proxy, so the failover cannot end until the proxy resumes (or ABORT).
// A request sent after FAILOVER's +OK is then refused as a replica's if
// the roles changed, and decided by the primary if the failover was
// aborted. Decided at once, as before the hold, it would be OK in both.
func TestFailoverHoldsRequests(t *testing.T) {
	for _, abort := range []bool{false, true} {
		t.Run("abort="+strconv.FormatBool(abort), func(t *testing.T) {
			p, r := startFront(t), startFront(t)
			px := rltest.NewStreamProxy(t, p.s.Addr.String())
			require.Equal(t, "+OK", r.resp.Do("REPLICAOF", "127.0.0.1", strconv.Itoa(px.Port())))
			rltest.WaitLinkUp(t, r.resp)
			require.Equal(t, "OK", p.should(t, "api", desc("user", "f")).OverallCode.String())
			require.Equal(t, "[0 1 0 -1 60000]", p.resp.Do("RL.LOG", "sync", "1", "60"))
			require.Equal(t, "1", p.resp.Do("WAIT", "1", "0"))
			px.Pause()
			require.Equal(t, "+OK", p.resp.Do("FAILOVER"))

			type answer struct {
				r   *pb.RateLimitResponse
				err error
			}
			done := make(chan answer, 1)
			go func() {
				ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
				defer cancel()
				res, err := p.rls.ShouldRateLimit(ctx, &pb.RateLimitRequest{Domain: "api", Descriptors: []*rlv3.RateLimitDescriptor{desc("user", "f")}})
				done <- answer{res, err}
			}()
			if abort {
				// The request is held before ABORT: its worker waits
				// for the hold's end in ExecContext.
				rltest.WaitFor(t, 30*time.Second, "the front's request to be held", func() (bool, string) {
					n := heldWorkers()
					return n == 1, strconv.Itoa(n)
				})
				// A request whose deadline passes while it is held
				// ends with it, and never runs.
				ctx, cancel := context.WithTimeout(context.Background(), 200*time.Millisecond)
				_, err := p.rls.ShouldRateLimit(ctx, &pb.RateLimitRequest{Domain: "api", Descriptors: []*rlv3.RateLimitDescriptor{desc("user", "g")}})
				cancel()
				require.Equal(t, codes.DeadlineExceeded, status.Code(err), "%v", err)
				rltest.WaitFor(t, 30*time.Second, "the expired request's worker to let go", func() (bool, string) {
					n := heldWorkers()
					return n == 1, strconv.Itoa(n)
				})
				require.Equal(t, "+OK", p.resp.Do("FAILOVER", "ABORT"))
			} else {
				px.Resume()
			}
			var a answer
			select {
			case a = <-done:
			case <-time.After(time.Minute):
				t.Fatal("the held request was never answered")
			}
			if abort {
				require.NoError(t, a.err)
				require.Equal(t, "OK", a.r.OverallCode.String(), "decided by the primary once the failover was aborted")
				require.Equal(t, "OVER_LIMIT", p.should(t, "api", desc("user", "f")).OverallCode.String(), "it was charged")
				require.Equal(t, []string{"OK", "OK", "OVER_LIMIT"}, []string{
					p.should(t, "api", desc("user", "g")).OverallCode.String(),
					p.should(t, "api", desc("user", "g")).OverallCode.String(),
					p.should(t, "api", desc("user", "g")).OverallCode.String(),
				}, "the expired request charged nothing")
				return
			}
			require.ErrorContains(t, a.err, "READONLY", "held until the primary had become a replica")
			rltest.WaitFor(t, 10*time.Second, "the new primary's health", func() (bool, string) {
				h := r.health(t)
				return h == "SERVING", h
			})
			require.Equal(t, "OK", r.should(t, "api", desc("user", "f")).OverallCode.String(), "the held request charged nothing")
			require.Equal(t, "OVER_LIMIT", r.should(t, "api", desc("user", "f")).OverallCode.String())
		})
	}
}

// heldWorkers counts the goroutines waiting for a FAILOVER's hold to end
// in node.ExecContext: a front's worker whose write is held.
func heldWorkers() int {
	buf := make([]byte, 4<<20)
	n := 0
	for _, g := range strings.Split(string(buf[:runtime.Stack(buf, true)]), "\n\n") {
		if strings.Contains(g, "[select") && strings.Contains(g, "node.(*Node).ExecContext(") {
			n++
		}
	}
	return n
}

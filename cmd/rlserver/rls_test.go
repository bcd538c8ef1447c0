package main

import (
	"context"
	"path/filepath"
	"strconv"
	"testing"
	"time"

	rlv3 "github.com/envoyproxy/go-control-plane/envoy/extensions/common/ratelimit/v3"
	pb "github.com/envoyproxy/go-control-plane/envoy/service/ratelimit/v3"
	"github.com/rlserver/rlserver/internal/rltest"
	"github.com/stretchr/testify/require"
	"google.golang.org/grpc"
	"google.golang.org/grpc/credentials/insecure"
)

// TestRLSKill9KeepsCounts: counts made through the Envoy rate limit
// service survive kill -9 once a periodic snapshot covered them, like any
// key: a user refused before the kill is refused after it.
func TestRLSKill9KeepsCounts(t *testing.T) {
	dir := t.TempDir()
	conf, err := filepath.Abs("../../rls/testdata/e2e")
	require.NoError(t, err)
	args := manual(startMs, "--rls-addr", "127.0.0.1:0", "--rls-config", conf)
	ask := func(n *instance) pb.RateLimitResponse_Code {
		addr := rltest.Info(t, n.c, "rls")["rls_addr"]
		cc, err := grpc.NewClient("passthrough:///"+addr, grpc.WithTransportCredentials(insecure.NewCredentials()))
		require.NoError(t, err)
		defer cc.Close()
		ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
		defer cancel()
		r, err := pb.NewRateLimitServiceClient(cc).ShouldRateLimit(ctx, &pb.RateLimitRequest{Domain: "api",
			Descriptors: []*rlv3.RateLimitDescriptor{{Entries: []*rlv3.RateLimitDescriptor_Entry{{Key: "user", Value: "k9"}}}}})
		require.NoError(t, err)
		return r.OverallCode
	}
	n := startNode(t, dir, args...)
	saves0 := rltest.InfoInt(t, n.c, "persistence", "rdb_saves")
	for range 2 {
		require.Equal(t, pb.RateLimitResponse_OK, ask(n))
	}
	require.Equal(t, pb.RateLimitResponse_OVER_LIMIT, ask(n))
	rltest.Eventually(t, 15*time.Second, "a periodic snapshot of every change", func() bool {
		ip := rltest.Info(t, n.c, "persistence")
		saves, _ := strconv.ParseInt(ip["rdb_saves"], 10, 64)
		return ip["rdb_changes_since_last_save"] == "0" && ip["rdb_bgsave_in_progress"] == "0" && saves > saves0
	})
	n.stop(t, "SIGKILL")

	n = startNode(t, dir, args...)
	require.Equal(t, pb.RateLimitResponse_OVER_LIMIT, ask(n), "the count came back")
	require.Equal(t, "+fixed", n.c.Do("TYPE", "rls:{api}:user_k9:fixed"))
	n.stop(t, "SHUTDOWN NOSAVE")
}

package main

import (
	"context"
	"fmt"
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

// askRLS sends one request of domain api to the rate limit service of the
// node c is connected to (its address from INFO rls) and returns the
// overall code; each descriptor is a list of key/value entries.
func askRLS(t *testing.T, c *rltest.Conn, descriptors ...[][2]string) pb.RateLimitResponse_Code {
	t.Helper()
	addr := rltest.Info(t, c, "rls")["rls_addr"]
	cc, err := grpc.NewClient("passthrough:///"+addr, grpc.WithTransportCredentials(insecure.NewCredentials()))
	require.NoError(t, err)
	defer cc.Close()
	req := &pb.RateLimitRequest{Domain: "api"}
	for _, d := range descriptors {
		rd := &rlv3.RateLimitDescriptor{}
		for _, e := range d {
			rd.Entries = append(rd.Entries, &rlv3.RateLimitDescriptor_Entry{Key: e[0], Value: e[1]})
		}
		req.Descriptors = append(req.Descriptors, rd)
	}
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	r, err := pb.NewRateLimitServiceClient(cc).ShouldRateLimit(ctx, req)
	require.NoError(t, err)
	return r.OverallCode
}

// TestRLSKill9KeepsCounts: counts made through the Envoy rate limit
// service survive kill -9 once a periodic snapshot covered them, like any
// key: a user refused before the kill is refused after it.
func TestRLSKill9KeepsCounts(t *testing.T) {
	dir := t.TempDir()
	conf, err := filepath.Abs("../../rls/testdata/e2e")
	require.NoError(t, err)
	args := manual(startMs, "--rls-addr", "127.0.0.1:0", "--rls-config", conf)
	ask := func(n *instance) pb.RateLimitResponse_Code { return askRLS(t, n.c, [][2]string{{"user", "k9"}}) }
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

// TestRLSClusterForwards: in cluster mode a node never decides for keys it
// does not own. A domain's counters share one hash slot ({domain}); Envoy
// may call any node: one that does not own the slot forwards the call to
// the owner, where the counts live.
func TestRLSClusterForwards(t *testing.T) {
	rltest.Long(t, "a two-node cluster")
	conf, err := filepath.Abs("../../rls/testdata/e2e")
	require.NoError(t, err)
	ranges := [][2]int{{0, 8191}, {8192, 16383}}
	var maps []*mapNode
	for i, r := range ranges {
		maps = append(maps, &mapNode{id: nodeID(fmt.Sprintf("rls/p%d", i)), port: freePort(t), epoch: i + 1, slots: [][2]int{r}})
	}
	mapPath := filepath.Join(t.TempDir(), "nodes.conf")
	writeClusterMap(t, mapPath, 2, maps...)
	var nodes []*cnode
	for _, m := range maps {
		nodes = append(nodes, startClusterNode(t, mapPath, m, manual(startMs, "--rls-addr", "127.0.0.1:0", "--rls-config", conf)...))
	}
	waitSlots(t, 20*time.Second, "both nodes' CLUSTER SLOTS", nodes,
		slotsText(slotsEntry{0, 8191, []*mapNode{maps[0]}}, slotsEntry{8192, 16383, []*mapNode{maps[1]}}))
	owner, other := nodes[0], nodes[1]
	if keySlot("api") > 8191 {
		owner, other = other, owner
	}
	ask := func(n *cnode) pb.RateLimitResponse_Code {
		return askRLS(t, n.c, [][2]string{{"user", "cl"}}, [][2]string{{"tenant", "cl"}})
	}
	require.Equal(t, pb.RateLimitResponse_OK, ask(other), "forwarded")
	require.Equal(t, pb.RateLimitResponse_OK, ask(owner))
	require.Equal(t, pb.RateLimitResponse_OVER_LIMIT, ask(other), "both calls counted on the owner")
	require.Equal(t, "+fixed", owner.c.Do("TYPE", "rls:{api}:user_cl:fixed"))
	require.Equal(t, "0", other.c.Do("DBSIZE"), "nothing decided on the node that does not own the slot")
}

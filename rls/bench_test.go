package rls_test

import (
	"context"
	"strconv"
	"testing"

	rlv3 "github.com/envoyproxy/go-control-plane/envoy/extensions/common/ratelimit/v3"
	pb "github.com/envoyproxy/go-control-plane/envoy/service/ratelimit/v3"
	"github.com/rlserver/rlserver/internal/testserver"
	"github.com/rlserver/rlserver/rls"
	"github.com/rlserver/rlserver/server"
)

// BenchmarkShouldRateLimit: the service's own cost per two-descriptor
// call, without gRPC (the configuration lookup, the RL.ALL call through
// the node, the response), over 10,000 users and 100 tenants.
//
//	go test ./rls -run xxx -bench ShouldRateLimit -benchmem
func BenchmarkShouldRateLimit(b *testing.B) {
	s := testserver.Start(b, func(o *server.Options) {
		o.Config.RLS.Addr, o.Config.RLS.Config = "127.0.0.1:0", "testdata/e2e"
	})
	svc := s.RLS.Service()
	reqs := make([]*pb.RateLimitRequest, 4096)
	for i := range reqs {
		reqs[i] = &pb.RateLimitRequest{Domain: "api", HitsAddend: 1, Descriptors: []*rlv3.RateLimitDescriptor{
			desc("slide", "u"+strconv.Itoa(i*7919%10000)), desc("org", "t"+strconv.Itoa(i%100))}}
	}
	var _ *rls.Service = svc
	ctx := context.Background()
	b.ReportAllocs()
	b.ResetTimer()
	for i := 0; b.Loop(); i++ {
		if _, err := svc.ShouldRateLimit(ctx, reqs[i%len(reqs)]); err != nil {
			b.Fatal(err)
		}
	}
}

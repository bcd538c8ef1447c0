package rls_test

import (
	"context"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	rlv3 "github.com/envoyproxy/go-control-plane/envoy/extensions/common/ratelimit/v3"
	pb "github.com/envoyproxy/go-control-plane/envoy/service/ratelimit/v3"
	typev3 "github.com/envoyproxy/go-control-plane/envoy/type/v3"
	"github.com/rlserver/rlserver/internal/rltest"
	"github.com/rlserver/rlserver/internal/testserver"
	"github.com/rlserver/rlserver/server"
	"github.com/stretchr/testify/require"
	"google.golang.org/grpc"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/credentials/insecure"
	"google.golang.org/grpc/status"
	"google.golang.org/protobuf/types/known/wrapperspb"
)

// front is a server with the rate limit service on, and a gRPC client of
// it on loopback.
type front struct {
	s   *server.Server
	rls pb.RateLimitServiceClient
	cc  *grpc.ClientConn
	// resp is a RESP connection to the same server (DEBUG CLOCK, keys).
	resp *rltest.Conn
}

// startFront starts a server (manual clock at rltest.StartNs) serving
// testdata/e2e, or dir if given.
func startFront(t *testing.T, opts ...testserver.Option) *front {
	t.Helper()
	o := append([]testserver.Option{func(o *server.Options) {
		o.Config.RLS.Addr = "127.0.0.1:0"
		o.Config.RLS.Config = "testdata/e2e"
	}}, opts...)
	s := testserver.Start(t, o...)
	cc, err := grpc.NewClient("passthrough:///"+s.RLS.Addr.String(), grpc.WithTransportCredentials(insecure.NewCredentials()))
	require.NoError(t, err)
	t.Cleanup(func() { cc.Close() })
	return &front{s: s, rls: pb.NewRateLimitServiceClient(cc), cc: cc, resp: rltest.Dial(t, s.Addr.String())}
}

// desc is a descriptor of key/value pairs.
func desc(kv ...string) *rlv3.RateLimitDescriptor {
	d := &rlv3.RateLimitDescriptor{}
	for i := 0; i+1 < len(kv); i += 2 {
		d.Entries = append(d.Entries, &rlv3.RateLimitDescriptor_Entry{Key: kv[i], Value: kv[i+1]})
	}
	return d
}

func (f *front) ask(t *testing.T, r *pb.RateLimitRequest) *pb.RateLimitResponse {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	resp, err := f.rls.ShouldRateLimit(ctx, r)
	require.NoError(t, err)
	return resp
}

func (f *front) should(t *testing.T, domain string, ds ...*rlv3.RateLimitDescriptor) *pb.RateLimitResponse {
	t.Helper()
	return f.ask(t, &pb.RateLimitRequest{Domain: domain, Descriptors: ds})
}

// codesOf is the overall code then each status's code, as "OK"/"OVER_LIMIT".
func codesOf(r *pb.RateLimitResponse) []string {
	out := []string{r.OverallCode.String()}
	for _, s := range r.Statuses {
		out = append(out, s.Code.String())
	}
	return out
}

// TestFixedLikeUpstream: the default algorithm counts as envoyproxy/ratelimit
// does (a window aligned to the clock): the statuses carry the limit, what
// remains and the time to the window's end. The manual clock stands 20 s into
// a minute, so the window ends in 40 s.
func TestFixedLikeUpstream(t *testing.T) {
	f := startFront(t)
	for i, want := range []uint32{1, 0} {
		r := f.should(t, "api", desc("user", "alice"))
		require.Equal(t, []string{"OK", "OK"}, codesOf(r), "request %d", i+1)
		st := r.Statuses[0]
		require.Equal(t, uint32(2), st.CurrentLimit.RequestsPerUnit)
		require.Equal(t, pb.RateLimitResponse_RateLimit_MINUTE, st.CurrentLimit.Unit)
		require.Equal(t, want, st.LimitRemaining)
		require.Equal(t, 40*time.Second, st.DurationUntilReset.AsDuration())
	}
	r := f.should(t, "api", desc("user", "alice"))
	require.Equal(t, []string{"OVER_LIMIT", "OVER_LIMIT"}, codesOf(r))
	require.Zero(t, r.Statuses[0].LimitRemaining)
	require.Equal(t, 40*time.Second, r.Statuses[0].DurationUntilReset.AsDuration())
	require.Equal(t, []string{"OK", "OK"}, codesOf(f.should(t, "api", desc("user", "bob"))), "another user")

	// The counter is a plain key: TYPE, PTTL, and RL.FIXED on it agree.
	require.Equal(t, "+fixed", f.resp.Do("TYPE", "rls:{api}:user_alice:fixed"))
	require.Equal(t, "40000", f.resp.Do("PTTL", "rls:{api}:user_alice:fixed"))
	require.Equal(t, `["0" ["rls:{api}:user_alice:fixed" "rls:{api}:user_bob:fixed"]]`, sortedScan(f.resp.Do("SCAN", "0", "MATCH", "rls:{api}:*", "COUNT", "100")))
	// Reset from any Redis client: the key goes, the user starts afresh.
	require.Equal(t, "1", f.resp.Do("DEL", "rls:{api}:user_alice:fixed"))
	require.Equal(t, uint32(1), f.should(t, "api", desc("user", "alice")).Statuses[0].LimitRemaining)
	require.Equal(t, "+OK", f.resp.Do("DEBUG", "CLOCK", "ADVANCE", "40s"))
	require.Equal(t, []string{"OK", "OK"}, codesOf(f.should(t, "api", desc("user", "alice"))), "a new window")
}

// TestAllOrNothing: a request's descriptors are one decision. A user over
// its own limit is refused and charges its tenant nothing; upstream would
// have charged the tenant (its #1060).
func TestAllOrNothing(t *testing.T) {
	f := startFront(t)
	for range 2 {
		require.Equal(t, "OK", f.should(t, "api", desc("user", "u1"), desc("tenant", "t")).OverallCode.String())
	}
	for range 10 {
		r := f.should(t, "api", desc("user", "u1"), desc("tenant", "t"))
		require.Equal(t, []string{"OVER_LIMIT", "OVER_LIMIT", "OK"}, codesOf(r))
		require.Equal(t, uint32(3), r.Statuses[1].LimitRemaining, "the tenant's remaining, unchanged")
	}
	for i := range 3 {
		r := f.should(t, "api", desc("user", "u"+strconv.Itoa(i+2)), desc("tenant", "t"))
		require.Equal(t, "OK", r.OverallCode.String(), "the tenant's three left, user %d", i+2)
	}
	r := f.should(t, "api", desc("user", "u9"), desc("tenant", "t"))
	require.Equal(t, []string{"OVER_LIMIT", "OK", "OVER_LIMIT"}, codesOf(r))
	require.Equal(t, uint32(2), r.Statuses[0].LimitRemaining, "u9 was checked, not charged")
}

// TestChargeEach: --rls-charge-each restores upstream's behaviour: the
// tenant is charged by requests its user's limit refuses.
func TestChargeEach(t *testing.T) {
	f := startFront(t, func(o *server.Options) { o.Config.RLS.ChargeEach = true })
	for range 2 {
		require.Equal(t, "OK", f.should(t, "api", desc("user", "u1"), desc("tenant", "t")).OverallCode.String())
	}
	r := f.should(t, "api", desc("user", "u1"), desc("tenant", "t"))
	require.Equal(t, []string{"OVER_LIMIT", "OVER_LIMIT", "OK"}, codesOf(r))
	require.Equal(t, uint32(2), r.Statuses[1].LimitRemaining, "the tenant charged by a refused request")
}

// TestHitsAddend: the request's hits_addend (unset or 0 charges 1), a
// descriptor's own (which wins; a set 0 checks without charging), and a
// cost past the limit refused whole.
func TestHitsAddend(t *testing.T) {
	f := startFront(t)
	r := f.ask(t, &pb.RateLimitRequest{Domain: "api", Descriptors: []*rlv3.RateLimitDescriptor{desc("tenant", "h")}, HitsAddend: 0})
	require.Equal(t, uint32(4), r.Statuses[0].LimitRemaining, "0 charges 1")
	r = f.ask(t, &pb.RateLimitRequest{Domain: "api", Descriptors: []*rlv3.RateLimitDescriptor{desc("tenant", "h")}, HitsAddend: 3})
	require.Equal(t, uint32(1), r.Statuses[0].LimitRemaining)
	d := desc("tenant", "h")
	d.HitsAddend = wrapperspb.UInt64(0)
	r = f.ask(t, &pb.RateLimitRequest{Domain: "api", Descriptors: []*rlv3.RateLimitDescriptor{d}, HitsAddend: 5})
	require.Equal(t, []string{"OK", "OK"}, codesOf(r), "a check")
	require.Equal(t, uint32(1), r.Statuses[0].LimitRemaining, "charged nothing")
	d.HitsAddend = wrapperspb.UInt64(2)
	r = f.ask(t, &pb.RateLimitRequest{Domain: "api", Descriptors: []*rlv3.RateLimitDescriptor{d}})
	require.Equal(t, []string{"OVER_LIMIT", "OVER_LIMIT"}, codesOf(r), "2 hits, 1 left: refused whole")
	d.HitsAddend = wrapperspb.UInt64(1)
	require.Equal(t, "OK", f.ask(t, &pb.RateLimitRequest{Domain: "api", Descriptors: []*rlv3.RateLimitDescriptor{d}}).OverallCode.String())
}

// TestConcurrency: a concurrency rule counts requests in flight. A hit
// takes a lease, refused once two are out, the wait until the first ends;
// the request's end, as Envoy's apply_on_stream_done reports it (a
// descriptor with is_negative_hits), gives one back; a lease never given
// back ends with its term (a minute). With a rate limit in the same
// request, a refusal by either charges neither.
func TestConcurrency(t *testing.T) {
	f := startFront(t)
	hit := func(neg bool, kv ...string) *pb.RateLimitResponse {
		var ds []*rlv3.RateLimitDescriptor
		for i := 0; i+1 < len(kv); i += 2 {
			d := desc(kv[i], kv[i+1])
			d.IsNegativeHits = neg
			ds = append(ds, d)
		}
		return f.should(t, "api", ds...)
	}
	r := hit(false, "backend", "db")
	require.Equal(t, []string{"OK", "OK"}, codesOf(r))
	require.Equal(t, uint32(1), r.Statuses[0].LimitRemaining)
	require.Equal(t, "+OK", f.resp.Do("DEBUG", "CLOCK", "ADVANCE", "10s"))
	require.Equal(t, []string{"OK", "OK"}, codesOf(hit(false, "backend", "db")))
	r = hit(false, "backend", "db")
	require.Equal(t, []string{"OVER_LIMIT", "OVER_LIMIT"}, codesOf(r), "a third in flight")
	require.Equal(t, int64(50), r.Statuses[0].DurationUntilReset.Seconds, "the first lease ends in 50 s")
	key := "rls:{api}:backend_db:concurrency"
	require.Equal(t, "lease", f.resp.Do("TYPE", key)[1:])
	// A refused request with a rate limit beside it charges neither.
	require.Equal(t, []string{"OVER_LIMIT", "OVER_LIMIT", "OK"}, codesOf(hit(false, "backend", "db", "tenant", "c")))
	require.Equal(t, uint32(4), hit(false, "tenant", "c").Statuses[0].LimitRemaining, "the refused call charged the tenant nothing: this is its first hit")
	// A request ends: one lease back (the one closest to its end).
	r = hit(true, "backend", "db")
	require.Equal(t, []string{"OK", "OK"}, codesOf(r))
	require.Equal(t, uint32(1), r.Statuses[0].LimitRemaining)
	require.Equal(t, 1, strings.Count(f.resp.Do("RL.LEASES", key), "[")-1, "one lease left")
	require.Equal(t, []string{"OK", "OK"}, codesOf(hit(false, "backend", "db")))
	// Two ends at once (hits_addend 2), then more ends than leases: nothing below empty.
	d := desc("backend", "db")
	d.IsNegativeHits, d.HitsAddend = true, wrapperspb.UInt64(5)
	r = f.should(t, "api", d)
	require.Equal(t, uint32(2), r.Statuses[0].LimitRemaining)
	require.Equal(t, "0", f.resp.Do("EXISTS", key))
	// A lease never given back ends with its term.
	require.Equal(t, []string{"OK", "OK"}, codesOf(hit(false, "backend", "db")))
	require.Equal(t, []string{"OK", "OK"}, codesOf(hit(false, "backend", "db")))
	require.Equal(t, "OVER_LIMIT", hit(false, "backend", "db").OverallCode.String())
	require.Equal(t, "+OK", f.resp.Do("DEBUG", "CLOCK", "ADVANCE", "60s"))
	require.Equal(t, uint32(1), hit(false, "backend", "db").Statuses[0].LimitRemaining)
}

// TestOverride: a descriptor's own limit replaces the configuration's.
func TestOverride(t *testing.T) {
	f := startFront(t)
	d := desc("user", "o")
	d.Limit = &rlv3.RateLimitDescriptor_RateLimitOverride{RequestsPerUnit: 1, Unit: typev3.RateLimitUnit_HOUR}
	r := f.should(t, "api", d)
	require.Equal(t, "OK", r.OverallCode.String())
	require.Equal(t, uint32(1), r.Statuses[0].CurrentLimit.RequestsPerUnit)
	require.Equal(t, pb.RateLimitResponse_RateLimit_HOUR, r.Statuses[0].CurrentLimit.Unit)
	require.Equal(t, "OVER_LIMIT", f.should(t, "api", d).OverallCode.String())
	// An override with a unit multiplier: 1 per 2 hours.
	d = desc("nowhere", "x")
	d.Limit = &rlv3.RateLimitDescriptor_RateLimitOverride{RequestsPerUnit: 1, Unit: typev3.RateLimitUnit_HOUR, UnitMultiplier: wrapperspb.UInt32(2)}
	r = f.should(t, "elsewhere", d)
	require.Equal(t, "OK", r.OverallCode.String())
	require.Equal(t, uint32(2), r.Statuses[0].CurrentLimit.UnitMultiplier.GetValue())
	// Two-hour windows are aligned to the epoch: the clock stands 800 s
	// into one.
	require.Equal(t, "6400000", f.resp.Do("PTTL", "rls:{elsewhere}:nowhere_x:fixed"))
}

// TestModes: unlimited, replaces, shadow and quota modes, and unknown
// descriptors and domains.
func TestModes(t *testing.T) {
	f := startFront(t)
	r := f.should(t, "api", desc("internal", "x"), desc("nope", "y"))
	require.Equal(t, []string{"OK", "OK", "OK"}, codesOf(r))
	require.Equal(t, uint32(1<<32-1), r.Statuses[0].LimitRemaining, "unlimited")
	require.Nil(t, r.Statuses[1].CurrentLimit, "no rule")
	r = f.should(t, "unknown-domain", desc("user", "x"))
	require.Equal(t, []string{"OK", "OK"}, codesOf(r))

	// Shadow mode: over its limit, still OK, and it never refuses.
	for range 3 {
		r = f.should(t, "api", desc("shadow", "s"))
		require.Equal(t, []string{"OK", "OK"}, codesOf(r))
	}
	require.Equal(t, uint32(0), r.Statuses[0].LimitRemaining)
	// Quota mode: over its limit, OK as well.
	for range 2 {
		r = f.should(t, "api", desc("quota", "q"))
		require.Equal(t, []string{"OK", "OK"}, codesOf(r))
	}

	// replaces: the vip route's rule drops the rule named checkout.
	r = f.should(t, "api", desc("route", "checkout"), desc("route", "checkout-vip"))
	require.Equal(t, []string{"OK", "OK", "OK"}, codesOf(r))
	require.Nil(t, r.Statuses[0].CurrentLimit, "replaced")
	require.Equal(t, uint32(1000), r.Statuses[1].CurrentLimit.RequestsPerUnit)
	require.Equal(t, "0", f.resp.Do("EXISTS", "rls:{api}:route_checkout:fixed"))
}

// TestGlobalShadowMode: every request answered OK; the statuses still say
// which limit would have refused, and a refused request charges nothing.
func TestGlobalShadowMode(t *testing.T) {
	f := startFront(t, func(o *server.Options) { o.Config.RLS.ShadowMode = true })
	for range 2 {
		f.should(t, "api", desc("user", "g"))
	}
	r := f.should(t, "api", desc("user", "g"))
	require.Equal(t, []string{"OK", "OVER_LIMIT"}, codesOf(r))
}

// TestRequestErrors: upstream's errors for an empty domain or descriptor
// list, and a bad override unit.
func TestRequestErrors(t *testing.T) {
	f := startFront(t)
	for _, tc := range []struct {
		req  *pb.RateLimitRequest
		code codes.Code
		msg  string
	}{
		{&pb.RateLimitRequest{Descriptors: []*rlv3.RateLimitDescriptor{desc("user", "x")}}, codes.Unknown, "rate limit domain must not be empty"},
		{&pb.RateLimitRequest{Domain: "api"}, codes.Unknown, "rate limit descriptor list must not be empty"},
	} {
		_, err := f.rls.ShouldRateLimit(context.Background(), tc.req)
		st, _ := status.FromError(err)
		require.Equal(t, tc.code, st.Code())
		require.Equal(t, tc.msg, st.Message())
	}
}

// TestResponseHeaders: with --rls-response-headers, the deciding limit's
// headers under upstream's default names: the one with least remaining,
// or the refusing one.
func TestResponseHeaders(t *testing.T) {
	f := startFront(t, func(o *server.Options) { o.Config.RLS.ResponseHeaders = true })
	hdr := func(r *pb.RateLimitResponse) map[string]string {
		m := map[string]string{}
		for _, h := range r.ResponseHeadersToAdd {
			m[h.Key] = h.Value
		}
		return m
	}
	r := f.should(t, "api", desc("tenant", "hh"), desc("user", "hh"))
	require.Equal(t, map[string]string{"RateLimit-Limit": "2", "RateLimit-Remaining": "1", "RateLimit-Reset": "40"}, hdr(r))
	f.should(t, "api", desc("user", "hh"))
	r = f.should(t, "api", desc("tenant", "hh"), desc("user", "hh"))
	require.Equal(t, "OVER_LIMIT", r.OverallCode.String())
	require.Equal(t, map[string]string{"RateLimit-Limit": "2", "RateLimit-Remaining": "0", "RateLimit-Reset": "40"}, hdr(r))
}

// sortedScan sorts the keys of a rendered SCAN reply (its order is the
// hash table's).
func sortedScan(r string) string {
	i := strings.Index(r, " [")
	if i < 0 || !strings.HasSuffix(r, "]]") {
		return r
	}
	keys := strings.Fields(r[i+2 : len(r)-2])
	slices.Sort(keys)
	return r[:i+2] + strings.Join(keys, " ") + "]]"
}

// TestQuotaModeMetadata: with --rls-response-dynamic-metadata, upstream's
// metadata: the domain, the descriptors, and the index of a descriptor
// over its limit in quota mode (answered OK). With --rls-quota-mode every
// rule is in quota mode: nothing is refused.
func TestQuotaModeMetadata(t *testing.T) {
	f := startFront(t, func(o *server.Options) { o.Config.RLS.DynamicMetadata = true })
	f.should(t, "api", desc("quota", "m"))
	r := f.ask(t, &pb.RateLimitRequest{Domain: "api", HitsAddend: 1, Descriptors: []*rlv3.RateLimitDescriptor{desc("user", "m"), desc("quota", "m")}})
	require.Equal(t, []string{"OK", "OK", "OK"}, codesOf(r))
	md := r.DynamicMetadata.AsMap()
	require.Equal(t, "api", md["domain"])
	require.Equal(t, float64(1), md["hitsAddend"])
	require.Equal(t, []any{float64(1)}, md["quotaModeViolations"])
	require.Equal(t, true, md["quotaModeEnabled"])
	require.Equal(t, []any{map[string]any{"entries": []any{"user=m"}}, map[string]any{"entries": []any{"quota=m"}}}, md["descriptors"])

	g := startFront(t, func(o *server.Options) { o.Config.RLS.QuotaMode = true })
	for range 4 {
		require.Equal(t, []string{"OK", "OK"}, codesOf(g.should(t, "api", desc("user", "q"))), "global quota mode refuses nothing")
	}
}

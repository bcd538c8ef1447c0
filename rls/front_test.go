package rls_test

import (
	"context"
	"io"
	"log/slog"
	"net"
	"net/http"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	rlv3 "github.com/envoyproxy/go-control-plane/envoy/extensions/common/ratelimit/v3"
	pb "github.com/envoyproxy/go-control-plane/envoy/service/ratelimit/v3"
	"github.com/rlserver/rlserver/internal/rltest"
	"github.com/rlserver/rlserver/node"
	"github.com/rlserver/rlserver/server"
	"github.com/stretchr/testify/require"
	"google.golang.org/grpc/health/grpc_health_v1"
)

// health asks the gRPC health service about the rate limit service.
func (f *front) health(t *testing.T) string {
	t.Helper()
	r, err := grpc_health_v1.NewHealthClient(f.cc).Check(context.Background(), &grpc_health_v1.HealthCheckRequest{Service: "envoy.service.ratelimit.v3.RateLimitService"})
	require.NoError(t, err)
	return r.Status.String()
}

// TestReplicaNotServing: a replica reports NOT_SERVING (Envoy sends to
// the primary) and refuses a request rather than deciding on a copy;
// promoted, it serves, with the counts the primary had when WAIT counted
// it.
//
// A finding: with WAIT sent on a connection that had written nothing, the
// test failed 3 runs in 20 under -race, the promoted replica answering OK.
// WAIT had not waited: it waits for its own connection's writes only.
func TestReplicaNotServing(t *testing.T) {
	p := startFront(t)
	r := startFront(t)
	require.Equal(t, "SERVING", p.health(t))
	require.Equal(t, "SERVING", r.health(t))
	require.Equal(t, "+OK", r.resp.Do("REPLICAOF", "127.0.0.1", strconv.Itoa(p.s.Addr.(*net.TCPAddr).Port)))
	rltest.WaitLinkUp(t, r.resp)
	rltest.WaitFor(t, 10*time.Second, "the replica's health", func() (bool, string) {
		h := r.health(t)
		return h == "NOT_SERVING", h
	})
	for range 2 {
		require.Equal(t, "OK", p.should(t, "api", desc("user", "f")).OverallCode.String())
	}
	// WAIT waits for the offset of its own connection's last write, as
	// Redis's does (a connection that wrote nothing waits for nothing):
	// a write here, after the service's, makes it wait for those too.
	require.Equal(t, "[0 1 0 -1 60000]", p.resp.Do("RL.LOG", "sync", "1", "60"))
	require.Equal(t, "1", p.resp.Do("WAIT", "1", "0"))
	_, err := r.rls.ShouldRateLimit(context.Background(), &pb.RateLimitRequest{Domain: "api", Descriptors: []*rlv3.RateLimitDescriptor{desc("user", "f")}})
	require.ErrorContains(t, err, "READONLY")

	require.Equal(t, "+OK", r.resp.Do("REPLICAOF", "NO", "ONE"))
	rltest.WaitFor(t, 10*time.Second, "the promoted replica's health", func() (bool, string) {
		h := r.health(t)
		return h == "SERVING", h
	})
	require.Equal(t, []string{"OVER_LIMIT", "OVER_LIMIT"}, codesOf(r.should(t, "api", desc("user", "f"))), "the counts came across")
}

// TestReload: a changed file is loaded while serving; a bad one keeps the
// running configuration and is reported in INFO rls and the metrics.
func TestReload(t *testing.T) {
	dir := t.TempDir()
	write := func(content string) {
		// Written aside and renamed: the watcher never reads half a file.
		tmp := filepath.Join(dir, ".tmp")
		require.NoError(t, os.WriteFile(tmp, []byte(content), 0o644))
		require.NoError(t, os.Rename(tmp, filepath.Join(dir, "limits.yaml")))
	}
	write("domain: d\ndescriptors:\n  - key: k\n    rate_limit:\n      unit: minute\n      requests_per_unit: 1\n")
	var logged rltest.SyncBuffer
	f := startFront(t, func(o *server.Options) {
		o.Config.RLS.Config = dir
		o.Config.MetricsAddr = "127.0.0.1:0"
		o.Logger = slog.New(slog.NewTextHandler(&logged, nil))
	})
	require.Equal(t, uint32(1), f.should(t, "d", desc("k", "a")).Statuses[0].CurrentLimit.RequestsPerUnit)

	write("domain: d\ndescriptors:\n  - key: k\n    rate_limit:\n      unit: minute\n      requests_per_unit: 7\n")
	rltest.WaitFor(t, 30*time.Second, "the new limit", func() (bool, string) {
		l := f.should(t, "d", desc("k", "b")).Statuses[0].CurrentLimit.GetRequestsPerUnit()
		return l == 7, strconv.Itoa(int(l))
	})

	write("domain: d\ndescriptors:\n  - key: k\n    rate_limit:\n      unit: fortnight\n      requests_per_unit: 9\n")
	rltest.WaitFor(t, 30*time.Second, "the reload's error in INFO", func() (bool, string) {
		info := rltest.Info(t, f.resp, "rls")
		return info["rls_config_errors"] == "1", info["rls_config_errors"]
	})
	info := rltest.Info(t, f.resp, "rls")
	require.Equal(t, filepath.Join(dir, "limits.yaml")+": invalid rate limit unit 'fortnight'", info["rls_config_last_error"])
	require.Equal(t, uint32(7), f.should(t, "d", desc("k", "c")).Statuses[0].CurrentLimit.RequestsPerUnit, "the running configuration stays")
	require.Contains(t, scrape(t, f.s), "ratelimit_service_config_load_error 1\n")
	require.Contains(t, logged.String(), "Envoy rate limit configuration not reloaded; the running one stays")
	require.Contains(t, logged.String(), "invalid rate limit unit 'fortnight'")

	// SIGHUP's path (Reload) with the file fixed.
	write("domain: d\ndescriptors:\n  - key: k\n    rate_limit:\n      unit: minute\n      requests_per_unit: 9\n")
	require.NoError(t, f.s.RLS.Reload())
	require.Equal(t, uint32(9), f.should(t, "d", desc("k", "e")).Statuses[0].CurrentLimit.RequestsPerUnit)
	require.Equal(t, "", rltest.Info(t, f.resp, "rls")["rls_config_last_error"])
}

// scrape reads the server's /metrics.
func scrape(t *testing.T, s *server.Server) string {
	t.Helper()
	resp, err := http.Get("http://" + s.Metrics.Addr.String() + "/metrics")
	require.NoError(t, err)
	defer resp.Body.Close()
	b, err := io.ReadAll(resp.Body)
	require.NoError(t, err)
	return string(b)
}

// TestBadFileRefusesStart: a bad file at start refuses the start, naming
// the file and the cause (upstream would serve with no configuration).
func TestBadFileRefusesStart(t *testing.T) {
	dir := t.TempDir()
	require.NoError(t, os.WriteFile(filepath.Join(dir, "x.yaml"), []byte("domain: d\nbogus: 1\n"), 0o644))
	_, err := server.Start(server.Options{Config: node.Config{Bind: "127.0.0.1", Dir: t.TempDir(), Shards: 8, MaxClients: 10,
		Limits: node.DefaultLimits, RLS: node.RLSConfig{Addr: "127.0.0.1:0", Config: dir}}})
	require.EqualError(t, err, "--rls-config: "+filepath.Join(dir, "x.yaml")+": config error, unknown key 'bogus'")
}

// TestMetrics: per rule, in upstream's names and labels.
func TestMetrics(t *testing.T) {
	f := startFront(t, func(o *server.Options) { o.Config.MetricsAddr = "127.0.0.1:0" })
	for range 3 {
		f.should(t, "api", desc("user", "m"), desc("tenant", "m"))
	}
	f.should(t, "api", desc("shadow", "m"))
	f.should(t, "api", desc("shadow", "m"))
	f.should(t, "nodomain", desc("x", "y"))
	m := scrape(t, f.s)
	for _, want := range []string{
		`ratelimit_service_rate_limit_total_hits{domain="api",key1="user",key2=""} 3`,
		`ratelimit_service_rate_limit_within_limit{domain="api",key1="user",key2=""} 2`,
		`ratelimit_service_rate_limit_over_limit{domain="api",key1="user",key2=""} 1`,
		`ratelimit_service_rate_limit_near_limit{domain="api",key1="user",key2=""} 1`,
		// The tenant was checked by the refused request, not charged.
		`ratelimit_service_rate_limit_total_hits{domain="api",key1="tenant",key2=""} 3`,
		`ratelimit_service_rate_limit_within_limit{domain="api",key1="tenant",key2=""} 3`,
		`ratelimit_service_rate_limit_shadow_mode{domain="api",key1="shadow",key2=""} 1`,
		`ratelimit_service_domain_not_found{domain="nodomain"} 1`,
		`ratelimit_service_config_load_success 0`,
	} {
		require.Contains(t, m, want+"\n")
	}
}

// TestManyAtOnce: 1,000 concurrent requests of two descriptors, a user's
// limit (2 a minute, 100 users) and their organisation's (150): exactly
// 150 admitted, and the organisation charged for exactly those; with
// upstream's counting it would have been charged 1,000.
func TestManyAtOnce(t *testing.T) {
	f := startFront(t)
	var admitted atomic.Int64
	var wg sync.WaitGroup
	errs := make(chan error, 1000)
	for i := range 1000 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
			defer cancel()
			r, err := f.rls.ShouldRateLimit(ctx, &pb.RateLimitRequest{Domain: "api", Descriptors: []*rlv3.RateLimitDescriptor{desc("user", "c"+strconv.Itoa(i%100)), desc("org", "o")}})
			if err != nil {
				errs <- err
				return
			}
			if r.OverallCode == pb.RateLimitResponse_OK {
				admitted.Add(1)
			}
		}()
	}
	wg.Wait()
	close(errs)
	for err := range errs {
		require.NoError(t, err)
	}
	require.Equal(t, int64(150), admitted.Load())
	// The organisation's counter, read without charging it.
	require.Equal(t, "[0 150 0 -1 40000]", f.resp.Do("RL.FIXED", "rls:{api}:org_o:fixed", "150", "60", "COST", "0"))
	charged := 0
	for u := range 100 {
		v := f.resp.Do("RL.FIXED", "rls:{api}:user_c"+strconv.Itoa(u)+":fixed", "2", "60", "COST", "0")
		rem, err := strconv.Atoi(strings.Fields(strings.Trim(v, "[]"))[2])
		require.NoError(t, err, v)
		charged += 2 - rem
	}
	require.Equal(t, 150, charged, "the users charged for the admitted requests only")
}

// stream replays the request times (ms from an origin on a minute
// boundary) against one descriptor on the manual clock and returns the
// admitted times.
func (f *front) stream(t *testing.T, d string, times []int64) []int64 {
	t.Helper()
	const origin = rltest.StartNs/1e6 + 40_000 // the next minute boundary after StartNs
	var got []int64
	for _, at := range times {
		require.Equal(t, "+OK", f.resp.Do("DEBUG", "CLOCK", "SET", strconv.FormatInt(origin+at, 10)))
		if f.should(t, "api", desc(d, "s")).OverallCode == pb.RateLimitResponse_OK {
			got = append(got, at)
		}
	}
	return got
}

// peak is the most admissions in any half-open window of w ms.
func peak(times []int64, w int64) int {
	best := 0
	for i := range times {
		n := 0
		for j := i; j < len(times) && times[j] < times[i]+w; j++ {
			n++
		}
		best = max(best, n)
	}
	return best
}

// TestWorstCases: docs/algorithms.md's streams A (boundary burst) and D
// (back-loaded), scaled from 1 s to 1 minute, through the rate limit
// service: the published admitted / peak figures come out. `log` never
// admits more than its limit in any rolling window; `slide` stays within
// its published worst case (19 for 10).
func TestWorstCases(t *testing.T) {
	var a, d []int64
	for i := range 10 {
		a = append(a, int64(900+10*i)*60)
	}
	for i := range 10 {
		a = append(a, int64(1000+10*i)*60)
	}
	for ms := int64(900); ms <= 2898; ms += 2 {
		d = append(d, ms*60)
	}
	for _, tc := range []struct {
		desc          string
		stream        []int64
		admitted, top int
	}{
		{"log", a, 10, 10},
		{"log", d, 20, 10},
		{"slide", a, 11, 11},
		{"slide", d, 29, 19},
	} {
		f := startFront(t)
		got := f.stream(t, tc.desc, tc.stream)
		require.Len(t, got, tc.admitted, "%s over %d requests", tc.desc, len(tc.stream))
		require.Equal(t, tc.top, peak(got, 60_000), tc.desc)
	}
}

// TestInternalClients: the service's calls run on internal clients named
// rls, listed by CLIENT LIST and counted as RL.ALL; CLIENT KILL TYPE
// normal (Sentinel sends it at every failover) passes them by.
func TestInternalClients(t *testing.T) {
	f := startFront(t)
	f.should(t, "api", desc("user", "k"))
	require.Contains(t, f.resp.Do("CLIENT", "LIST"), "name=rls ")
	require.Contains(t, rltest.InfoText(t, f.resp, "commandstats"), "cmdstat_rl.all:calls=1,")
	other := rltest.Dial(t, f.s.Addr.String())
	require.Equal(t, "1", other.Do("CLIENT", "KILL", "TYPE", "normal", "SKIPME", "yes"), "the test's own connection, not the service's")
	require.Contains(t, other.Do("CLIENT", "LIST"), "name=rls ")
	require.Equal(t, "OK", f.should(t, "api", desc("user", "k")).OverallCode.String())
}

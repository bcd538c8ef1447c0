package httplimit_test

import (
	"context"
	"io"
	"log/slog"
	"net"
	"net/http"
	"net/http/httptest"
	"net/netip"
	"strings"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"
	"github.com/rlserver/rlserver/client"
	"github.com/rlserver/rlserver/httplimit"
	"github.com/rlserver/rlserver/internal/rltest"
	"github.com/rlserver/rlserver/internal/testserver"
	"github.com/rlserver/rlserver/server"
	"github.com/stretchr/testify/require"
)

func portOf(addr string) int {
	ap := netip.MustParseAddrPort(addr)
	return int(ap.Port())
}

// only is a middleware whose every decision is the limiter's own: a slow
// answer (a loaded machine under -race) is waited for, and an error is a
// 503 rather than a decision by the in-process fallback on the real clock,
// which would make a test's figures depend on the time of day.
func only(l httplimit.Allower) *httplimit.Middleware {
	return httplimit.New(httplimit.Options{Limiter: l, Timeout: time.Minute, FailClosed: true})
}

var ok = http.HandlerFunc(func(w http.ResponseWriter, _ *http.Request) { io.WriteString(w, "hello\n") })

func get(t *testing.T, h http.Handler, key string, hdr ...string) *httptest.ResponseRecorder {
	t.Helper()
	r := httptest.NewRequest("GET", "/hello", nil)
	if key != "" {
		r.Header.Set("X-API-Key", key)
	}
	for i := 0; i+1 < len(hdr); i += 2 {
		r.Header.Set(hdr[i], hdr[i+1])
	}
	w := httptest.NewRecorder()
	h.ServeHTTP(w, r)
	return w
}

// TestHeadersAnd429: five requests a minute per key (RL.SLIDE on a real
// rlserver, manual clock): the headers on every response, 429 with
// Retry-After and a body (JSON when asked) for the sixth, another key
// untouched, and per-route policies apart.
func TestHeadersAnd429(t *testing.T) {
	s := testserver.Start(t)
	rdb := redis.NewClient(&redis.Options{Addr: s.Addr.String()})
	t.Cleanup(func() { rdb.Close() })
	mw := only(client.New(rdb))
	rule := httplimit.Rule{Name: "default", Policy: client.Policy{Algorithm: client.Log, Limit: 5, Period: time.Minute}}
	h := mw.Limit(rule, ok)
	for i := range 5 {
		w := get(t, h, "alice")
		require.Equal(t, 200, w.Code, "request %d", i+1)
		require.Equal(t, "5", w.Header().Get("X-RateLimit-Limit"))
		require.Equal(t, itoa(4-i), w.Header().Get("X-RateLimit-Remaining"))
		require.Equal(t, "60", w.Header().Get("X-RateLimit-Reset"))
		require.Equal(t, `"default";q=5;w=60`, w.Header().Get("RateLimit-Policy"))
		require.Equal(t, `"default";r=`+itoa(4-i)+`;t=60`, w.Header().Get("RateLimit"))
	}
	w := get(t, h, "alice")
	require.Equal(t, 429, w.Code)
	require.Equal(t, "60", w.Header().Get("Retry-After"))
	require.Equal(t, "0", w.Header().Get("X-RateLimit-Remaining"))
	require.Equal(t, "rate limited: retry after 60 s\n", w.Body.String())
	w = get(t, h, "alice", "Accept", "application/json")
	require.Equal(t, 429, w.Code)
	require.Equal(t, `{"error":"rate limited","retry_after":60}`+"\n", w.Body.String())
	require.Equal(t, 200, get(t, h, "bob").Code, "another key is unaffected")

	// Time passes on rlserver's clock: the window slides.
	require.Equal(t, "+OK", rltest.Dial(t, s.Addr.String()).Do("DEBUG", "CLOCK", "ADVANCE", "60000"))
	require.Equal(t, 200, get(t, h, "alice").Code)

	// Another route with its own rule: its own allowance, its own name.
	strict := mw.Limit(httplimit.Rule{Name: "strict", Policy: client.Policy{Algorithm: client.GCRA, Limit: 1, Rate: 1, Period: 10 * time.Second}}, ok)
	w = get(t, strict, "alice")
	require.Equal(t, 200, w.Code)
	require.Equal(t, `"strict";q=1;w=10`, w.Header().Get("RateLimit-Policy"))
	w = get(t, strict, "alice")
	require.Equal(t, 429, w.Code)
	require.Equal(t, "10", w.Header().Get("Retry-After"))
	require.Equal(t, 200, get(t, h, "alice").Code, "the default route's allowance is its own")
}

func itoa(i int) string { return string(rune('0' + i)) }

// TestKeys: the API key first; else the peer's address; a trusted
// proxy's X-Forwarded-For or Forwarded gives the nearest untrusted hop;
// an untrusted peer's headers are ignored.
func TestKeys(t *testing.T) {
	trusted := []netip.Prefix{netip.MustParsePrefix("127.0.0.0/8"), netip.MustParsePrefix("::1/128")}
	key := httplimit.KeyByHeaderOrIP("X-API-Key", trusted)
	req := func(remote string, hdr ...string) *http.Request {
		r := httptest.NewRequest("GET", "/", nil)
		r.RemoteAddr = remote
		for i := 0; i+1 < len(hdr); i += 2 {
			r.Header.Add(hdr[i], hdr[i+1])
		}
		return r
	}
	for _, c := range []struct {
		r    *http.Request
		want string
	}{
		{req("192.0.2.7:1234", "X-API-Key", "k1"), "key:k1"},
		{req("192.0.2.7:1234"), "ip:192.0.2.7"},
		{req("192.0.2.7:1234", "X-Forwarded-For", "198.51.100.1"), "ip:192.0.2.7"}, // untrusted peer: ignored
		{req("127.0.0.1:1234", "X-Forwarded-For", "198.51.100.1, 127.0.0.2"), "ip:198.51.100.1"},
		{req("127.0.0.1:1234", "X-Forwarded-For", "203.0.113.9, 198.51.100.1"), "ip:198.51.100.1"}, // nearest untrusted
		{req("[::1]:1234", "Forwarded", `for="[2001:db8::1]:4711";proto=https, for=127.0.0.3`), "ip:2001:db8::1"},
		{req("127.0.0.1:1234", "Forwarded", "for=unknown"), "ip:127.0.0.1"},
		{req("127.0.0.1:1234"), "ip:127.0.0.1"},
	} {
		require.Equal(t, c.want, key(c.r), "%s %v", c.r.RemoteAddr, c.r.Header)
	}
}

// TestServerDownAndBack: with rlserver stopped the middleware fails open
// onto its in-process limiter with the same policy (the sixth request is
// still refused), counting and logging it; failing closed answers 503;
// with rlserver back, decisions go there again.
func TestServerDownAndBack(t *testing.T) {
	s := testserver.Start(t)
	addr := s.Addr.String()
	rdb := redis.NewClient(&redis.Options{Addr: addr, MaxRetries: -1, DialTimeout: 5 * time.Second})
	t.Cleanup(func() { rdb.Close() })
	var logged rltest.SyncBuffer
	// A stopped server refuses connections at once: the long timeout only
	// keeps a slow answer on a loaded machine from counting as an outage.
	// The fallback reads a fixed clock: on the real one, a minute boundary
	// between two requests would let a sixth through the sliding window.
	open := httplimit.New(httplimit.Options{Limiter: client.New(rdb), Timeout: time.Minute,
		Fallback: client.NewLocalAt(func() int64 { return rltest.StartNs }), Logger: slog.New(slog.NewTextHandler(&logged, nil))})
	closed := httplimit.New(httplimit.Options{Limiter: client.New(rdb), Timeout: time.Minute, FailClosed: true})
	rule := httplimit.Rule{Name: "default", Policy: client.Policy{Algorithm: client.Slide, Limit: 5, Period: time.Minute}}
	h, hc := open.Limit(rule, ok), closed.Limit(rule, ok)
	require.Equal(t, 200, get(t, h, "carol").Code)
	require.Zero(t, open.Fallbacks.Load())

	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	require.NoError(t, s.Close(ctx))
	for i := range 5 {
		require.Equal(t, 200, get(t, h, "dave").Code, "request %d decided in process", i+1)
	}
	w := get(t, h, "dave")
	require.Equal(t, 429, w.Code, "the sixth is refused in process too")
	require.Equal(t, int64(6), open.Fallbacks.Load())
	require.Equal(t, 1, strings.Count(logged.String(), "rlserver cannot be reached"), "one log line at the change, not one per request:\n%s", logged.String())
	require.Equal(t, 503, get(t, hc, "dave").Code, "failing closed")

	// rlserver back on the same address: decisions go there again.
	back := testserver.Start(t, func(o *server.Options) { o.Config.Port = portOf(addr) })
	_ = back
	rltest.WaitFor(t, 10*time.Second, "decisions back on rlserver", func() (bool, string) {
		before := open.Fallbacks.Load()
		code := get(t, h, "erin").Code
		return code == 200 && open.Fallbacks.Load() == before, strings.TrimSpace(http.StatusText(code))
	})
	require.Equal(t, "1", rltest.Dial(t, addr).Do("EXISTS", "http:default:key:erin"))
	require.Contains(t, logged.String(), "rlserver answers again")
}

// TestHungServerTimesOut: an rlserver that accepts and never answers (a
// hung process) costs a request the timeout, then the request is decided
// in process.
func TestHungServerTimesOut(t *testing.T) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	require.NoError(t, err)
	t.Cleanup(func() { ln.Close() })
	go func() {
		for {
			c, err := ln.Accept()
			if err != nil {
				return
			}
			t.Cleanup(func() { c.Close() }) // held open, never answered
		}
	}()
	rdb := redis.NewClient(&redis.Options{Addr: ln.Addr().String(), MaxRetries: -1})
	t.Cleanup(func() { rdb.Close() })
	mw := httplimit.New(httplimit.Options{Limiter: client.New(rdb), Timeout: 30 * time.Millisecond,
		Fallback: client.NewLocalAt(func() int64 { return rltest.StartNs })}) // a fixed window never turns under it
	h := mw.Limit(httplimit.Rule{Name: "default", Policy: client.Policy{Algorithm: client.Fixed, Limit: 2, Period: time.Minute}}, ok)
	start := time.Now()
	require.Equal(t, 200, get(t, h, "frank").Code)
	require.Equal(t, 200, get(t, h, "frank").Code)
	require.Equal(t, 429, get(t, h, "frank").Code, "limited in process")
	require.Equal(t, int64(3), mw.Fallbacks.Load())
	// The timeout is kept whatever the client does with the context
	// (go-redis would wait its 3 s ReadTimeout per request): a bound on
	// behaviour, 20 times the three timeouts, not a speed measure.
	require.Less(t, time.Since(start), 2*time.Second)
}

// TestSeveralLimits: a rule per caller (3 a minute) with a tenant's limit
// (5 a minute, the X-Tenant header) and a global one (100 a minute),
// decided as one, on rlserver and on the in-process fallback alike. A
// caller over its own limit is refused and charges the tenant nothing; a
// second caller of the tenant then gets the tenant's two left; the
// headers are the deciding limit's, and RateLimit-Policy lists all three.
func TestSeveralLimits(t *testing.T) {
	rule := httplimit.Rule{Name: "caller", Policy: client.Policy{Algorithm: client.Fixed, Limit: 3, Period: time.Minute},
		Also: []httplimit.Scope{
			{Name: "tenant", Policy: client.Policy{Algorithm: client.Log, Limit: 5, Period: time.Minute},
				Key: func(r *http.Request) string { return r.Header.Get("X-Tenant") }},
			{Name: "global", Policy: client.Policy{Algorithm: client.Slide, Limit: 100, Period: time.Minute},
				Key: func(*http.Request) string { return "all" }},
		}}
	s := testserver.Start(t)
	rdb := redis.NewClient(&redis.Options{Addr: s.Addr.String()})
	t.Cleanup(func() { rdb.Close() })
	for _, tc := range []struct {
		name    string
		limiter httplimit.Allower
	}{
		{"rlserver", client.New(rdb)},
		{"in process", client.NewLocalAt(func() int64 { return rltest.StartNs })},
	} {
		t.Run(tc.name, func(t *testing.T) {
			tenant := "acme-" + strings.ReplaceAll(tc.name, " ", "-")
			h := only(tc.limiter).Limit(rule, ok)
			policy := `"caller";q=3;w=60, "tenant";q=5;w=60, "global";q=100;w=60`
			for i := range 3 {
				w := get(t, h, "alice-"+tenant, "X-Tenant", tenant)
				require.Equal(t, 200, w.Code, "alice's request %d", i+1)
				require.Equal(t, policy, w.Header().Get("RateLimit-Policy"))
				// reset: the longest of the three (the global sliding window's).
				require.Equal(t, `"caller";r=`+itoa(2-i)+`;t=100`, w.Header().Get("RateLimit"), "alice's own limit has the fewest left")
			}
			w := get(t, h, "alice-"+tenant, "X-Tenant", tenant)
			require.Equal(t, 429, w.Code, "alice over her own limit")
			require.Equal(t, `"caller";r=0;t=100`, w.Header().Get("RateLimit"))
			require.Equal(t, "40", w.Header().Get("Retry-After"))
			// The refused request charged the tenant nothing: bob gets two.
			for i := range 2 {
				w = get(t, h, "bob-"+tenant, "X-Tenant", tenant)
				require.Equal(t, 200, w.Code, "bob's request %d", i+1)
			}
			w = get(t, h, "bob-"+tenant, "X-Tenant", tenant)
			require.Equal(t, 429, w.Code, "the tenant's limit")
			require.Equal(t, "5", w.Header().Get("X-RateLimit-Limit"), "the tenant's limit decided")
			require.Equal(t, `"tenant";r=0;t=100`, w.Header().Get("RateLimit"))
			require.Equal(t, "60", w.Header().Get("Retry-After"), "the tenant's log frees a unit in 60 s")
			require.Equal(t, 200, get(t, h, "carol-"+tenant, "X-Tenant", "other-"+tenant).Code, "another tenant")
		})
	}
}

// TestInFlight: at most two requests in flight per caller (leases on a
// real rlserver, manual clock). Two handlers held open pass, a third
// waits for 429 with the wait until the first lease's term ends; a held
// request's lease is renewed past its term; each lease is released when
// its handler returns, and another caller is apart.
func TestInFlight(t *testing.T) {
	s := testserver.Start(t)
	rdb := redis.NewClient(&redis.Options{Addr: s.Addr.String()})
	t.Cleanup(func() { rdb.Close() })
	c := rltest.Dial(t, s.Addr.String())
	mw := only(client.New(rdb))
	gate := make(chan struct{})
	entered := make(chan struct{}, 4)
	slow := http.HandlerFunc(func(w http.ResponseWriter, _ *http.Request) {
		entered <- struct{}{}
		<-gate
		io.WriteString(w, "done\n")
	})
	h := mw.Limit(httplimit.InFlight("inflight", 2, 30*time.Millisecond), slow)
	done := make(chan *httptest.ResponseRecorder, 2)
	for range 2 {
		go func() { done <- get(t, h, "alice") }()
		<-entered
	}
	w := get(t, h, "alice")
	require.Equal(t, 429, w.Code, "a third request in flight")
	require.Equal(t, "1", w.Header().Get("Retry-After"))
	require.Equal(t, "0", w.Header().Get("X-RateLimit-Remaining"))
	require.Equal(t, `"inflight";q=2;w=1`, w.Header().Get("RateLimit-Policy"))
	// The term passes three times over while the handlers run: renewed,
	// the leases live on.
	for range 9 {
		require.Equal(t, "+OK", c.Do("DEBUG", "CLOCK", "ADVANCE", "10ms"))
		before := rltest.Info(t, c, "rlserver")["leases"]
		rltest.Eventually(t, 10*time.Second, "both leases renewed", func() bool {
			return renewedSince(t, before, rltest.Info(t, c, "rlserver")["leases"]) >= 2
		})
	}
	require.Equal(t, 2, strings.Count(c.Do("RL.LEASES", "http:inflight:key:alice"), "[")-1, "two leases, past their term three times over")
	// Bob is apart.
	go func() { done <- get(t, h, "bob") }()
	<-entered
	close(gate)
	for range 3 {
		require.Equal(t, 200, (<-done).Code)
	}
	require.Equal(t, "0", c.Do("EXISTS", "http:inflight:key:alice"), "released when the handlers returned")
	require.Equal(t, "0", c.Do("EXISTS", "http:inflight:key:bob"))
	require.Equal(t, "acquired=3,released=3", strings.Join(strings.Split(rltest.Info(t, c, "rlserver")["leases"], ",")[:2], ","))
	require.Equal(t, 200, get(t, mw.Limit(httplimit.InFlight("inflight", 2, 30*time.Millisecond), ok), "alice").Code)
}

// renewedSince is how many renewals INFO's leases line counts from
// before to now.
func renewedSince(t *testing.T, before, now string) int {
	count := func(s string) int {
		for _, f := range strings.Split(s, ",") {
			if v, ok := strings.CutPrefix(f, "renewed="); ok {
				n := 0
				for _, c := range v {
					n = n*10 + int(c-'0')
				}
				return n
			}
		}
		t.Fatalf("no renewed count in %q", s)
		return 0
	}
	return count(now) - count(before)
}

// TestDelay: nginx's limit_req rate=1r/s burst=4 as a Rule with a Delay
// (a bucket of one token a second, requests queued up to 4 s): of six
// requests at once, one is served now, four after waiting 1, 2, 3 and 4 s,
// the sixth refused with Retry-After 1. A request that goes away while it
// waits gives its turn back. On rlserver (manual clock) and on the
// in-process fallback.
func TestDelay(t *testing.T) {
	s := testserver.Start(t)
	rdb := redis.NewClient(&redis.Options{Addr: s.Addr.String()})
	t.Cleanup(func() { rdb.Close() })
	for _, lim := range []httplimit.Allower{client.New(rdb), client.NewLocalAt(func() int64 { return rltest.StartNs })} {
		var slept []time.Duration
		gone := false
		mw := httplimit.New(httplimit.Options{Limiter: lim, Timeout: time.Minute, FailClosed: true,
			Sleep: func(ctx context.Context, d time.Duration) error {
				slept = append(slept, d)
				if gone {
					return context.Canceled
				}
				return nil
			}})
		rule := httplimit.Rule{Name: "nginx", Delay: 4 * time.Second,
			Policy: client.Policy{Algorithm: client.Bucket, Limit: 1, Rate: 1, Period: time.Second}}
		h := mw.Limit(rule, ok)
		for i := range 5 {
			require.Equal(t, 200, get(t, h, "alice").Code, "request %d", i+1)
		}
		require.Equal(t, []time.Duration{time.Second, 2 * time.Second, 3 * time.Second, 4 * time.Second}, slept)
		w := get(t, h, "alice")
		require.Equal(t, 429, w.Code)
		require.Equal(t, "1", w.Header().Get("Retry-After"))

		// Bob's fourth request goes away while it waits (3 s): its turn
		// comes back, so his next waits 3 s, not 4.
		slept = nil
		for range 3 {
			require.Equal(t, 200, get(t, h, "bob").Code)
		}
		gone = true
		get(t, h, "bob")
		gone = false
		require.Equal(t, 200, get(t, h, "bob").Code)
		require.Equal(t, []time.Duration{time.Second, 2 * time.Second, 3 * time.Second, 3*time.Second + time.Millisecond}, slept,
			"the turn given back; the next after the last ticket issued (3 s + 1 ns, rounded up)")
	}
	require.Panics(t, func() {
		httplimit.New(httplimit.Options{}).Limit(httplimit.Rule{Name: "x", Delay: time.Second,
			Policy: client.Policy{Algorithm: client.Slide, Limit: 1, Period: time.Second}}, ok)
	})
}

// Package httplimit is net/http middleware that rate-limits an API with
// rlserver (package client): a key per caller, a policy per route, the
// rate-limit headers HTTP clients understand on every response, 429 with
// Retry-After past the limit. When rlserver cannot be reached it fails
// open by default onto an in-process limiter with the same policies
// (client.Local), so the API stays protected, and goes back to rlserver
// as soon as it answers.
//
//	mw := httplimit.New(httplimit.Options{Limiter: client.New(rdb)})
//	http.Handle("/hello", mw.Limit(httplimit.Rule{Name: "default",
//		Policy: client.Policy{Algorithm: client.Slide, Limit: 5, Period: time.Minute}}, hello))
package httplimit

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"math"
	"net"
	"net/http"
	"net/netip"
	"strconv"
	"strings"
	"sync/atomic"
	"time"

	"github.com/rlserver/rlserver/client"
)

// Allower is what decides: client.Limiter (rlserver) or client.Local.
type Allower interface {
	Allow(ctx context.Context, key string, p client.Policy, cost int64) (client.Result, error)
}

// Rule is a route's limit: a name (RateLimit-Policy's) and a policy.
type Rule struct {
	Name   string
	Policy client.Policy
}

// Options configure a Middleware.
type Options struct {
	// Limiter decides: rlserver's client.Limiter.
	Limiter Allower
	// Key names the caller; default KeyByHeaderOrIP("X-API-Key", nil).
	Key func(*http.Request) string
	// Timeout bounds each call to rlserver; default 50 ms.
	Timeout time.Duration
	// FailClosed refuses requests (503) while rlserver cannot be reached,
	// instead of deciding them in process.
	FailClosed bool
	// Fallback decides while rlserver cannot be reached (fail open);
	// default a client.Local of its own.
	Fallback Allower
	Logger   *slog.Logger
}

// Middleware limits the routes it wraps. Safe for concurrent use.
type Middleware struct {
	o Options
	// Fallbacks counts the requests decided in process because rlserver
	// could not be reached; down is whether it is unreachable now.
	Fallbacks atomic.Int64
	down      atomic.Bool
}

// New returns a Middleware.
func New(o Options) *Middleware {
	if o.Key == nil {
		o.Key = KeyByHeaderOrIP("X-API-Key", nil)
	}
	if o.Timeout <= 0 {
		o.Timeout = 50 * time.Millisecond
	}
	if o.Fallback == nil {
		o.Fallback = client.NewLocal()
	}
	if o.Logger == nil {
		o.Logger = slog.New(slog.DiscardHandler)
	}
	return &Middleware{o: o}
}

// Limit wraps next with rule: each request spends one unit of its
// caller's allowance under the rule's name.
func (m *Middleware) Limit(rule Rule, next http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		key := "http:" + rule.Name + ":" + m.o.Key(r)
		res, err := m.allow(r.Context(), key, rule.Policy)
		if err != nil {
			http.Error(w, "rate limiter unavailable", http.StatusServiceUnavailable)
			return
		}
		setHeaders(w.Header(), rule, res)
		if !res.Allowed {
			refuse(w, r, res)
			return
		}
		next.ServeHTTP(w, r)
	})
}

// allow asks rlserver, within the timeout; if it cannot be reached, the
// fallback (or nothing, failing closed).
func (m *Middleware) allow(ctx context.Context, key string, p client.Policy) (client.Result, error) {
	res, err := m.ask(ctx, key, p)
	if err == nil {
		if m.down.CompareAndSwap(true, false) {
			m.o.Logger.Info("rlserver answers again: deciding there")
		}
		return res, nil
	}
	if errors.Is(err, client.ErrPolicy) || isServerError(err) {
		return res, err // rlserver answered: a wrong policy, not an outage
	}
	if m.down.CompareAndSwap(false, true) {
		m.o.Logger.Warn("rlserver cannot be reached: deciding in process", "err", err, "fail_closed", m.o.FailClosed)
	}
	if m.o.FailClosed {
		return res, err
	}
	m.Fallbacks.Add(1)
	return m.o.Fallback.Allow(ctx, key, p, 1)
}

// ask asks the Limiter, waiting at most the timeout whatever the client
// does with the context (go-redis ignores its deadline unless
// ContextTimeoutEnabled): the call goes on in its goroutine and its
// answer is dropped.
func (m *Middleware) ask(ctx context.Context, key string, p client.Policy) (client.Result, error) {
	cctx, cancel := context.WithTimeout(ctx, m.o.Timeout)
	defer cancel()
	type answer struct {
		res client.Result
		err error
	}
	ch := make(chan answer, 1)
	go func() {
		res, err := m.o.Limiter.Allow(cctx, key, p, 1)
		ch <- answer{res, err}
	}()
	select {
	case a := <-ch:
		return a.res, a.err
	case <-cctx.Done():
		return client.Result{}, cctx.Err()
	}
}

// isServerError: an error reply from rlserver (it is up).
func isServerError(err error) bool {
	var re interface{ RedisError() }
	return errors.As(err, &re)
}

// setHeaders writes the rate-limit headers: the de-facto X-RateLimit-*
// and the IETF httpapi draft's RateLimit-Policy and RateLimit fields
// (structured fields: "name";q=quota;w=window and "name";r=remaining;t=reset).
func setHeaders(h http.Header, rule Rule, res client.Result) {
	reset := ceilSeconds(res.ResetAfter)
	h.Set("X-RateLimit-Limit", strconv.FormatInt(res.Limit, 10))
	h.Set("X-RateLimit-Remaining", strconv.FormatInt(res.Remaining, 10))
	h.Set("X-RateLimit-Reset", strconv.FormatInt(reset, 10))
	name := strconv.Quote(rule.Name)
	h.Set("RateLimit-Policy", fmt.Sprintf("%s;q=%d;w=%d", name, res.Limit, ceilSeconds(rule.Policy.Period)))
	h.Set("RateLimit", fmt.Sprintf("%s;r=%d;t=%d", name, res.Remaining, reset))
}

// refuse answers 429 with Retry-After (whole seconds, rounded up, at
// least 1) and a small body, JSON if the client accepts it.
func refuse(w http.ResponseWriter, r *http.Request, res client.Result) {
	retry := max(ceilSeconds(res.RetryAfter), 1)
	w.Header().Set("Retry-After", strconv.FormatInt(retry, 10))
	if strings.Contains(r.Header.Get("Accept"), "application/json") {
		w.Header().Set("Content-Type", "application/json")
		w.WriteHeader(http.StatusTooManyRequests)
		fmt.Fprintf(w, `{"error":"rate limited","retry_after":%d}`+"\n", retry)
		return
	}
	w.Header().Set("Content-Type", "text/plain; charset=utf-8")
	w.WriteHeader(http.StatusTooManyRequests)
	fmt.Fprintf(w, "rate limited: retry after %d s\n", retry)
}

func ceilSeconds(d time.Duration) int64 {
	if d <= 0 {
		return 0
	}
	return int64(math.Ceil(d.Seconds()))
}

// KeyByHeaderOrIP names a caller by the header (an API key) when the
// request has it, else by the client's IP. The IP is the connection's
// peer, unless that peer is a trusted proxy: then the nearest address
// in X-Forwarded-For (or Forwarded's for=) that is not a trusted proxy.
func KeyByHeaderOrIP(header string, trusted []netip.Prefix) func(*http.Request) string {
	isTrusted := func(a netip.Addr) bool {
		for _, p := range trusted {
			if p.Contains(a.Unmap()) {
				return true
			}
		}
		return false
	}
	return func(r *http.Request) string {
		if header != "" {
			if v := r.Header.Get(header); v != "" {
				return "key:" + v
			}
		}
		ip := peer(r.RemoteAddr)
		if !ip.IsValid() {
			return "ip:" + r.RemoteAddr
		}
		if isTrusted(ip) {
			hops := forwarded(r)
			for i := len(hops) - 1; i >= 0; i-- { // nearest first
				ip = hops[i]
				if !isTrusted(ip) {
					break
				}
			}
		}
		return "ip:" + ip.Unmap().String()
	}
}

// peer is the address of a RemoteAddr ("ip:port").
func peer(remote string) netip.Addr {
	host, _, err := net.SplitHostPort(remote)
	if err != nil {
		host = remote
	}
	a, _ := netip.ParseAddr(host)
	return a
}

// forwarded lists the addresses a request was forwarded for, farthest
// first: Forwarded's for= if present, else X-Forwarded-For. Entries that
// are not addresses (obfuscated identifiers, "unknown") are skipped.
func forwarded(r *http.Request) []netip.Addr {
	var out []netip.Addr
	if fw := r.Header.Values("Forwarded"); len(fw) > 0 {
		for _, line := range fw {
			for _, elem := range strings.Split(line, ",") {
				for _, pair := range strings.Split(elem, ";") {
					k, v, ok := strings.Cut(strings.TrimSpace(pair), "=")
					if !ok || !strings.EqualFold(k, "for") {
						continue
					}
					v = strings.Trim(v, `"`)
					if strings.HasPrefix(v, "[") { // "[2001:db8::1]:4711"
						v = strings.TrimPrefix(v, "[")
						v, _, _ = strings.Cut(v, "]")
					} else if h, _, err := net.SplitHostPort(v); err == nil {
						v = h
					}
					if a, err := netip.ParseAddr(v); err == nil {
						out = append(out, a)
					}
				}
			}
		}
		return out
	}
	for _, line := range r.Header.Values("X-Forwarded-For") {
		for _, v := range strings.Split(line, ",") {
			if a, err := netip.ParseAddr(strings.TrimSpace(v)); err == nil {
				out = append(out, a)
			}
		}
	}
	return out
}

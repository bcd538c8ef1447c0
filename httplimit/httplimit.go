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
	"github.com/rlserver/rlserver/internal/ascii"
)

// Allower is what decides: client.Limiter (rlserver) or client.Local.
type Allower interface {
	Allow(ctx context.Context, key string, p client.Policy, cost int64) (client.Result, error)
}

// MultiAllower decides several limits as one, all or nothing
// (client.Limiter and client.Local): what a Rule with Also needs.
type MultiAllower interface {
	AllowAll(ctx context.Context, limits []client.Limit) (client.Results, error)
}

// Rule is a route's limit: a name (RateLimit-Policy's) and a policy, per
// caller; and, in Also, more limits decided with it as one (RL.ALL): a
// request passes only if every limit allows it, and a refused request
// charges none of them, so a caller over its own limit does not eat a
// tenant's or the whole API's.
//
// Delay, when set, queues a request past the limit instead of refusing
// it, up to that long, as nginx's limit_req burst does
// (docs/reservations.md maps burst and delay): rlserver reserves its
// turn (RESERVE), the request waits for it, and one whose turn is
// further away is refused (429). A request that goes away while it waits
// gives its turn back. The policy must be a Bucket, Log or Fixed one,
// and the rule has no Also.
type Rule struct {
	Name   string
	Policy client.Policy
	Also   []Scope
	Delay  time.Duration
}

// Scope is one more limit of a Rule: its name, its policy, and what it
// counts. Key names the bucket a request falls in: nil counts per caller
// (Options.Key), a function of the request per tenant, a constant for
// the whole API. On an rlserver cluster all of one request's keys must
// share a slot: give them a common hash tag ("{api}") in Key and in
// Options.Key.
type Scope struct {
	Name   string
	Policy client.Policy
	Key    func(*http.Request) string
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
	// Sleep is how a delayed request waits for its turn: d, or until ctx
	// ends (its error). Default a timer; tests on a manual clock replace
	// it.
	Sleep func(ctx context.Context, d time.Duration) error
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
	if o.Sleep == nil {
		o.Sleep = sleepTimer
	}
	return &Middleware{o: o}
}

// sleepTimer sleeps d, or until ctx ends (its error).
func sleepTimer(ctx context.Context, d time.Duration) error {
	t := time.NewTimer(d)
	defer t.Stop()
	select {
	case <-t.C:
		return nil
	case <-ctx.Done():
		return ctx.Err()
	}
}

// Limit wraps next with rule: each request spends one unit of its
// caller's allowance under the rule's name, and of every scope of
// rule.Also, all or nothing. It panics on a rule with a Delay that cannot
// take one (a configuration error, found at startup).
func (m *Middleware) Limit(rule Rule, next http.Handler) http.Handler {
	if rule.Delay > 0 {
		switch rule.Policy.Algorithm {
		case client.Bucket, client.Log, client.Fixed:
		default:
			panic(fmt.Sprintf("httplimit: rule %q: a Delay needs a Bucket, Log or Fixed policy, not %v", rule.Name, rule.Policy.Algorithm))
		}
		if len(rule.Also) > 0 {
			panic(fmt.Sprintf("httplimit: rule %q: a Delay takes no Also", rule.Name))
		}
	}
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		caller := m.o.Key(r)
		var d decision
		var err error
		var limits []client.Limit
		if rule.Delay > 0 {
			key := scopeKey(rule.Name, caller)
			d, err = m.decide(r.Context(), func(ctx context.Context, a Allower) (decision, error) {
				rs, ok := a.(client.Reserver)
				if !ok {
					return decision{}, fmt.Errorf("%w: %T takes no reservations", client.ErrPolicy, a)
				}
				res, err := rs.Reserve(ctx, key, rule.Policy, 1, rule.Delay)
				return decision{res: res, each: []client.Result{res}, by: a}, err
			})
			if err == nil && d.res.Allowed && d.res.Wait > 0 {
				if err := m.o.Sleep(r.Context(), d.res.Wait); err != nil {
					m.giveBack(r.Context(), d, key) // the caller went away
					return
				}
			}
		} else if len(rule.Also) == 0 {
			key := scopeKey(rule.Name, caller)
			limits = []client.Limit{{Key: key, Policy: rule.Policy, Cost: 1}}
			d, err = m.decide(r.Context(), func(ctx context.Context, a Allower) (decision, error) {
				res, err := a.Allow(ctx, key, rule.Policy, 1)
				return decision{res: res, each: []client.Result{res}, by: a}, err
			})
		} else {
			limits = rule.limits(r, caller)
			d, err = m.decide(r.Context(), func(ctx context.Context, a Allower) (decision, error) {
				ma, ok := a.(MultiAllower)
				if !ok {
					return decision{}, fmt.Errorf("%w: %T decides one limit at a time", client.ErrPolicy, a)
				}
				rs, err := ma.AllowAll(ctx, limits)
				return decision{res: rs.Result, index: rs.Index, each: rs.Each, by: a}, err
			})
		}
		if err != nil {
			http.Error(w, "rate limiter unavailable", http.StatusServiceUnavailable)
			return
		}
		setHeaders(w.Header(), rule, d)
		if !d.res.Allowed {
			refuse(w, r, d.res)
			return
		}
		defer m.hold(r.Context(), d, limits)()
		next.ServeHTTP(w, r)
	})
}

// giveBack returns a delayed request's turn, on whichever granted it.
func (m *Middleware) giveBack(ctx context.Context, d decision, key string) {
	rs, ok := d.by.(client.Reserver)
	if !ok || d.res.Ticket == 0 {
		return
	}
	cctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), m.o.Timeout)
	defer cancel()
	if _, err := rs.Cancel(cctx, key, d.res.Ticket); err != nil {
		m.o.Logger.Warn("a delayed request's turn could not be given back", "err", err)
	}
}

// InFlight is a Rule that lets each caller have at most n requests in
// flight. Each request takes a lease of term (a Concurrency policy): it
// is renewed while the handler runs and released when it returns, and a
// process that dies mid-request frees its slots when their term ends.
func InFlight(name string, n int64, term time.Duration) Rule {
	return Rule{Name: name, Policy: client.Policy{Algorithm: client.Concurrency, Limit: n, Period: term}}
}

// hold keeps the leases an admission took (its Concurrency limits') while
// the handler runs, on whichever decided it, and returns what releases
// them. A release that fails leaves the lease to end with its term.
func (m *Middleware) hold(ctx context.Context, d decision, limits []client.Limit) (release func()) {
	var held []*client.Held
	lr, _ := d.by.(client.Leaser)
	for i, l := range limits {
		if l.Policy.Algorithm != client.Concurrency || i >= len(d.each) || d.each[i].Token == 0 || lr == nil {
			continue
		}
		held = append(held, client.Hold(context.WithoutCancel(ctx), lr, l.Key, d.each[i].Token, l.Policy.Period))
	}
	return func() {
		for _, h := range held {
			rctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), m.o.Timeout)
			if _, err := h.Release(rctx); err != nil {
				m.o.Logger.Warn("a lease could not be released: it ends with its term", "err", err)
			}
			cancel()
		}
	}
}

// limits are a rule's limits for a request from caller: its own, then
// Also's, each spending one unit.
func (rule Rule) limits(r *http.Request, caller string) []client.Limit {
	out := make([]client.Limit, 0, 1+len(rule.Also))
	out = append(out, client.Limit{Key: scopeKey(rule.Name, caller), Policy: rule.Policy, Cost: 1})
	for _, sc := range rule.Also {
		k := caller
		if sc.Key != nil {
			k = sc.Key(r)
		}
		out = append(out, client.Limit{Key: scopeKey(sc.Name, k), Policy: sc.Policy, Cost: 1})
	}
	return out
}

// scopeKey is the rlserver key of a rule's or a scope's limit for key k.
func scopeKey(name, k string) string { return "http:" + name + ":" + k }

// decision is an answer, the deciding limit (0: the rule's own), every
// limit's own answer, and what decided (rlserver or the fallback: a
// lease taken is released where it was taken).
type decision struct {
	res   client.Result
	index int
	each  []client.Result
	by    Allower
}

// decide asks rlserver, within the timeout; if it cannot be reached, the
// fallback (or nothing, failing closed).
func (m *Middleware) decide(ctx context.Context, ask func(context.Context, Allower) (decision, error)) (decision, error) {
	d, err := m.ask(ctx, ask)
	if err == nil {
		if m.down.CompareAndSwap(true, false) {
			m.o.Logger.Info("rlserver answers again: deciding there")
		}
		return d, nil
	}
	if errors.Is(err, client.ErrPolicy) || isServerError(err) {
		return d, err // rlserver answered: a wrong policy, not an outage
	}
	if m.down.CompareAndSwap(false, true) {
		m.o.Logger.Warn("rlserver cannot be reached: deciding in process", "err", err, "fail_closed", m.o.FailClosed)
	}
	if m.o.FailClosed {
		return d, err
	}
	m.Fallbacks.Add(1)
	return ask(ctx, m.o.Fallback)
}

// ask asks the Limiter, waiting at most the timeout whatever the client
// does with the context (go-redis ignores its deadline unless
// ContextTimeoutEnabled): the call goes on in its goroutine and its
// answer is dropped.
func (m *Middleware) ask(ctx context.Context, ask func(context.Context, Allower) (decision, error)) (decision, error) {
	cctx, cancel := context.WithTimeout(ctx, m.o.Timeout)
	defer cancel()
	type answer struct {
		d   decision
		err error
	}
	ch := make(chan answer, 1)
	go func() {
		d, err := ask(cctx, m.o.Limiter)
		ch <- answer{d, err}
	}()
	select {
	case a := <-ch:
		return a.d, a.err
	case <-cctx.Done():
		return decision{}, cctx.Err()
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
// With several limits, the figures are the deciding limit's (d.index),
// and RateLimit-Policy lists every limit.
func setHeaders(h http.Header, rule Rule, d decision) {
	res := d.res
	reset := ceilSeconds(res.ResetAfter)
	h.Set("X-RateLimit-Limit", strconv.FormatInt(res.Limit, 10))
	h.Set("X-RateLimit-Remaining", strconv.FormatInt(res.Remaining, 10))
	h.Set("X-RateLimit-Reset", strconv.FormatInt(reset, 10))
	name := rule.Name
	policy := fmt.Sprintf("%s;q=%d;w=%d", strconv.Quote(rule.Name), quota(rule.Policy), ceilSeconds(rule.Policy.Period))
	for i, sc := range rule.Also {
		if d.index == i+1 {
			name = sc.Name
		}
		policy += fmt.Sprintf(", %s;q=%d;w=%d", strconv.Quote(sc.Name), quota(sc.Policy), ceilSeconds(sc.Policy.Period))
	}
	h.Set("RateLimit-Policy", policy)
	h.Set("RateLimit", fmt.Sprintf("%s;r=%d;t=%d", strconv.Quote(name), res.Remaining, reset))
}

// quota is a policy's limit as RateLimit-Policy's q: how many requests a
// window allows (a bucket's or GCRA's burst).
func quota(p client.Policy) int64 { return p.Limit }

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
					if !ok || !ascii.EqualFold(k, "for") {
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

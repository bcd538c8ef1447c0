// Command httpapi is an HTTP API protected by rlserver: GET /hello,
// limited per X-API-Key header (else per client IP) with RL.SLIDE, and
// GET /report, limited per caller, per tenant and for the whole API at
// once (RL.ALL).
//
//	go run ./examples/httpapi -listen 127.0.0.1:8080 -rlserver 127.0.0.1:6379 -limit 5 -period 1m
//
// The sixth request within a minute from one key gets 429 with
// Retry-After; another key is unaffected. With rlserver stopped, requests
// are still limited, in process.
package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"log/slog"
	"net/http"
	"os"
	"os/signal"
	"time"

	"github.com/redis/go-redis/v9"
	"github.com/rlserver/rlserver/client"
	"github.com/rlserver/rlserver/httplimit"
)

func main() {
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt)
	defer stop()
	if err := run(ctx, os.Args[1:], nil); err != nil && !errors.Is(err, http.ErrServerClosed) {
		fmt.Fprintln(os.Stderr, "httpapi:", err)
		os.Exit(1)
	}
}

// run serves until ctx ends. fallback decides while rlserver cannot be
// reached; nil is the middleware's default, in process on the real clock.
func run(ctx context.Context, args []string, fallback httplimit.Allower) error {
	fs := flag.NewFlagSet("httpapi", flag.ContinueOnError)
	listen := fs.String("listen", "127.0.0.1:8080", "address to serve on")
	addr := fs.String("rlserver", "127.0.0.1:6379", "rlserver's address")
	limit := fs.Int64("limit", 5, "requests per period and key")
	period := fs.Duration("period", time.Minute, "the sliding window")
	timeout := fs.Duration("timeout", 50*time.Millisecond, "how long a decision may wait for rlserver before it is made in process")
	if err := fs.Parse(args); err != nil {
		return err
	}
	srv := &http.Server{Addr: *listen, Handler: handler(*addr, *limit, *period, *timeout, fallback)}
	go func() {
		<-ctx.Done()
		srv.Close()
	}()
	return srv.ListenAndServe()
}

// handler is the API: the ten lines of the README.
func handler(rlserver string, limit int64, period, timeout time.Duration, fallback httplimit.Allower) http.Handler {
	rdb := redis.NewClient(&redis.Options{Addr: rlserver})
	mw := httplimit.New(httplimit.Options{Limiter: client.New(rdb), Timeout: timeout, Fallback: fallback, Logger: slog.Default()})
	rule := httplimit.Rule{Name: "default", Policy: client.Policy{Algorithm: client.Slide, Limit: limit, Period: period}}
	mux := http.NewServeMux()
	mux.Handle("GET /hello", mw.Limit(rule, http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		io.WriteString(w, "hello\n")
	})))

	// GET /report: the caller's limit, its tenant's (X-Tenant: twice as
	// many) and the whole API's, decided as one (RL.ALL): a caller over
	// its own limit charges neither its tenant nor the API.
	report := httplimit.Rule{Name: "report", Policy: client.Policy{Algorithm: client.Slide, Limit: limit, Period: period},
		Also: []httplimit.Scope{
			{Name: "tenant", Policy: client.Policy{Algorithm: client.Log, Limit: 2 * limit, Period: period},
				Key: func(r *http.Request) string { return r.Header.Get("X-Tenant") }},
			{Name: "api", Policy: client.Policy{Algorithm: client.Bucket, Limit: 100, Rate: 100, Period: time.Second},
				Key: func(*http.Request) string { return "all" }},
		}}
	mux.Handle("GET /report", mw.Limit(report, http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		io.WriteString(w, "report\n")
	})))
	return mux
}

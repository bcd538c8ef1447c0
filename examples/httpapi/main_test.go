package main

import (
	"context"
	"net"
	"net/http"
	"strconv"
	"testing"
	"time"

	"github.com/rlserver/rlserver/client"
	"github.com/rlserver/rlserver/internal/rltest"
	"github.com/rlserver/rlserver/internal/testserver"
	"github.com/stretchr/testify/require"
)

// TestExample runs the example as described: five requests a minute per
// key, the sixth 429 with Retry-After, another key unaffected; with
// rlserver stopped, still limited (in process). The timeout is long so
// that a slow answer on a loaded machine is waited for: a decision made in
// process would count apart from rlserver's. The in-process fallback reads
// the test's fixed clock: on the real one, a minute boundary between two
// requests would legitimately let a sixth through the sliding window.
func TestExample(t *testing.T) {
	s := testserver.Start(t)
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	require.NoError(t, err)
	listen := ln.Addr().String()
	ln.Close()
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() {
		done <- run(ctx, []string{"-listen", listen, "-rlserver", s.Addr.String(), "-limit", "5", "-period", "1m", "-timeout", "1m"},
			client.NewLocalAt(func() int64 { return rltest.StartNs }))
	}()
	t.Cleanup(func() { cancel(); <-done })
	get := func(key string) *http.Response {
		req, _ := http.NewRequest("GET", "http://"+listen+"/hello", nil)
		req.Header.Set("X-API-Key", key)
		resp, err := http.DefaultClient.Do(req)
		require.NoError(t, err)
		resp.Body.Close()
		return resp
	}
	rltest.WaitFor(t, 10*time.Second, "the example to listen", func() (bool, string) {
		c, err := net.Dial("tcp", listen)
		if err == nil {
			c.Close()
		}
		return err == nil, ""
	})
	for i := range 5 {
		require.Equal(t, 200, get("k1").StatusCode, "request %d", i+1)
	}
	r := get("k1")
	require.Equal(t, 429, r.StatusCode)
	retry, err := strconv.Atoi(r.Header.Get("Retry-After"))
	require.NoError(t, err)
	require.Positive(t, retry)
	require.Equal(t, 200, get("k2").StatusCode)

	// /report: per caller (5), per tenant (10) and for the API, as one.
	report := func(key, tenant string) *http.Response {
		req, _ := http.NewRequest("GET", "http://"+listen+"/report", nil)
		req.Header.Set("X-API-Key", key)
		req.Header.Set("X-Tenant", tenant)
		resp, err := http.DefaultClient.Do(req)
		require.NoError(t, err)
		resp.Body.Close()
		return resp
	}
	for i := range 5 {
		require.Equal(t, 200, report("r1", "acme").StatusCode, "r1's report %d", i+1)
	}
	r = report("r1", "acme")
	require.Equal(t, 429, r.StatusCode, "r1 over its own limit")
	require.Equal(t, `"report";q=5;w=60, "tenant";q=10;w=60, "api";q=100;w=1`, r.Header.Get("RateLimit-Policy"))
	for i := range 5 {
		require.Equal(t, 200, report("r2", "acme").StatusCode, "r2's report %d: r1's refusal charged acme nothing", i+1)
	}
	r = report("r3", "acme")
	require.Equal(t, 429, r.StatusCode, "acme's limit")
	require.Contains(t, r.Header.Get("RateLimit"), `"tenant";r=0;`)

	sctx, scancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer scancel()
	require.NoError(t, s.Close(sctx))
	for i := range 5 {
		require.Equal(t, 200, get("k3").StatusCode, "rlserver stopped: request %d", i+1)
	}
	require.Equal(t, 429, get("k3").StatusCode, "rlserver stopped: the sixth, limited in process")
}

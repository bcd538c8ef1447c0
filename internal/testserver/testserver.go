// Package testserver starts real in-process rlservers for tests, on
// 127.0.0.1:0 with the manual clock at rltest.StartNs. It sits on server;
// internal/rltest, the wire-level helpers below it, imports no package
// of rlserver.
package testserver

import (
	"context"
	"testing"
	"time"

	"github.com/rlserver/rlserver/internal/rltest"
	"github.com/rlserver/rlserver/node"
	"github.com/rlserver/rlserver/server"
)

// Option changes a test server's options before it starts.
type Option func(*server.Options)

// Start runs an in-process server on 127.0.0.1:0 with the manual clock at
// rltest.StartNs and stops it when the test ends.
func Start(t testing.TB, opts ...Option) *server.Server {
	t.Helper()
	o := server.Options{
		Config: node.Config{
			Bind: "127.0.0.1", Port: 0, Dir: t.TempDir(), Shards: 8, ClockMode: "manual",
			MaxClients: 10000, LogLevel: "info", LogFormat: "text", Limits: node.DefaultLimits,
			ShutdownTimeout: 10,
		},
		ClockStart:     rltest.StartNs,
		ExpiryInterval: 20 * time.Millisecond,
	}
	for _, f := range opts {
		f(&o)
	}
	s, err := server.Start(o)
	if err != nil {
		t.Fatalf("start server: %v", err)
	}
	t.Cleanup(func() {
		ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
		defer cancel()
		if err := s.Close(ctx); err != nil {
			t.Errorf("close server: %v", err)
		}
	})
	return s
}

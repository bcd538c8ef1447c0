// Package server assembles rlserver from its parts (clock, engine,
// commands, resp) and runs it: the one place that knows how they fit, used
// by cmd/rlserver and by tests that need a real server in-process.
package server

import (
	"context"
	"crypto/tls"
	"errors"
	"fmt"
	"log/slog"
	"net"
	"strconv"
	"time"

	"github.com/rlserver/rlserver/clock"
	"github.com/rlserver/rlserver/commands"
	"github.com/rlserver/rlserver/engine"
	"github.com/rlserver/rlserver/resp"
)

// Options configures a server. Config holds what CONFIG GET reports;
// ClockStart (Unix ns, 0 = wall clock now) and Logger are for wiring.
type Options struct {
	Config     commands.Config
	ClockStart int64
	Logger     *slog.Logger
	LogLevel   *slog.LevelVar
	// ExpiryInterval is the active expiry sweep period (default 100ms).
	ExpiryInterval time.Duration
}

// Server is a running rlserver.
type Server struct {
	Cmds   *commands.Server
	Engine *engine.Engine
	Clock  clock.Clock
	Addr   net.Addr

	resp   *resp.Server
	cancel context.CancelFunc
	done   chan error
}

// Start validates opts, listens, and serves in the background. The
// listener is bound before Start returns, so Addr is usable at once (port
// 0 picks a free port).
func Start(opts Options) (*Server, error) {
	cfg := opts.Config
	if cfg.Shards <= 0 {
		return nil, errors.New("shards must be positive")
	}
	if cfg.Shards&(cfg.Shards-1) != 0 {
		return nil, fmt.Errorf("shards must be a power of two, got %d", cfg.Shards)
	}
	start := opts.ClockStart
	if start == 0 {
		start = time.Now().UnixNano()
	}
	var clk clock.Clock
	switch cfg.ClockMode {
	case "real", "":
		cfg.ClockMode = "real"
		clk = clock.NewReal(start)
	case "manual":
		clk = clock.NewManual(start)
	default:
		return nil, fmt.Errorf("clock must be real or manual, got %q", cfg.ClockMode)
	}
	var tlsCfg *tls.Config
	if cfg.TLSCert != "" || cfg.TLSKey != "" {
		cert, err := tls.LoadX509KeyPair(cfg.TLSCert, cfg.TLSKey)
		if err != nil {
			return nil, fmt.Errorf("tls: %w", err)
		}
		tlsCfg = &tls.Config{Certificates: []tls.Certificate{cert}, MinVersion: tls.VersionTLS12}
	}
	ln, err := net.Listen("tcp", net.JoinHostPort(cfg.Bind, strconv.Itoa(cfg.Port)))
	if err != nil {
		return nil, err
	}
	if tcp, ok := ln.Addr().(*net.TCPAddr); ok {
		cfg.Port = tcp.Port
	}
	e := engine.New(cfg.Shards)
	cmds := commands.NewServer(cfg, e, clk, opts.Logger, opts.LogLevel)
	ctx, cancel := context.WithCancel(context.Background())
	s := &Server{Cmds: cmds, Engine: e, Clock: clk, Addr: ln.Addr(), resp: resp.NewServer(cmds, tlsCfg), cancel: cancel, done: make(chan error, 1)}
	interval := opts.ExpiryInterval
	if interval <= 0 {
		interval = 100 * time.Millisecond
	}
	go cmds.RunExpiry(ctx, interval)
	go func() { s.done <- s.resp.Serve(ln) }()
	return s, nil
}

// Close stops the server: no new connections, existing ones closed, the
// background loops stopped. It waits at most until ctx ends.
func (s *Server) Close(ctx context.Context) error {
	s.cancel()
	err := s.resp.Close(ctx)
	if serr := <-s.done; err == nil {
		err = serr
	}
	return err
}

// ShutdownRequested is closed when a client runs SHUTDOWN.
func (s *Server) ShutdownRequested() <-chan struct{} { return s.Cmds.ShutdownRequested() }

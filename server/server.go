package server

import (
	"context"
	"crypto/tls"
	"crypto/x509"
	"errors"
	"fmt"
	"log/slog"
	"net"
	"os"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/cockroachdb/pebble/v2/vfs"
	"github.com/prometheus/client_golang/prometheus"
	"github.com/rlserver/rlserver/clock"
	"github.com/rlserver/rlserver/cluster"
	"github.com/rlserver/rlserver/commands"
	"github.com/rlserver/rlserver/engine"
	"github.com/rlserver/rlserver/metrics"
	"github.com/rlserver/rlserver/node"
	"github.com/rlserver/rlserver/persist"
	"github.com/rlserver/rlserver/replication"
	"github.com/rlserver/rlserver/resp"
	"github.com/rlserver/rlserver/rls"
)

// Options configures a server. Config holds what CONFIG GET reports;
// ClockStart (Unix ns, 0 = wall clock now) and Logger are for wiring.
type Options struct {
	Config     node.Config
	ClockStart int64
	Logger     *slog.Logger
	LogLevel   *slog.LevelVar
	// ExpiryInterval is the active expiry sweep period (default 100ms).
	ExpiryInterval time.Duration
	// FS, if set, is the file system of the store (tests: in-memory or
	// error-injecting).
	FS vfs.FS
	// MemoryLimit is the memory limit for the whole process, in bytes
	// (runMemoryLimit); 0 takes GOMEMLIMIT's, as the Go runtime
	// had it before any server of the process changed it.
	// MemoryLimitInterval is how often the Go runtime's share of it is
	// reset (default 1s).
	MemoryLimit         int64
	MemoryLimitInterval time.Duration
	// GoroutinePerConn serves plain connections with a goroutine each
	// instead of event loops (resp.Options).
	GoroutinePerConn bool
}

// Server is a running rlserver.
type Server struct {
	Node        *node.Node
	Engine      *engine.Engine
	Clock       *clock.Timeline
	Replication *replication.Manager
	Addr        net.Addr
	// Metrics serves /metrics (--metrics-addr); nil when off.
	Metrics *metrics.Server
	// RLS serves Envoy's rate limit service (--rls-addr); nil when off.
	RLS *rls.Server

	// Loaded is what the start-up load found.
	Loaded node.LoadInfo

	resp   *resp.Server
	cancel context.CancelFunc
	done   chan error
	wg     sync.WaitGroup
	store  *persist.Store
	snap   *persist.Snapshotter
	log    *slog.Logger

	stopOnce sync.Once
	stopErr  error
}

// Start validates opts, listens, and serves in the background. The
// listener is bound before Start returns, so Addr is usable at once (port
// 0 picks a free port).
func Start(opts Options) (*Server, error) {
	cfg := opts.Config
	if err := cfg.Validate(); err != nil {
		return nil, err
	}
	if cfg.ClockMode == "" {
		cfg.ClockMode = "real"
	}
	log := opts.Logger
	if log == nil {
		log = slog.New(slog.DiscardHandler)
	}
	var tlsCfg *tls.Config
	if cfg.TLSCert != "" || cfg.TLSKey != "" {
		cert, err := tls.LoadX509KeyPair(cfg.TLSCert, cfg.TLSKey)
		if err != nil {
			return nil, fmt.Errorf("tls: %w", err)
		}
		tlsCfg = &tls.Config{Certificates: []tls.Certificate{cert}, MinVersion: tls.VersionTLS12}
		if cfg.TLSCACert != "" {
			pem, err := os.ReadFile(cfg.TLSCACert)
			if err != nil {
				return nil, fmt.Errorf("tls: %w", err)
			}
			pool := x509.NewCertPool()
			if !pool.AppendCertsFromPEM(pem) {
				return nil, fmt.Errorf("tls: no certificate in --tls-ca-cert %s", cfg.TLSCACert)
			}
			tlsCfg.ClientCAs, tlsCfg.ClientAuth = pool, tls.RequireAndVerifyClientCert
		}
	}
	// The rate limit service's configuration, before anything starts: a
	// bad file refuses the start, naming the file and the cause.
	var rlsCfg *rls.Config
	if cfg.RLS.Config != "" {
		c, err := rls.LoadDir(cfg.RLS.Config)
		if err != nil {
			return nil, fmt.Errorf("--rls-config: %w", err)
		}
		rlsCfg = c
	}
	// Persistence first: the stored clock mark decides where the clock
	// starts, and the load drops what has expired by then. The store is
	// checked and loaded read-only, so a store that is refused (damaged,
	// unknown format) is left exactly as it was; only then is it opened
	// for writing.
	e := engine.New(cfg.Shards)
	var (
		store     *persist.Store
		highWater int64
		loaded    node.LoadInfo
		clk       clock.Own
		resume    *persist.Position // where a replica's store stands in its primary's stream
	)
	if cfg.SaveInterval > 0 {
		popts := persist.Options{Dir: cfg.Dir, FS: opts.FS, Logger: log}
		ro, err := persist.Open(persist.Options{Dir: cfg.Dir, FS: opts.FS, Logger: log, ReadOnly: true})
		switch {
		case errors.Is(err, persist.ErrNoStore): // a new store
		case err != nil:
			return nil, err
		default:
			if highWater, err = ro.HighWater(); err != nil {
				ro.Close()
				return nil, err
			}
			if pos, ok, err := ro.Position(); err != nil {
				ro.Close()
				return nil, err
			} else if ok {
				resume = &pos
			}
			clk = newClock(cfg.ClockMode, opts.ClockStart, highWater)
			start := time.Now()
			held, expired, err := persist.LoadEngine(ro, e, clk.Now(), log)
			ro.Close()
			if err != nil {
				return nil, err
			}
			loaded = node.LoadInfo{Keys: held, Expired: expired, Duration: time.Since(start)}
			log.Debug("loaded", "dir", cfg.Dir, "keys", held, "expired_dropped", expired, "duration", loaded.Duration, "clock_mark", highWater)
		}
		if store, err = persist.Open(popts); err != nil {
			return nil, err
		}
	}
	if clk == nil {
		clk = newClock(cfg.ClockMode, opts.ClockStart, highWater)
	}
	ln, err := net.Listen("tcp", net.JoinHostPort(cfg.Bind, strconv.Itoa(cfg.Port)))
	if err != nil {
		if store != nil {
			store.Close()
		}
		return nil, err
	}
	if tcp, ok := ln.Addr().(*net.TCPAddr); ok {
		cfg.Port = tcp.Port
	}
	tl := clock.NewTimeline(clk, highWater)
	var snap *persist.Snapshotter
	if store != nil {
		snap = persist.NewSnapshotter(e, store, tl, log)
	}
	var (
		nd    *node.Node
		clus  *cluster.Cluster
		front atomic.Pointer[rls.Server]  // set once it serves
		rsrv  atomic.Pointer[resp.Server] // set once made
	)
	repl := replication.New(replication.Options{
		Engine: e, Clock: tl, Logger: log, BacklogSize: int(min(cfg.ReplBacklogSize, 1<<40)),
		Port: cfg.Port, AnnounceIP: cfg.ReplicaAnnounceIP, AnnouncePort: cfg.ReplicaAnnouncePort,
		MasterAuth: cfg.MasterAuth, Resume: resume,
		MinReplicas: cfg.MinReplicasToWrite, MinReplicasMaxLag: cfg.MinReplicasMaxLag,
		BatchInterval: cfg.ReplBatchInterval,
		Watch: func(fd int, ready func() bool) (stop, kick func(), ok bool) {
			if r := rsrv.Load(); r != nil {
				return r.Watch(fd, ready)
			}
			return nil, nil, false
		},
		Writes: func(w replication.Writes) {
			switch w {
			case replication.WritesReadOnly:
				nd.RefuseWrites(commands.ErrReadOnly)
			case replication.WritesNoReplicas:
				nd.RefuseWrites(commands.ErrNoReplicas)
			default:
				nd.AcceptWrites()
			}
			if clus != nil {
				clus.Kick() // the role changed: the routing follows
			}
			if f := front.Load(); f != nil {
				f.SetServing(w == replication.WritesOK)
			}
		},
	})
	if snap != nil {
		snap.SetPosition(repl.Position)
	}
	nd = node.New(cfg, e, tl, node.Options{Logger: log, LogLevel: opts.LogLevel, Snapshotter: snap, Loaded: loaded, Replication: repl})
	if cfg.ACLFile != "" { // the users, before any client (as Redis, a bad file stops the start)
		if err := nd.LoadUsers(nil); err != nil {
			ln.Close()
			if store != nil {
				store.Close()
			}
			return nil, fmt.Errorf("--aclfile: %s", strings.TrimPrefix(err.Error(), "ERR "))
		}
	}
	if cfg.ClusterConfig != "" {
		c, err := startCluster(cfg, log, repl, nd)
		if err != nil {
			ln.Close()
			if store != nil {
				store.Close()
			}
			return nil, err
		}
		clus = c
	}
	var (
		svc   *rls.Service
		extra []prometheus.Collector
	)
	if cfg.RLS.Addr != "" {
		o := cfg.RLS
		svc = rls.NewService(nd, rlsCfg, rls.Options{ShadowMode: o.ShadowMode, ChargeEach: o.ChargeEach,
			QuotaMode: o.QuotaMode, DynamicMetadata: o.DynamicMetadata,
			ResponseHeaders: o.ResponseHeaders, LimitHeader: o.LimitHeader, RemainingHeader: o.RemainingHeader,
			ResetHeader: o.ResetHeader, Password: cfg.MasterAuth})
		extra = append(extra, svc.Stats())
	}
	var ms *metrics.Server
	if cfg.MetricsAddr != "" {
		if ms, err = metrics.Listen(cfg.MetricsAddr, nd, cfg.MetricsTopKeys, log, extra...); err != nil {
			ln.Close()
			if store != nil {
				store.Close()
			}
			return nil, fmt.Errorf("--metrics-addr: %w", err)
		}
	}
	var rs *rls.Server
	if svc != nil {
		if rs, err = rls.Listen(cfg.RLS.Addr, svc, tlsCfg, cfg.RLS.Config, 0, log); err != nil {
			ln.Close()
			if ms != nil {
				ms.Close(context.Background())
			}
			if store != nil {
				store.Close()
			}
			return nil, fmt.Errorf("--rls-addr: %w", err)
		}
		front.Store(rs)
		rs.SetServing(nd.Writable()) // a role change between Listen and Store found no front to tell
		nd.InfoSection("rls", "Rls", rs.Info)
	}
	ctx, cancel := context.WithCancel(context.Background())
	s := &Server{Metrics: ms, RLS: rs, Node: nd, Engine: e, Clock: tl, Replication: repl, Addr: ln.Addr(), Loaded: loaded, resp: resp.NewServer(nd, resp.Options{TLS: tlsCfg, GoroutinePerConn: opts.GoroutinePerConn}),
		cancel: cancel, done: make(chan error, 1), store: store, snap: snap, log: log}
	rsrv.Store(s.resp)
	if cfg.ReplicaOf != "" {
		host, port, _ := node.ParseReplicaOf(cfg.ReplicaOf) // Validate accepted it
		repl.ReplicaOf(host, port)
	}
	if clus != nil {
		// The map's role, unless --replicaof (Sentinel's rewrite of the
		// configuration file) says otherwise; a primary first checks that
		// no other node of its shard took over while it was away.
		if replica, host, port := clus.MapRole(); cfg.ReplicaOf == "" && replica {
			repl.ReplicaOf(host, port)
			clus.Refresh()
		} else if cfg.ReplicaOf != "" {
			clus.Refresh()
		} else {
			pctx, pcancel := context.WithTimeout(ctx, 2*time.Second)
			clus.Probe(pctx)
			pcancel()
		}
		s.wg.Add(1)
		go func() { defer s.wg.Done(); clus.Run(ctx) }()
	}
	// Before the first request: a primary with --min-replicas-to-write
	// must not admit one while Run's goroutine has yet to start (the
	// double-admission window the option closes).
	repl.CheckWrites()
	s.wg.Add(1)
	go func() { defer s.wg.Done(); repl.Run(ctx) }()
	interval := opts.ExpiryInterval
	if interval <= 0 {
		interval = 100 * time.Millisecond
	}
	s.wg.Add(1)
	go func() { defer s.wg.Done(); nd.RunExpiry(ctx, interval) }()
	s.wg.Add(1)
	go func() { defer s.wg.Done(); nd.RunMaxMemory(ctx, 10*time.Millisecond) }()
	s.wg.Add(1)
	go func() { defer s.wg.Done(); nd.RunTracking(ctx) }()
	if snap != nil {
		s.wg.Add(1)
		go func() { defer s.wg.Done(); snap.Run(ctx, cfg.SaveInterval) }()
	}
	memLimit, memEvery := opts.MemoryLimit, opts.MemoryLimitInterval
	if memEvery <= 0 {
		memEvery = time.Second
	}
	s.wg.Add(1)
	go func() { defer s.wg.Done(); runMemoryLimit(ctx, memLimit, memEvery, nd.SetMemoryLimit) }()
	go func() { s.done <- s.resp.Serve(ln) }()
	return s, nil
}

// startCluster loads the slot map and builds the node's view of the
// cluster (docs/cluster.md): its own role read from replication, other
// nodes reached with masterauth, slots taken over installed by the node.
func startCluster(cfg node.Config, log *slog.Logger, repl *replication.Manager, nd *node.Node) (*cluster.Cluster, error) {
	c, err := cluster.New(cluster.Options{
		Path: cfg.ClusterConfig, Self: cfg.ClusterNodeID, FullCoverage: !cfg.ClusterPartialCoverage,
		Password: cfg.MasterAuth, Logger: log,
		Role: func() cluster.PeerRole {
			r := repl.Role()
			return cluster.PeerRole{Replica: r.Replica, Host: r.Host, Port: r.Port, LinkUp: r.State == "connected", Offset: r.Offset}
		},
		Follow: func(host string, port int) { repl.ReplicaOf(host, port) },
		Import: nd.ImportSlots,
	})
	if err != nil {
		return nil, err
	}
	nd.SetCluster(c)
	return c, nil
}

// newClock builds the server clock. It never starts below the stored
// high-water mark. The manual clock starts at start (Unix ns; 0 = the wall
// clock now). The real clock follows the wall clock, slewing toward it at
// most 1% when they differ; with start set, the "wall clock" it follows is
// start plus monotonic time (how a test simulates a wall clock that is
// behind or ahead).
func newClock(mode string, start, highWater int64) clock.Own {
	if mode == "manual" {
		if start == 0 {
			start = time.Now().UnixNano()
		}
		return clock.NewManual(max(start, highWater))
	}
	o := clock.RealOptions{HighWater: highWater}
	if start != 0 {
		base := time.Now()
		o.Wall = func() int64 { return start + int64(time.Since(base)) }
	}
	return clock.NewRealWith(o)
}

// Close stops the server without a final snapshot (Shutdown saves).
func (s *Server) Close(ctx context.Context) error { return s.Shutdown(ctx, false) }

// Shutdown stops the server (once; later calls return the first one's
// result): no new connections, existing ones closed, every change sent
// to the replicas and acknowledged by them, the background loops
// stopped, then, if save is set and persistence is on, a final snapshot,
// and the store closed. It waits at most until ctx ends for connections
// to finish and, within ctx and shutdown-timeout, for the replicas' acks;
// after SHUTDOWN NOW it sends the changes without waiting for acks.
func (s *Server) Shutdown(ctx context.Context, save bool) error {
	s.stopOnce.Do(func() { s.stopErr = s.shutdown(ctx, save) })
	return s.stopErr
}

// shutdown is Shutdown's work, done once: later calls return its result.
// The clients go before the replicas are drained, so that no change is
// made after the drain: a replica promoted after a graceful stop holds
// every decision a client was answered. The background loops stop last:
// their context's end closes the replicas' links.
func (s *Server) shutdown(ctx context.Context, save bool) error {
	s.Replication.EndWaits() // a WAIT on a connection's goroutine would hold resp.Close up
	err := s.resp.Close(ctx)
	if s.RLS != nil {
		s.RLS.Close(ctx)
	}
	if caughtUp, lagging := s.Replication.Drain(ctx, s.Node.ShutdownWait()); lagging > 0 {
		s.log.Warn("stopping with replicas that did not acknowledge every change", "caught_up", caughtUp, "lagging", lagging)
	} else if caughtUp > 0 {
		s.log.Info("replicas acknowledged every change", "replicas", caughtUp)
	}
	s.cancel()
	if s.Metrics != nil {
		err = errors.Join(err, s.Metrics.Close(ctx))
	}
	if serr := <-s.done; err == nil {
		err = serr
	}
	s.wg.Wait()
	if s.store != nil {
		s.snap.Stop() // a BGSAVE still running ends before the store closes
		if save {
			start := time.Now()
			if serr := s.snap.Save(); serr != nil {
				err = errors.Join(err, fmt.Errorf("final snapshot: %w", serr))
			} else {
				s.log.Info("final snapshot written", "duration", time.Since(start).Round(time.Millisecond))
			}
		}
		if cerr := s.store.Close(); cerr != nil {
			err = errors.Join(err, cerr)
		}
	}
	return err
}

// ShutdownRequested is closed when a client runs SHUTDOWN.
func (s *Server) ShutdownRequested() <-chan struct{} { return s.Node.ShutdownRequested() }

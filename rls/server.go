package rls

import (
	"context"
	"crypto/tls"
	"fmt"
	"log/slog"
	"net"
	"os"
	"runtime"
	"strings"
	"sync"
	"time"

	pb "github.com/envoyproxy/go-control-plane/envoy/service/ratelimit/v3"
	"google.golang.org/grpc"
	"google.golang.org/grpc/credentials"
	"google.golang.org/grpc/health"
	healthpb "google.golang.org/grpc/health/grpc_health_v1"
)

// ServiceName is the gRPC service Envoy calls, and the name the health
// service reports it under.
const ServiceName = "envoy.service.ratelimit.v3.RateLimitService"

// Server serves the Service over gRPC, with the standard health service
// on the same port, and reloads the configuration directory when it
// changes (or when told, on SIGHUP).
type Server struct {
	Addr net.Addr
	svc  *Service
	g    *grpc.Server
	hs   *health.Server
	dir  string
	log  *slog.Logger

	mu      sync.Mutex // serializes reloads
	seen    string     // the directory's fingerprint at the last load
	serving bool
	stop    chan struct{}
	wg      sync.WaitGroup
}

// Listen serves svc on addr (TLS when tlsCfg is set: its ClientAuth
// decides mTLS). dir is the configuration directory to watch ("" for
// none); it is checked for changes every poll (1 s when 0).
func Listen(addr string, svc *Service, tlsCfg *tls.Config, dir string, poll time.Duration, log *slog.Logger) (*Server, error) {
	ln, err := net.Listen("tcp", addr)
	if err != nil {
		return nil, err
	}
	// Streams run on a fixed set of goroutines (one per P) instead of a
	// new one each: no goroutine start and stack growth per call.
	opts := []grpc.ServerOption{grpc.NumStreamWorkers(uint32(runtime.GOMAXPROCS(0)))}
	if tlsCfg != nil {
		opts = append(opts, grpc.Creds(credentials.NewTLS(tlsCfg)))
	}
	s := &Server{Addr: ln.Addr(), svc: svc, g: grpc.NewServer(opts...), hs: health.NewServer(), dir: dir, log: log, stop: make(chan struct{})}
	pb.RegisterRateLimitServiceServer(s.g, svc)
	healthpb.RegisterHealthServer(s.g, s.hs)
	s.SetServing(svc.n.Writable())
	if dir != "" {
		s.seen, _ = fingerprint(dir)
		if poll <= 0 {
			poll = time.Second
		}
		s.wg.Add(1)
		go s.watch(poll)
	}
	go s.g.Serve(ln)
	log.Info("Envoy rate limit service served", "addr", ln.Addr().String(), "config", dir, "domains", strings.Join(svc.Config().Domains(), ","))
	return s, nil
}

// Service returns the service the server serves.
func (s *Server) Service() *Service { return s.svc }

// SetServing sets the health of the service: SERVING on a node that
// takes writes (a primary), NOT_SERVING on a replica, so that Envoy
// sends its requests to the primary.
func (s *Server) SetServing(ok bool) {
	s.mu.Lock()
	defer s.mu.Unlock()
	st := healthpb.HealthCheckResponse_NOT_SERVING
	if ok {
		st = healthpb.HealthCheckResponse_SERVING
	}
	s.serving = ok
	s.hs.SetServingStatus("", st)
	s.hs.SetServingStatus(ServiceName, st)
}

// Reload loads the configuration directory again. A bad file keeps the
// running configuration: the error is returned, logged, counted
// (config_load_error) and shown by INFO rls.
func (s *Server) Reload() error {
	s.mu.Lock()
	defer s.mu.Unlock()
	fp, _ := fingerprint(s.dir)
	return s.reloadLocked(fp)
}

// reloadLocked loads the directory, whose fingerprint is now fp, with
// s.mu held.
func (s *Server) reloadLocked(fp string) error {
	s.seen = fp
	c, err := LoadDir(s.dir)
	st := s.svc.Stats()
	if err != nil {
		st.ConfigErrors.Add(1)
		msg := err.Error()
		st.LastConfigError.Store(&msg)
		s.log.Error("Envoy rate limit configuration not reloaded; the running one stays", "dir", s.dir, "err", err)
		return err
	}
	st.ConfigLoads.Add(1)
	st.LastConfigError.Store(nil)
	s.svc.SetConfig(c)
	s.log.Info("Envoy rate limit configuration reloaded", "dir", s.dir, "files", len(c.Files), "domains", strings.Join(c.Domains(), ","))
	return nil
}

// watch reloads when the directory's fingerprint changes.
func (s *Server) watch(every time.Duration) {
	defer s.wg.Done()
	t := time.NewTicker(every)
	defer t.Stop()
	for {
		select {
		case <-s.stop:
			return
		case <-t.C:
		}
		if fp, err := fingerprint(s.dir); err == nil {
			s.mu.Lock()
			if fp != s.seen {
				s.reloadLocked(fp)
			}
			s.mu.Unlock()
		}
	}
}

// fingerprint names, sizes and modification times of the directory's
// configuration files.
func fingerprint(dir string) (string, error) {
	files, err := configFiles(dir)
	if err != nil {
		return "", err
	}
	var b strings.Builder
	for _, path := range files {
		fi, err := os.Stat(path)
		if err != nil {
			return "", err
		}
		fmt.Fprintf(&b, "%s %d %d\n", path, fi.Size(), fi.ModTime().UnixNano())
	}
	return b.String(), nil
}

// Info writes INFO rls's fields.
func (s *Server) Info(line func(k string, v any)) {
	st := s.svc.Stats()
	serving := 0
	s.mu.Lock()
	if s.serving {
		serving = 1
	}
	s.mu.Unlock()
	line("rls_addr", s.Addr.String())
	line("rls_serving", serving)
	line("rls_config_dir", s.dir)
	line("rls_domains", len(s.svc.Config().Domains()))
	line("rls_config_loads", st.ConfigLoads.Load())
	line("rls_config_errors", st.ConfigErrors.Load())
	last := ""
	if p := st.LastConfigError.Load(); p != nil {
		last = *p
	}
	line("rls_config_last_error", strings.NewReplacer("\r", " ", "\n", " ").Replace(last))
}

// Close stops serving: requests in flight finish (until ctx ends).
func (s *Server) Close(ctx context.Context) {
	close(s.stop)
	s.wg.Wait()
	done := make(chan struct{})
	go func() { s.g.GracefulStop(); close(done) }()
	select {
	case <-done:
	case <-ctx.Done():
		s.g.Stop()
	}
	s.svc.Close()
}

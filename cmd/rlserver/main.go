// Command rlserver is a rate-limiting server that speaks the Redis
// protocol. This file is wiring only: flags in, server.Start, signals.
package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"log/slog"
	"math/bits"
	"net"
	"os"
	"os/signal"
	"path/filepath"
	"runtime"
	"runtime/debug"
	"strconv"
	"strings"
	"syscall"
	"time"

	"github.com/rlserver/rlserver/commands"
	"github.com/rlserver/rlserver/configfile"
	"github.com/rlserver/rlserver/internal/ascii"
	"github.com/rlserver/rlserver/node"
	"github.com/rlserver/rlserver/server"
)

// defaultGCPercent is the garbage collector's target when GOGC is not set.
// A large keyspace lives outside the Go heap (engine/mem.go); what is left
// on it (small shards, connections, scratch) holds few pointers, so a
// collection costs little and a low target keeps the resident memory close
// to the live data (Go's default, 100, lets the heap reach twice it).
const defaultGCPercent = 25

func main() {
	if os.Getenv("GOGC") == "" {
		debug.SetGCPercent(defaultGCPercent)
	}
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stop()
	if err := run(ctx, os.Args[1:], os.Stderr); err != nil {
		if errors.Is(err, flag.ErrHelp) {
			os.Exit(0)
		}
		fmt.Fprintln(os.Stderr, "rlserver:", err)
		os.Exit(1)
	}
}

// applyConfigFile sets the flags from the configuration file at path
// (docs/protocol.md, "Configuration file"): each setting is a flag's name
// without dashes, its arguments the value (replicaof's host and port
// joined by a space). An unknown name or a bad value is an error naming
// the file and the line.
func applyConfigFile(fs *flag.FlagSet, path string) error {
	settings, err := configfile.Parse(path)
	if err != nil {
		return fmt.Errorf("configuration file: %w", err)
	}
	for _, s := range settings {
		at := fmt.Sprintf("%s:%d", path, s.Line)
		if fs.Lookup(s.Name) == nil {
			return fmt.Errorf("%s: unknown setting %q", at, s.Name)
		}
		if len(s.Args) == 0 {
			return fmt.Errorf("%s: %s needs a value", at, s.Name)
		}
		v := strings.Join(s.Args, " ")
		switch s.Name {
		case "replicaof":
			if _, _, err := node.ParseReplicaOf(v); err != nil {
				return fmt.Errorf("%s: %w", at, err)
			}
		case "repl-backlog-size":
			if _, err := node.ParseSize(v); err != nil {
				return fmt.Errorf("%s: repl-backlog-size: %w", at, err)
			}
		}
		if err := fs.Set(s.Name, v); err != nil {
			return fmt.Errorf("%s: %s: invalid value %q: %w", at, s.Name, v, err)
		}
	}
	return nil
}

// defaultShards is a power of two sized to the CPUs: enough shards that
// concurrent requests rarely meet on one lock.
func defaultShards() int {
	n := 8 * runtime.NumCPU()
	return 1 << bits.Len(uint(n-1))
}

// run parses args, starts the server and serves until ctx ends (a signal)
// or a client sends SHUTDOWN; both end cleanly with a nil error.
func run(ctx context.Context, args []string, stderr io.Writer) error {
	fs := flag.NewFlagSet("rlserver", flag.ContinueOnError)
	fs.SetOutput(stderr)
	var (
		cfg        node.Config
		clockStart int64
	)
	fs.StringVar(&cfg.Bind, "bind", "127.0.0.1", "address to listen on")
	fs.IntVar(&cfg.Port, "port", 6379, "TCP port (0 picks a free one)")
	fs.StringVar(&cfg.Dir, "dir", "./data", "data directory: Pebble snapshots of every limit and the clock mark")
	fs.DurationVar(&cfg.SaveInterval, "save-interval", time.Second, "snapshot interval: changes since the last snapshot are written and synced; 0 = memory only")
	fs.StringVar(&cfg.RequirePass, "requirepass", "", "password clients must AUTH with (empty: none)")
	protected := fs.String("protected-mode", "yes", "yes: while the default user has no password, refuse clients off the loopback interface (Redis's -DENIED); no: serve them")
	maxMemory := fs.String("maxmemory", "0", "memory limit (Redis's size syntax, 0: none): past it, new keys are refused (-OOM) or make room, per --maxmemory-policy")
	policy := fs.String("maxmemory-policy", "noeviction", "past --maxmemory: noeviction refuses new keys (existing ones keep working), volatile-ttl evicts the keys nearest their reset")
	outLimit := fs.String("client-output-buffer-limit", "normal 0 0 0", "disconnect a client whose unread replies pass <hard> bytes, or stay past <soft> for <soft seconds>: \"normal <hard> <soft> <soft seconds>\" (Redis's syntax; 0 is no limit)")
	fs.StringVar(&cfg.ACLFile, "aclfile", "", "users file in Redis's ACL file format (user <name> <rule> ...): read at start, ACL LOAD rereads it, ACL SAVE writes it; not with --requirepass")
	fs.StringVar(&cfg.MasterAuth, "masterauth", "", "password this node gives its primary when it is a replica")
	fs.StringVar(&cfg.ReplicaOf, "replicaof", "", `"host port" of a primary to follow as a replica (empty: start as a primary)`)
	fs.IntVar(&cfg.ReplicaPriority, "replica-priority", 100, "INFO's slave_priority, for Redis Sentinel (lower is promoted first; 0 never)")
	fs.StringVar(&cfg.ReplicaAnnounceIP, "replica-announce-ip", "", "address a replica tells its primary to list for it (empty: the connection's)")
	fs.IntVar(&cfg.ReplicaAnnouncePort, "replica-announce-port", 0, "port a replica tells its primary to list for it (0: --port)")
	fs.IntVar(&cfg.MinReplicasToWrite, "min-replicas-to-write", 0, "a primary refuses writes (-NOREPLICAS) while fewer replicas acknowledged within --min-replicas-max-lag (0: off)")
	fs.IntVar(&cfg.ShutdownTimeout, "shutdown-timeout", 10, "seconds a graceful stop waits for the replicas to acknowledge every change (0: send without waiting)")
	fs.IntVar(&cfg.MinReplicasMaxLag, "min-replicas-max-lag", 10, "seconds since a replica's last acknowledgement for it to count as good (--min-replicas-to-write)")
	fs.DurationVar(&cfg.ReplBatchInterval, "repl-batch-interval", 0, "least time between two sends of a primary's changes to its replicas (0: each round of requests' changes at once); longer sends fewer, larger writes, for less CPU and up to this much more lag (at most 1s)")
	backlog := fs.String("repl-backlog-size", "1mb", "replication backlog, in Redis's size syntax (1m = 10^6 bytes, 1mb = 2^20); at least 16kb")
	fs.IntVar(&cfg.MaxClients, "maxclients", 10000, "most simultaneous client connections")
	fs.IntVar(&cfg.Timeout, "timeout", 0, "close clients idle this many seconds (0: never)")
	fs.IntVar(&cfg.Shards, "shards", defaultShards(), "keyspace shards, a power of two")
	fs.StringVar(&cfg.ClockMode, "clock", "real", "server clock: real, or manual (moved only by DEBUG CLOCK; for tests)")
	fs.Int64Var(&clockStart, "clock-start", 0, "clock start as Unix ms (0: the wall clock now)")
	fs.StringVar(&cfg.TLSCert, "tls-cert", "", "TLS certificate file (PEM); with --tls-key, serve TLS")
	fs.StringVar(&cfg.TLSKey, "tls-key", "", "TLS private key file (PEM)")
	fs.StringVar(&cfg.TLSCACert, "tls-ca-cert", "", "CA certificate file (PEM): clients of the RESP and --rls-addr ports must present a certificate it signed (mutual TLS)")
	fs.StringVar(&cfg.RLS.Addr, "rls-addr", "", "serve Envoy's rate limit service (gRPC envoy.service.ratelimit.v3, and gRPC health) on host:port (off when empty)")
	fs.StringVar(&cfg.RLS.Config, "rls-config", "", "directory of envoyproxy/ratelimit YAML files (*.yaml, *.yml) for --rls-addr; reloaded when they change and on SIGHUP")
	fs.BoolVar(&cfg.RLS.ShadowMode, "rls-shadow-mode", false, "answer OK to every rate limit service request, counting what would have been refused (upstream's SHADOW_MODE)")
	fs.BoolVar(&cfg.RLS.ChargeEach, "rls-charge-each", false, "charge every admitting descriptor even when another refuses the request, as envoyproxy/ratelimit does (off: a request is all or nothing)")
	fs.BoolVar(&cfg.RLS.QuotaMode, "rls-quota-mode", false, "put every rate limit rule in quota mode: over its limit, reported but never refused (upstream's GLOBAL_QUOTA_MODE)")
	fs.BoolVar(&cfg.RLS.DynamicMetadata, "rls-response-dynamic-metadata", false, "add the request's summary and quota mode's violations to responses as dynamic metadata (upstream's RESPONSE_DYNAMIC_METADATA)")
	fs.BoolVar(&cfg.RLS.ResponseHeaders, "rls-response-headers", false, "add the deciding limit's RateLimit-Limit, -Remaining and -Reset headers (upstream's LIMIT_RESPONSE_HEADERS_ENABLED)")
	fs.StringVar(&cfg.RLS.LimitHeader, "rls-limit-header", "RateLimit-Limit", "name of the limit header (upstream's LIMIT_LIMIT_HEADER)")
	fs.StringVar(&cfg.RLS.RemainingHeader, "rls-remaining-header", "RateLimit-Remaining", "name of the remaining header (upstream's LIMIT_REMAINING_HEADER)")
	fs.StringVar(&cfg.RLS.ResetHeader, "rls-reset-header", "RateLimit-Reset", "name of the reset header (upstream's LIMIT_RESET_HEADER)")
	fs.StringVar(&cfg.LogLevel, "log-level", "info", "log level: debug, info, warn, error")
	fs.StringVar(&cfg.LogFormat, "log-format", "text", "log format: text or json")
	fs.StringVar(&cfg.ClusterConfig, "cluster-config", "", "slot map file (Redis's nodes.conf line format): cluster mode, with --cluster-node-id; SIGHUP reloads it")
	fs.StringVar(&cfg.ClusterNodeID, "cluster-node-id", "", "this node's 40-hex-digit id in --cluster-config")
	coverage := fs.String("cluster-require-full-coverage", "yes", "yes: refuse a map that leaves a slot unowned; no: serve the owned slots, unowned ones answer -CLUSTERDOWN")
	fs.StringVar(&cfg.MetricsAddr, "metrics-addr", "", "serve Prometheus metrics at http://ADDR/metrics (off when empty; a bare :port listens on loopback)")
	fs.IntVar(&cfg.MetricsTopKeys, "metrics-top-keys", 0, "export the N most rejected keys as rlserver_top_rejected{key} (0: none; a label per key)")
	fs.Int64Var(&cfg.SlowlogSlowerThan, "slowlog-log-slower-than", 10000, "SLOWLOG keeps commands taking at least this many µs (negative: off, 0: every command)")
	fs.IntVar(&cfg.SlowlogMaxLen, "slowlog-max-len", 128, "SLOWLOG keeps this many entries")
	fs.IntVar(&cfg.ACLLogMaxLen, "acllog-max-len", 128, "ACL LOG keeps this many entries")
	fs.Int64Var(&cfg.LatencyThreshold, "latency-monitor-threshold", 0, "LATENCY records commands taking at least this many ms (0: off)")
	pprofAddr := fs.String("pprof-addr", "", "serve Go's net/http/pprof profiles on this address (loopback only, e.g. 127.0.0.1:6060; off when empty)")
	fs.Usage = func() {
		// Every flag with its default, the empty and zero ones too.
		fmt.Fprintf(stderr, "Usage: rlserver [CONFIG_FILE] [flags]\n\nA configuration file takes the flags' names without dashes, in Redis's syntax (port 7001,\nreplicaof 127.0.0.1 7000); flags override it. CONFIG REWRITE rewrites it.\n\nFlags:\n")
		fs.VisitAll(func(f *flag.Flag) {
			def := f.DefValue
			if def == "" {
				def = `""`
			}
			fmt.Fprintf(stderr, "  --%s\n    \t%s (default %s)\n", f.Name, f.Usage, def)
		})
	}
	var cfgFile string
	if len(args) > 0 && !strings.HasPrefix(args[0], "-") {
		cfgFile, args = args[0], args[1:]
		if err := applyConfigFile(fs, cfgFile); err != nil {
			return err
		}
	}
	if err := fs.Parse(args); err != nil {
		return err
	}
	if fs.NArg() > 0 {
		return fmt.Errorf("unexpected argument %q", fs.Arg(0))
	}
	if cfgFile != "" {
		abs, err := filepath.Abs(cfgFile)
		if err != nil {
			return err
		}
		cfg.ConfigFile = abs
		// The settings given (on the command line or in the file, whose
		// lines are rewritten in place) as the file's lines.
		fs.Visit(func(f *flag.Flag) {
			v := f.Value.String()
			if _, err := strconv.ParseFloat(v, 64); err != nil && f.Name != "replicaof" {
				v = configfile.Quote(v)
			}
			cfg.CommandLine = append(cfg.CommandLine, configfile.Update{Name: f.Name, Line: f.Name + " " + v})
		})
	}
	size, err := node.ParseSize(*backlog)
	if err != nil {
		return fmt.Errorf("--repl-backlog-size: %w", err)
	}
	cfg.ReplBacklogSize = size
	if cfg.MaxMemory, err = node.ParseSize(*maxMemory); err != nil {
		return fmt.Errorf("--maxmemory: %w", err)
	}
	if cfg.MaxMemoryPolicy, err = node.ParsePolicy(*policy); err != nil {
		return fmt.Errorf("--%w", err)
	}
	if cfg.OutputLimit, err = node.ParseOutputLimit(*outLimit); err != nil {
		return fmt.Errorf("--%w", err)
	}
	for _, f := range []struct {
		name, v string
		no      *bool
	}{{"protected-mode", *protected, &cfg.ProtectedModeOff}, {"cluster-require-full-coverage", *coverage, &cfg.ClusterPartialCoverage}} {
		switch v := ascii.Lower(f.v); v {
		case "yes", "no":
			*f.no = v == "no"
		default:
			return fmt.Errorf("--%s must be yes or no, got %q", f.name, f.v)
		}
	}
	cfg.ClockStartMs = clockStart
	if err := cfg.Validate(); err != nil {
		return err
	}
	if err := checkDir(cfg.Dir); err != nil {
		return err
	}
	cfg.Limits = node.DefaultLimits

	level := new(slog.LevelVar)
	lv, err := node.ParseLogLevel(cfg.LogLevel)
	if err != nil {
		return err
	}
	level.Set(lv)
	var h slog.Handler
	switch cfg.LogFormat {
	case "text":
		h = slog.NewTextHandler(stderr, &slog.HandlerOptions{Level: level})
	case "json":
		h = slog.NewJSONHandler(stderr, &slog.HandlerOptions{Level: level})
	default:
		return fmt.Errorf("--log-format must be text or json, got %q", cfg.LogFormat)
	}
	log := slog.New(h)

	if *pprofAddr != "" {
		if err := servePprof(*pprofAddr, log); err != nil {
			return err
		}
	}
	cfg.PprofAddr = *pprofAddr
	// SIGHUP reloads the cluster map and the rate limit service's
	// configuration; caught before the server starts,
	// so an early one never kills the process.
	hup := make(chan os.Signal, 1)
	signal.Notify(hup, syscall.SIGHUP)
	defer signal.Stop(hup)
	srv, err := server.Start(server.Options{Config: cfg, ClockStart: cfg.ClockStartMs * int64(time.Millisecond), Logger: log, LogLevel: level})
	if err != nil {
		return err
	}
	if !cfg.ProtectedModeOff && !srv.Node.PasswordRequired() && !isLoopbackBind(cfg.Bind) {
		log.Warn("protected mode: no password is set, so clients off the loopback interface are refused with -DENIED; set --requirepass, or --protected-mode no behind a firewall", "bind", cfg.Bind)
	}
	persistence := "off"
	if cfg.SaveInterval > 0 {
		persistence = "every " + cfg.SaveInterval.String()
	}
	log.Info("rlserver started", "version", commands.Version, "addr", srv.Addr.String(), "shards", srv.Engine.Shards(),
		"clock", cfg.ClockMode, "dir", cfg.Dir, "persistence", persistence, "keys_loaded", srv.Loaded.Keys,
		"expired_dropped", srv.Loaded.Expired, "load_time", srv.Loaded.Duration.Round(time.Millisecond))
	save := true
	for stopped := false; !stopped; {
		select {
		case <-hup:
			reloaded := false
			if c := srv.Node.Cluster(); c != nil {
				reloaded = true
				if err := c.Reload(); err != nil {
					log.Error("cluster map not reloaded; the loaded one stays", "path", cfg.ClusterConfig, "err", err)
				}
			}
			if srv.RLS != nil && cfg.RLS.Config != "" {
				reloaded = true
				srv.RLS.Reload() // logs, counts and keeps the running configuration on an error
			}
			if !reloaded {
				log.Info("SIGHUP ignored: no cluster map or rate limit configuration to reload")
			}
		case <-ctx.Done():
			log.Info("signal received, shutting down")
			stopped = true
		case <-srv.ShutdownRequested():
			save = srv.Node.ShutdownSave()
			log.Info("SHUTDOWN received, shutting down", "save", save)
			stopped = true
		}
	}
	// Ten seconds for the clients' connections to close, and the wait for
	// the replicas' acks (shutdown-timeout) on top.
	cctx, cancel := context.WithTimeout(context.Background(), 10*time.Second+srv.Node.ShutdownWait())
	defer cancel()
	if err := srv.Shutdown(cctx, save); err != nil {
		return fmt.Errorf("shutdown: %w", err)
	}
	log.Info("rlserver stopped")
	return nil
}

// checkDir refuses a --dir that exists and is not a directory, or that
// cannot be examined, before anything starts.
func checkDir(dir string) error {
	if st, err := os.Stat(dir); err == nil && !st.IsDir() {
		return fmt.Errorf("--dir %s: not a directory", dir)
	} else if err != nil && !errors.Is(err, os.ErrNotExist) {
		return fmt.Errorf("--dir %s: %w", dir, err)
	}
	return nil
}

// isLoopbackBind reports whether every address bind names is a loopback
// one (then protected mode changes nothing).
func isLoopbackBind(bind string) bool {
	for _, a := range strings.Fields(bind) {
		if a == "localhost" {
			continue
		}
		if ip := net.ParseIP(strings.TrimPrefix(a, "-")); ip == nil || !ip.IsLoopback() {
			return false
		}
	}
	return true
}

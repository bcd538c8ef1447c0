package node

import (
	"errors"
	"fmt"
	"log/slog"
	"math"
	"slices"
	"sort"
	"strconv"
	"strings"
	"time"

	"github.com/rlserver/rlserver/commands"
	"github.com/rlserver/rlserver/configfile"
	"github.com/rlserver/rlserver/engine"
	"github.com/rlserver/rlserver/internal/ascii"
	"github.com/rlserver/rlserver/internal/redisint"
)

// Limits bound what one request may carry (docs/protocol.md, "Errors and
// bad input"). Exceeding one gets an error reply and the connection is
// closed.
type Limits struct {
	MaxArgs   int // arguments per command, name included
	MaxArgLen int // bytes per argument
	MaxKeyLen int // bytes per key argument
	MaxOutput int // bytes of replies pending for one connection
}

// DefaultLimits are the limits every server runs with.
var DefaultLimits = Limits{MaxArgs: 1024, MaxArgLen: 64 << 10, MaxKeyLen: 1 << 10, MaxOutput: 64 << 20}

// Config is the node's configuration, as flags give it and CONFIG GET
// reports it. Fields that CONFIG SET may change at run time are read with
// the node's accessors.
type Config struct {
	Bind         string
	Port         int
	Dir          string
	SaveInterval time.Duration // 0: memory only
	RequirePass  string
	// ProtectedModeOff is --protected-mode no: peers off the loopback
	// interface are served even with no password.
	ProtectedModeOff bool
	// MaxMemory (bytes, 0: none) and MaxMemoryPolicy are --maxmemory and
	// --maxmemory-policy (maxmemory.go).
	MaxMemory       int64
	MaxMemoryPolicy engine.EvictPolicy
	// OutputLimit is --client-output-buffer-limit's normal class.
	OutputLimit OutputLimit
	MasterAuth  string
	ReplicaOf   string // "host port" of the primary to follow, "" for none
	// ReplicaPriority is what INFO replication's slave_priority shows
	// (Sentinel promotes the lowest; 0 never). ReplicaAnnounceIP and
	// ReplicaAnnouncePort, if set, are what a replica tells its primary
	// to list for it. ReplBacklogSize is the backlog's size in bytes.
	ReplicaPriority     int
	ReplicaAnnounceIP   string
	ReplicaAnnouncePort int
	ReplBacklogSize     int64
	// MinReplicasToWrite, if not 0, makes a primary refuse writes while
	// fewer replicas than that have acknowledged within
	// MinReplicasMaxLag seconds (Redis's min-replicas-to-write).
	MinReplicasToWrite int
	MinReplicasMaxLag  int
	// ReplBatchInterval is the least time between two sends of a
	// primary's changes to its replicas that writes wake (0: at once);
	// replication.Options.BatchInterval.
	ReplBatchInterval time.Duration
	// ShutdownTimeout is how many seconds a graceful stop waits for the
	// replicas to acknowledge every change (Redis's shutdown-timeout;
	// 0: it sends them without waiting).
	ShutdownTimeout int
	// ConfigFile is the configuration file the server was started with
	// (an absolute path), which CONFIG REWRITE rewrites; "" for none.
	// CommandLine are the settings given as flags, as the file's lines
	// (CONFIG REWRITE writes them too, as Redis writes every setting
	// that differs from its default).
	ConfigFile  string
	CommandLine []configfile.Update
	// ACLFile is the users' file (--aclfile): read at start and by ACL
	// LOAD, written by ACL SAVE (docs/protocol.md, "Users and
	// permissions"); "" for none.
	ACLFile string
	// ClockStartMs and PprofAddr are the flags of the same names, for
	// CONFIG GET (the wiring uses them). ClockStartMs is Unix ms, from 0
	// (the wall clock now) to MaxClockStartMs.
	ClockStartMs int64
	PprofAddr    string
	MaxClients   int
	Timeout      int // idle seconds before a client is closed; 0 never
	Shards       int
	ClockMode    string // "real" or "manual"
	TLSCert      string
	TLSKey       string
	// TLSCACert, if set, is the CA that client certificates must be
	// signed by: the RESP and the rate limit service ports then require
	// one (mutual TLS, Redis's tls-ca-cert-file with tls-auth-clients).
	TLSCACert   string
	LogLevel    string
	LogFormat   string
	MetricsAddr string
	// MetricsTopKeys, if not 0, exports that many most rejected keys as
	// rlserver_top_rejected{key} (a label per key: off by default).
	MetricsTopKeys int
	// SlowlogSlowerThan (µs; negative: off, 0: every command) and
	// SlowlogMaxLen are Redis's slowlog-log-slower-than and
	// slowlog-max-len; LatencyThreshold (ms; 0: off) is its
	// latency-monitor-threshold.
	SlowlogSlowerThan int64
	SlowlogMaxLen     int
	// ACLLogMaxLen is Redis's acllog-max-len: the most entries ACL LOG
	// keeps.
	ACLLogMaxLen     int
	LatencyThreshold int64
	// ClusterConfig, if set, is the slot map file that puts the node in
	// cluster mode (docs/cluster.md); ClusterNodeID is this node's id in
	// it. ClusterPartialCoverage lets a map leave slots unowned
	// (--cluster-require-full-coverage no).
	ClusterConfig          string
	ClusterNodeID          string
	ClusterPartialCoverage bool
	Limits                 Limits
	// RLS is Envoy's rate limit service front (docs/envoy.md).
	RLS RLSConfig
}

// RLSConfig configures Envoy's rate limit service front: its gRPC
// address ("" is off), its configuration directory, and upstream's
// options.
type RLSConfig struct {
	Addr   string
	Config string
	// ShadowMode answers OK to every request (SHADOW_MODE).
	ShadowMode bool
	// ChargeEach charges every admitting descriptor even when another
	// refuses the request, as envoyproxy/ratelimit does.
	ChargeEach bool
	// QuotaMode puts every rule in quota mode (GLOBAL_QUOTA_MODE);
	// DynamicMetadata adds upstream's dynamic metadata to responses
	// (RESPONSE_DYNAMIC_METADATA).
	QuotaMode, DynamicMetadata bool
	// ResponseHeaders adds RateLimit-* headers (LIMIT_RESPONSE_HEADERS_ENABLED)
	// under these names (upstream's LIMIT_*_HEADER; defaults when empty).
	ResponseHeaders                           bool
	LimitHeader, RemainingHeader, ResetHeader string
}

// Validate checks every value, so that a start with a bad one fails with
// a message naming it, and refuses the settings of features not built
// yet, so that none is silently ignored. Empty ClockMode, LogLevel and
// LogFormat mean real, info and text. It reads no file: whether Dir can
// be used is for the store to find out.
func (c Config) Validate() error {
	switch {
	case c.SaveInterval < 0:
		return errors.New("--save-interval must not be negative")
	case c.Dir == "":
		return errors.New("--dir must not be empty")
	}
	if c.ReplicaOf != "" {
		if _, _, err := ParseReplicaOf(c.ReplicaOf); err != nil {
			return err
		}
	}
	switch {
	case c.ReplicaPriority < 0:
		return errors.New("--replica-priority must not be negative")
	case c.ReplicaAnnouncePort < 0 || c.ReplicaAnnouncePort > 65535:
		return errors.New("--replica-announce-port must be a port number")
	case c.ReplBacklogSize < 0:
		return errors.New("--repl-backlog-size must not be negative")
	case c.MinReplicasToWrite < 0:
		return errors.New("--min-replicas-to-write must not be negative")
	case !replBatchIntervalOK(c.ReplBatchInterval):
		return errors.New("--repl-batch-interval must be from 0 to 1s")
	case c.MinReplicasMaxLag < 0:
		return errors.New("--min-replicas-max-lag must not be negative")
	case c.ShutdownTimeout < 0:
		return errors.New("--shutdown-timeout must not be negative")
	case (c.ClusterConfig == "") != (c.ClusterNodeID == ""):
		return errors.New("--cluster-config and --cluster-node-id must be given together")
	case c.ACLFile != "" && c.RequirePass != "":
		// Redis refuses users both in redis.conf and in an ACL file; here
		// the default user's password is the setting that can clash.
		return errors.New("--requirepass together with --aclfile is invalid: this setup is very likely to lead to configuration errors and security holes; give the default user's password in the ACL file (user default on >password ...) or use --requirepass, but not both")
	case c.MetricsTopKeys < 0:
		return errors.New("--metrics-top-keys must not be negative")
	case c.SlowlogMaxLen < 0:
		return errors.New("--slowlog-max-len must not be negative")
	case c.ACLLogMaxLen < 0:
		return errors.New("--acllog-max-len must not be negative")
	case c.LatencyThreshold < 0:
		return errors.New("--latency-monitor-threshold must not be negative")
	case (c.TLSCert == "") != (c.TLSKey == ""):
		return errors.New("--tls-cert and --tls-key must be given together")
	case c.TLSCACert != "" && c.TLSCert == "":
		return errors.New("--tls-ca-cert needs --tls-cert and --tls-key")
	case c.RLS.Config != "" && c.RLS.Addr == "":
		return errors.New("--rls-config needs --rls-addr")
	case c.MaxClients < 1:
		return errors.New("--maxclients must be at least 1")
	case c.Timeout < 0:
		return errors.New("--timeout must not be negative")
	case c.Shards <= 0:
		return errors.New("shards must be positive")
	case c.Shards&(c.Shards-1) != 0 || c.Shards > engine.MaxShards:
		return fmt.Errorf("shards must be a power of two up to %d, got %d", engine.MaxShards, c.Shards)
	case c.ClockStartMs < 0 || c.ClockStartMs > MaxClockStartMs:
		// Every time the engine keeps is a clock reading or after one, so
		// none is before 1970: RL.LOG's stored log has no form for one.
		return fmt.Errorf("--clock-start must be from 0 to %d (Unix ms), got %d", MaxClockStartMs, c.ClockStartMs)
	case c.ClockMode != "" && c.ClockMode != "real" && c.ClockMode != "manual":
		return fmt.Errorf("clock must be real or manual, got %q", c.ClockMode)
	case c.LogFormat != "" && c.LogFormat != "text" && c.LogFormat != "json":
		return fmt.Errorf("--log-format must be text or json, got %q", c.LogFormat)
	}
	if c.LogLevel != "" {
		if _, err := ParseLogLevel(c.LogLevel); err != nil {
			return err
		}
	}
	return nil
}

// ParseReplicaOf parses --replicaof's "host port".
func ParseReplicaOf(v string) (host string, port int, err error) {
	f := strings.Fields(v)
	if len(f) != 2 {
		return "", 0, fmt.Errorf("--replicaof must be \"host port\", got %q", v)
	}
	p, err := strconv.Atoi(f[1])
	if err != nil || p < 1 || p > 65535 {
		return "", 0, fmt.Errorf("--replicaof: invalid port %q", f[1])
	}
	return f[0], p, nil
}

// ParseSize parses a size in Redis's syntax (its memtoull): digits, then
// an optional unit, any case: k, m, g for 1000, 1000², 1000³ bytes; kb,
// mb, gb for 1024, 1024², 1024³.
func ParseSize(v string) (int64, error) {
	s := ascii.Lower(v)
	mult := int64(1)
	for _, u := range []struct {
		suffix string
		mult   int64
	}{{"kb", 1 << 10}, {"mb", 1 << 20}, {"gb", 1 << 30}, {"k", 1e3}, {"m", 1e6}, {"g", 1e9}, {"b", 1}} {
		if strings.HasSuffix(s, u.suffix) {
			s, mult = strings.TrimSuffix(s, u.suffix), u.mult
			break
		}
	}
	n, err := strconv.ParseInt(s, 10, 64)
	if err != nil || strings.TrimLeft(s, "0123456789") != "" || (n > 0 && mult > (1<<63-1)/n) { // no sign
		return 0, fmt.Errorf("invalid size %q", v)
	}
	return n * mult, nil
}

// OutputLimit is Redis's client-output-buffer-limit for the normal class:
// a client whose unread replies pass Hard bytes, or stay past Soft bytes
// for SoftSeconds, is disconnected. 0 turns a limit off.
type OutputLimit struct {
	Hard, Soft  int64
	SoftSeconds int
}

// String is the setting in Redis's syntax.
func (o OutputLimit) String() string {
	return fmt.Sprintf("normal %d %d %d", o.Hard, o.Soft, o.SoftSeconds)
}

// ParseOutputLimit parses --client-output-buffer-limit in Redis's syntax:
// "normal <hard> <soft> <soft seconds>", sizes as ParseSize reads them.
// rlserver has one class of clients: the normal one.
func ParseOutputLimit(v string) (OutputLimit, error) {
	f := strings.Fields(v)
	if len(f) != 4 || !ascii.EqualFold(f[0], "normal") {
		return OutputLimit{}, fmt.Errorf("client-output-buffer-limit must be \"normal <hard> <soft> <soft seconds>\" (rlserver's clients are all of the normal class), got %q", v)
	}
	hard, err1 := ParseSize(f[1])
	soft, err2 := ParseSize(f[2])
	secs, err3 := strconv.Atoi(f[3])
	if err1 != nil || err2 != nil || err3 != nil || secs < 0 {
		return OutputLimit{}, fmt.Errorf("client-output-buffer-limit: invalid value %q", v)
	}
	return OutputLimit{Hard: hard, Soft: soft, SoftSeconds: secs}, nil
}

// configInt reads a CONFIG SET integer as Redis's numeric parameters do:
// string2ll's digits ("0", or an optional '-' and no leading zero: the
// number as Redis writes it), then the parameter's bounds, lo and hi
// included, each failure in Redis's words.
func configInt(v string, lo, hi int64) (int64, error) {
	k, ok := redisint.Parse([]byte(v))
	if !ok {
		return 0, errors.New("argument couldn't be parsed into an integer")
	}
	if k < lo || k > hi {
		return 0, fmt.Errorf("argument must be between %d and %d inclusive", lo, hi)
	}
	return k, nil
}

// ParseLogLevel parses a --log-level value: debug, info, warn, error, and
// Redis's verbose, notice, warning.
func ParseLogLevel(v string) (slog.Level, error) {
	switch ascii.Lower(v) {
	case "debug", "verbose":
		return slog.LevelDebug, nil
	case "info", "notice":
		return slog.LevelInfo, nil
	case "warn", "warning":
		return slog.LevelWarn, nil
	case "error":
		return slog.LevelError, nil
	}
	return 0, fmt.Errorf("invalid log level %q", v)
}

// RewriteConfig is CONFIG REWRITE: the settings that changed since the
// start (CONFIG SET) and the role (replicaof) are written into the
// configuration file, Redis's way (configfile.Rewrite), so a node
// restarted after a failover comes back in the role it was given.
// Inside EXEC it runs once EXEC has, after the REPLICAOF it may follow
// (Sentinel's MULTI: SLAVEOF, then CONFIG REWRITE); a failure then is
// logged.
func (n *Node) RewriteConfig(s *commands.Session) error {
	cfg := n.Config()
	if cfg.ConfigFile == "" {
		return commands.ErrNoConfigFile
	}
	if n.deferInExec(s, func() {
		if err := n.RewriteConfig(nil); err != nil {
			n.log.Error("CONFIG REWRITE failed", "path", cfg.ConfigFile, "err", err)
		}
	}) {
		return nil
	}
	cfg = n.Config()
	ups := []configfile.Update{{Name: "replicaof"}}
	if cfg.ReplicaOf != "" {
		ups[0].Line = "replicaof " + cfg.ReplicaOf
	}
	for _, u := range cfg.CommandLine {
		if u.Name != "replicaof" { // the role as it is now, above
			ups = append(ups, u)
		}
	}
	n.cfgMu.Lock()
	changed := make([]string, 0, len(n.changed))
	for name := range n.changed {
		changed = append(changed, name)
	}
	n.cfgMu.Unlock()
	sort.Strings(changed)
	for _, p := range n.ConfigParams() {
		if !slices.Contains(changed, p.Name) {
			continue
		}
		name := p.Name
		if f, ok := fileNames[name]; ok {
			name = f
		}
		v := p.Get()
		if _, err := strconv.ParseInt(v, 10, 64); err != nil {
			v = configfile.Quote(v)
		}
		u := configfile.Update{Name: name, Line: name + " " + v}
		if i := slices.IndexFunc(ups, func(o configfile.Update) bool { return o.Name == name }); i >= 0 {
			ups[i] = u // changed since the start: the value now
		} else {
			ups = append(ups, u)
		}
	}
	if err := configfile.Rewrite(cfg.ConfigFile, ups); err != nil {
		return commands.Error("ERR Rewriting config file: " + err.Error())
	}
	n.log.Info("configuration file rewritten", "path", cfg.ConfigFile)
	return nil
}

// fileNames are the configuration file's names of the CONFIG parameters
// that differ: the file takes the flags' names.
var fileNames = map[string]string{"loglevel": "log-level", "tls-cert-file": "tls-cert", "tls-key-file": "tls-key", "tls-ca-cert-file": "tls-ca-cert"}

// ConfigParams are CONFIG GET's and CONFIG SET's parameters, in the order
// CONFIG GET * lists them.
func (n *Node) ConfigParams() []commands.ConfigParam {
	str := func(f func(c Config) string) func() string {
		return func() string { return f(n.Config()) }
	}
	ps := []commands.ConfigParam{
		{Name: "bind", Get: str(func(c Config) string { return c.Bind })},
		{Name: "port", Get: str(func(c Config) string { return strconv.Itoa(c.Port) })},
		{Name: "dir", Get: str(func(c Config) string { return c.Dir })},
		{Name: "save-interval", Get: str(func(c Config) string { return c.SaveInterval.String() })},
		// redis-benchmark reads save and appendonly at start: rlserver has
		// no RDB save points and no AOF.
		{Name: "save", Get: func() string { return "" }},
		{Name: "appendonly", Get: func() string { return "no" }},
		{Name: "requirepass", Get: func() string { return *n.requirePass.Load() },
			Set: func(v string) error {
				if n.Config().ACLFile != "" {
					return commands.ErrRequirePassACLFile
				}
				n.setRequirePass(v)
				n.requirePass.Store(&v)
				n.cfgMu.Lock()
				n.cfg.RequirePass = v
				n.cfgMu.Unlock()
				return nil
			}},
		{Name: "aclfile", Get: str(func(c Config) string { return c.ACLFile })},
		{Name: "masterauth", Get: str(func(c Config) string { return c.MasterAuth })},
		{Name: "replicaof", Get: str(func(c Config) string { return c.ReplicaOf })},
		{Name: "replica-priority", Get: str(func(c Config) string { return strconv.Itoa(c.ReplicaPriority) })},
		{Name: "replica-announce-ip", Get: str(func(c Config) string { return c.ReplicaAnnounceIP })},
		{Name: "replica-announce-port", Get: str(func(c Config) string { return strconv.Itoa(c.ReplicaAnnouncePort) })},
		{Name: "min-replicas-to-write", Get: str(func(c Config) string { return strconv.Itoa(c.MinReplicasToWrite) })},
		{Name: "min-replicas-max-lag", Get: str(func(c Config) string { return strconv.Itoa(c.MinReplicasMaxLag) })},
		{Name: "repl-backlog-size", Get: str(func(c Config) string { return strconv.FormatInt(c.ReplBacklogSize, 10) })},
		{Name: "repl-batch-interval", Get: str(func(c Config) string { return c.ReplBatchInterval.String() }),
			Set: func(v string) error {
				d, err := time.ParseDuration(v)
				if err != nil || !replBatchIntervalOK(d) {
					return errors.New("argument must be a duration from 0 to 1s")
				}
				if n.repl != nil {
					n.repl.SetBatchInterval(d)
				}
				n.cfgMu.Lock()
				n.cfg.ReplBatchInterval = d
				n.cfgMu.Unlock()
				return nil
			}},
		{Name: "maxclients", Get: func() string { return strconv.FormatInt(n.maxClients.Load(), 10) },
			Set: func(v string) error {
				k, err := configInt(v, 1, math.MaxUint32)
				if err != nil {
					return err
				}
				n.maxClients.Store(k)
				return nil
			}},
		{Name: "timeout", Get: func() string { return strconv.FormatInt(n.timeout.Load(), 10) },
			Set: func(v string) error {
				k, err := configInt(v, 0, math.MaxInt32)
				if err != nil {
					return err
				}
				n.timeout.Store(k)
				return nil
			}},
		{Name: "shutdown-timeout", Get: func() string { return strconv.FormatInt(n.shutdownTimeout.Load(), 10) },
			Set: func(v string) error {
				k, err := configInt(v, 0, math.MaxInt32)
				if err != nil {
					return err
				}
				n.shutdownTimeout.Store(k)
				return nil
			}},
		{Name: "shards", Get: func() string { return strconv.Itoa(n.engine.Shards()) }},
		{Name: "clock", Get: str(func(c Config) string { return c.ClockMode })},
		{Name: "clock-start", Get: str(func(c Config) string { return strconv.FormatInt(c.ClockStartMs, 10) })},
		{Name: "tls-cert-file", Get: str(func(c Config) string { return c.TLSCert })},
		{Name: "tls-key-file", Get: str(func(c Config) string { return c.TLSKey })},
		{Name: "tls-ca-cert-file", Get: str(func(c Config) string { return c.TLSCACert })},
		{Name: "rls-addr", Get: str(func(c Config) string { return c.RLS.Addr })},
		{Name: "rls-config", Get: str(func(c Config) string { return c.RLS.Config })},
		{Name: "rls-shadow-mode", Get: str(func(c Config) string { return yesNo(c.RLS.ShadowMode) })},
		{Name: "rls-charge-each", Get: str(func(c Config) string { return yesNo(c.RLS.ChargeEach) })},
		{Name: "rls-quota-mode", Get: str(func(c Config) string { return yesNo(c.RLS.QuotaMode) })},
		{Name: "rls-response-dynamic-metadata", Get: str(func(c Config) string { return yesNo(c.RLS.DynamicMetadata) })},
		{Name: "rls-response-headers", Get: str(func(c Config) string { return yesNo(c.RLS.ResponseHeaders) })},
		{Name: "rls-limit-header", Get: str(func(c Config) string { return c.RLS.LimitHeader })},
		{Name: "rls-remaining-header", Get: str(func(c Config) string { return c.RLS.RemainingHeader })},
		{Name: "rls-reset-header", Get: str(func(c Config) string { return c.RLS.ResetHeader })},
		{Name: "pprof-addr", Get: str(func(c Config) string { return c.PprofAddr })},
		{Name: "loglevel", Get: func() string { return ascii.Lower(n.logLevel.Level().String()) },
			Set: func(v string) error {
				l, err := ParseLogLevel(v)
				if err != nil {
					return errors.New("argument(s) must be one of the following: debug, verbose, notice, warning") // Redis's; info, warn and error are taken too
				}
				n.logLevel.Set(l)
				return nil
			}},
		{Name: "log-format", Get: str(func(c Config) string { return c.LogFormat })},
		{Name: "metrics-addr", Get: str(func(c Config) string { return c.MetricsAddr })},
		{Name: "maxmemory", Get: func() string { return strconv.FormatInt(n.maxMemory.Load(), 10) },
			Set: func(v string) error {
				b, err := ParseSize(v)
				if err != nil {
					return errors.New("argument must be a memory value")
				}
				n.maxMemory.Store(b)
				select { // RunMaxMemory checks the new limit at once
				case n.maxMemorySet <- struct{}{}:
				default:
				}
				return nil
			}},
		{Name: "maxmemory-policy", Get: func() string { return policyName(n.engine.EvictPolicy()) },
			Set: func(v string) error {
				p, err := ParsePolicy(v)
				if err != nil {
					return err
				}
				n.engine.SetEvictPolicy(p)
				return nil
			}},
		{Name: "client-output-buffer-limit", Get: func() string { return n.outputLimit.Load().String() },
			Set: func(v string) error {
				o, err := ParseOutputLimit(v)
				if err != nil {
					return err
				}
				n.outputLimit.Store(&o)
				return nil
			}},
		{Name: "protected-mode", Get: func() string { return yesNo(n.protectedMode.Load()) },
			Set: func(v string) error {
				switch ascii.Lower(v) {
				case "yes":
					n.protectedMode.Store(true)
				case "no":
					n.protectedMode.Store(false)
				default:
					return errors.New("argument must be 'yes' or 'no'")
				}
				return nil
			}},
		{Name: "metrics-top-keys", Get: str(func(c Config) string { return strconv.Itoa(c.MetricsTopKeys) })},
		{Name: "slowlog-log-slower-than", Get: func() string { return strconv.FormatInt(n.slow.threshold.Load(), 10) },
			Set: func(v string) error {
				k, err := configInt(v, -1, math.MaxInt64)
				if err != nil {
					return err
				}
				n.slow.threshold.Store(k)
				return nil
			}},
		{Name: "slowlog-max-len", Get: func() string { return strconv.FormatInt(n.slow.maxLen.Load(), 10) },
			Set: func(v string) error {
				k, err := configInt(v, 0, math.MaxInt64)
				if err != nil {
					return err
				}
				n.slow.mu.Lock()
				n.slow.maxLen.Store(k)
				if over := int64(len(n.slow.entries)) - k; over > 0 {
					n.slow.entries = append(n.slow.entries[:0], n.slow.entries[over:]...)
				}
				n.slow.mu.Unlock()
				return nil
			}},
		{Name: "acllog-max-len", Get: func() string { return strconv.FormatInt(n.acllog.getMaxLen(), 10) },
			Set: func(v string) error {
				k, err := configInt(v, 0, math.MaxInt64)
				if err != nil {
					return err
				}
				n.acllog.setMaxLen(k)
				return nil
			}},
		{Name: "tracking-table-max-keys", Get: func() string { return strconv.FormatInt(n.track.maxKeys.Load(), 10) },
			Set: func(v string) error {
				k, err := configInt(v, 0, math.MaxInt64)
				if err != nil {
					return err
				}
				n.track.maxKeys.Store(k)
				return nil
			}},
		{Name: "latency-monitor-threshold", Get: func() string { return strconv.FormatInt(n.lat.threshold.Load(), 10) },
			Set: func(v string) error {
				k, err := configInt(v, 0, math.MaxInt64)
				if err != nil {
					return err
				}
				n.lat.threshold.Store(k)
				return nil
			}},
		{Name: "cluster-enabled", Get: func() string { return yesNo(n.cluster != nil) }},
		{Name: "cluster-config", Get: str(func(c Config) string { return c.ClusterConfig })},
		{Name: "cluster-config-file", Get: str(func(c Config) string { return c.ClusterConfig })},
		{Name: "cluster-node-id", Get: str(func(c Config) string { return c.ClusterNodeID })},
		{Name: "cluster-require-full-coverage", Get: str(func(c Config) string { return yesNo(!c.ClusterPartialCoverage) })},
	}
	// The flags' names where Redis's differ: the same parameters.
	for _, p := range slices.Clone(ps) {
		if flag, ok := fileNames[p.Name]; ok {
			p.Name = flag
			ps = append(ps, p)
		}
	}
	for i := range ps {
		if set := ps[i].Set; set != nil {
			name := ps[i].Name
			ps[i].Set = func(v string) error {
				if err := set(v); err != nil {
					return err
				}
				n.cfgMu.Lock()
				n.changed[name] = true
				n.cfgMu.Unlock()
				return nil
			}
		}
	}
	return ps
}

// replBatchIntervalOK reports whether d may be --repl-batch-interval
// (the flag and CONFIG SET alike): from 0 to a second.
func replBatchIntervalOK(d time.Duration) bool { return d >= 0 && d <= time.Second }

// yesNo is a boolean as Redis's configuration writes it.
func yesNo(b bool) string {
	if b {
		return "yes"
	}
	return "no"
}

// MaxClockStartMs is the latest --clock-start, in Unix ms: the last
// whole ms a clock reading in ns (an int64) can hold, in the year 2262.
const MaxClockStartMs = math.MaxInt64 / int64(time.Millisecond)

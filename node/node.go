package node

import (
	"crypto/rand"
	"encoding/hex"
	"log/slog"
	"sync"
	"sync/atomic"
	"time"

	"github.com/rlserver/rlserver/acl"
	"github.com/rlserver/rlserver/clock"
	"github.com/rlserver/rlserver/cluster"
	"github.com/rlserver/rlserver/commands"
	"github.com/rlserver/rlserver/engine"
	"github.com/rlserver/rlserver/internal/topk"
	"github.com/rlserver/rlserver/persist"
	"github.com/rlserver/rlserver/replication"
)

// Node is one rlserver without its sockets: the keyspace, the clock, the
// configuration, the connected clients, the statistics and the snapshots.
// The resp package feeds it commands through Exec. Safe for concurrent
// use.
type Node struct {
	engine   *engine.Engine
	clock    clock.Clock
	log      *slog.Logger
	logLevel *slog.LevelVar // what CONFIG SET loglevel changes
	table    commands.Table
	started  time.Time // wall and monotonic start, for uptime and LASTSAVE
	runID    string
	// extraInfo are INFO sections added by fronts (InfoSection).
	extraInfo []infoSection

	cfgMu sync.Mutex
	// changed are the CONFIG parameters CONFIG SET changed (CONFIG
	// REWRITE writes them); guarded by cfgMu.
	changed map[string]bool
	cfg     Config

	// requirePass is CONFIG GET requirepass: what set the default
	// user's password last (--requirepass, CONFIG SET).
	requirePass atomic.Pointer[string]
	// users are the users (users.go); defaultUser is the one every
	// connection starts as, the same User however its rules change.
	users       userSet
	defaultUser *acl.User
	catalog     *acl.Catalog
	// protectedMode refuses peers off the loopback interface while the
	// default user has no password (Protects).
	protectedMode atomic.Bool
	outputLimit   atomic.Pointer[OutputLimit]
	maxMemory     atomic.Int64  // bytes; 0: none (maxmemory.go)
	maxMemorySet  chan struct{} // a new maxmemory, for RunMaxMemory (one pending at most)
	maxClients    atomic.Int64
	timeout       atomic.Int64
	// shutdownTimeout is Config.ShutdownTimeout, in seconds, as CONFIG
	// SET leaves it.
	shutdownTimeout atomic.Int64
	// readOnly, when set, is the error every write command gets (a
	// replica's READONLY).
	readOnly atomic.Pointer[commands.Error]
	// held is the hold in force, nil for none: while a FAILOVER runs or
	// a CLIENT PAUSE lasts, the commands it holds wait (hold.go).
	held atomic.Pointer[hold]
	// trackers is how many connections have CLIENT TRACKING on
	// (tracking.go), beside held, which every command reads too: while
	// 0, a command looks at nothing else of tracking.
	trackers atomic.Int32
	holdMu   sync.Mutex
	holds    holds
	// blocked counts the commands waiting now: held ones (hold.go) and
	// WAITs (INFO clients' blocked_clients, as Redis counts both).
	blocked atomic.Int64

	ps        pubsub   // who listens to which channels and patterns
	track     tracking // client-side caching: the keys tracking connections read
	clientsMu sync.Mutex
	clients   map[int64]*Client
	nextID    atomic.Int64

	stats    nodeStats
	dispatch stripedCounts   // per-command counts over all commands (INFO stats)
	perCmd   []stripedCounts // per command, by Command.Index (INFO commandstats)
	memLimit atomic.Int64    // the process's memory limit, 0 if none (SetMemoryLimit)

	shutdownOnce sync.Once
	shutdown     chan struct{}
	shutdownSave atomic.Bool
	shutdownNow  atomic.Bool

	snap   *persist.Snapshotter // nil when the node runs in memory only
	loaded LoadInfo
	repl   *replication.Manager // nil: no replication (tests of the dispatcher)
	// Observability (observe.go): latency histograms by command index,
	// decisions, the slow log, the latency monitor, the most rejected
	// keys by stripe.
	hists []atomic.Pointer[hist]
	decs  decisions
	slow  slowlog
	// acllog keeps the rules' refusals and the failed logins (ACL LOG).
	acllog aclLog
	lat    latencyMon
	top    [stripes]topk.Window
	// cluster is the node's view of the cluster; nil outside cluster
	// mode. Set by SetCluster before the node serves.
	cluster *cluster.Cluster
}

// SetCluster puts the node in cluster mode with view c (docs/cluster.md).
// Call it before the node serves any client.
func (n *Node) SetCluster(c *cluster.Cluster) { n.cluster = c }

// LoadInfo describes what was loaded at start (INFO persistence).
type LoadInfo struct {
	Keys, Expired int
	Duration      time.Duration
}

// nodeStats are the counts that change per connection or per sweep;
// those that change per command are striped (stats.go).
type nodeStats struct {
	connections, rejectedConns, expiredKeys atomic.Int64
	// outputDisconnects counts clients closed for their unread replies
	// (client-output-buffer-limit).
	outputDisconnects atomic.Int64
	// expireHold is the longest the expiry sweep has held a shard's lock
	// at a time, in ns (engine.SweepStats.LongestHold).
	expireHold atomic.Int64
	// aclDenied counts the refusals the ACL log logs, by reason
	// (aclReasons): Redis 7.2's acl_access_denied_*.
	aclDenied [len(aclReasons)]atomic.Int64
}

// Options are what New needs besides the configuration. Zero values are
// usable: a discarding logger, a level of its own, no persistence.
type Options struct {
	Logger   *slog.Logger
	LogLevel *slog.LevelVar
	// Snapshotter writes the engine's changes; nil runs in memory only.
	Snapshotter *persist.Snapshotter
	// Loaded describes the start-up load.
	Loaded LoadInfo
	// Replication is the node's replication; nil runs without.
	Replication *replication.Manager
}

// New returns a node over e and clk with configuration cfg (which
// Validate has accepted).
func New(cfg Config, e *engine.Engine, clk clock.Clock, o Options) *Node {
	if o.Logger == nil {
		o.Logger = slog.New(slog.DiscardHandler)
	}
	if o.LogLevel == nil {
		o.LogLevel = new(slog.LevelVar)
	}
	if cfg.Limits == (Limits{}) {
		cfg.Limits = DefaultLimits
	}
	table := commands.NewTable()
	n := &Node{
		engine: e, clock: clk, log: o.Logger, logLevel: o.LogLevel, table: table,
		started: time.Now(), cfg: cfg, clients: make(map[int64]*Client), maxMemorySet: make(chan struct{}, 1),
		perCmd:   make([]stripedCounts, len(table.All())),
		hists:    make([]atomic.Pointer[hist], len(table.All())),
		shutdown: make(chan struct{}),
		runID:    newRunID(), changed: map[string]bool{},
		snap: o.Snapshotter, loaded: o.Loaded, repl: o.Replication,
	}
	pass := cfg.RequirePass
	n.requirePass.Store(&pass)
	n.initUsers(pass)
	n.maxClients.Store(int64(cfg.MaxClients))
	n.track.maxKeys.Store(defaultTrackingMaxKeys)
	n.track.wake = make(chan struct{}, 1)
	n.protectedMode.Store(!cfg.ProtectedModeOff)
	ol := cfg.OutputLimit
	n.outputLimit.Store(&ol)
	n.maxMemory.Store(cfg.MaxMemory)
	e.SetEvictPolicy(cfg.MaxMemoryPolicy)
	n.slow.threshold.Store(cfg.SlowlogSlowerThan)
	n.slow.maxLen.Store(int64(cfg.SlowlogMaxLen))
	n.acllog.maxLen = int64(cfg.ACLLogMaxLen)
	n.lat.threshold.Store(cfg.LatencyThreshold)
	n.timeout.Store(int64(cfg.Timeout))
	n.shutdownTimeout.Store(int64(cfg.ShutdownTimeout))
	return n
}

// Engine is the node's keyspace.
func (n *Node) Engine() *engine.Engine { return n.engine }

// Shards is the keyspace's shard count.
func (n *Node) Shards() int { return n.engine.Shards() }

// Clock is the server clock.
func (n *Node) Clock() clock.Clock { return n.clock }

// Commands is the node's command table.
func (n *Node) Commands() commands.Table { return n.table }

// Logger is the node's logger.
func (n *Node) Logger() *slog.Logger { return n.log }

// Limits returns the request limits.
func (n *Node) Limits() Limits { return n.cfg.Limits }

// Config returns a copy of the current configuration.
func (n *Node) Config() Config {
	n.cfgMu.Lock()
	defer n.cfgMu.Unlock()
	return n.cfg
}

// IdleTimeout is the idle time after which a client is closed (0: never).
func (n *Node) IdleTimeout() time.Duration {
	return time.Duration(n.timeout.Load()) * time.Second
}

// RefuseWrites makes every write command answer err (a replica's
// ErrReadOnly) until AcceptWrites; reads and peeks still run.
func (n *Node) RefuseWrites(err commands.Error) { n.readOnly.Store(&err) }

// AcceptWrites undoes RefuseWrites.
func (n *Node) AcceptWrites() { n.readOnly.Store(nil) }

// Writable reports whether the node accepts writes now: a primary with
// the replicas min-replicas-to-write asks for.
func (n *Node) Writable() bool { return n.readOnly.Load() == nil }

// PasswordRequired reports whether the default user needs a password
// (it is not nopass): what protected mode and AUTH's one-argument form
// look at.
func (n *Node) PasswordRequired() bool { return !n.defaultUser.Rules().NoPass() }

// ShutdownRequested is closed when a client runs SHUTDOWN.
func (n *Node) ShutdownRequested() <-chan struct{} { return n.shutdown }

// RequestShutdown asks the process to stop (as SHUTDOWN does), with a
// final snapshot when save is set, and without waiting for the replicas'
// acks when now is set. The first request decides.
func (n *Node) RequestShutdown(save, now bool) {
	n.shutdownOnce.Do(func() {
		n.shutdownSave.Store(save)
		n.shutdownNow.Store(now)
		close(n.shutdown)
	})
}

// ShutdownWait is how long a graceful stop waits for the replicas to
// acknowledge every change: shutdown-timeout, or 0 after SHUTDOWN NOW.
func (n *Node) ShutdownWait() time.Duration {
	if n.shutdownNow.Load() {
		return 0
	}
	return time.Duration(n.shutdownTimeout.Load()) * time.Second
}

// ShutdownSave reports whether the requested shutdown wants a final
// snapshot (SHUTDOWN NOSAVE does not).
func (n *Node) ShutdownSave() bool { return n.shutdownSave.Load() }

// Persistent reports whether the node writes snapshots.
func (n *Node) Persistent() bool { return n.snap != nil }

// Save writes a snapshot now (SAVE).
func (n *Node) Save() error {
	if n.snap == nil {
		return commands.ErrPersistOff
	}
	return n.snap.Save()
}

// BackgroundSave starts a snapshot in the background (BGSAVE).
func (n *Node) BackgroundSave() error {
	if n.snap == nil {
		return commands.ErrPersistOff
	}
	if err := n.snap.BackgroundSave(); err != nil {
		return commands.ErrBgsaveRunning
	}
	return nil
}

// LastSave is the Unix time of the last good snapshot (LASTSAVE): the
// start time when the node runs in memory only.
func (n *Node) LastSave() int64 {
	if n.snap == nil {
		return n.started.Unix()
	}
	return n.snap.Info().LastSaveUnix
}

// SetMemoryLimit records the process's memory limit for INFO memory (0:
// none); the wiring's memory-limit loop sets it.
func (n *Node) SetMemoryLimit(limit int64) { n.memLimit.Store(limit) }

// CountTraffic adds bytes read from and written to c's connection to INFO
// stats.
func (n *Node) CountTraffic(c *Client, in, out int) {
	d := n.dispatch.cell(c.stripe)
	d[nNetIn].Add(int64(in))
	d[nNetOut].Add(int64(out))
}

// ResetStats zeroes the statistics (CONFIG RESETSTAT).
func (n *Node) ResetStats() {
	for i := range n.perCmd {
		n.perCmd[i].reset()
	}
	n.stats.connections.Store(0)
	n.stats.rejectedConns.Store(0)
	n.stats.expireHold.Store(0)
	for i := range n.stats.aclDenied {
		n.stats.aclDenied[i].Store(0)
	}
	n.dispatch.reset()
	n.resetObserved()
	n.engine.ResetEvicted()
	if n.repl != nil {
		n.repl.ResetStats()
	}
}

// Compile-time check: the handlers' view of the node.
var _ commands.Node = (*Node)(nil)

// newRunID returns 40 random hex digits: INFO's run_id, new at every start
// (Sentinel ignores one of another length, and takes an unchanged one
// for a node that did not restart).
func newRunID() string {
	var b [20]byte
	_, _ = rand.Read(b[:])
	return hex.EncodeToString(b[:])
}

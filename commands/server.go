package commands

import (
	"fmt"
	"log/slog"
	"sync"
	"sync/atomic"
	"time"

	"github.com/rlserver/rlserver/clock"
	"github.com/rlserver/rlserver/engine"
)

// Version is rlserver's version, reported by INFO and the start-up log.
const Version = "0.1.0"

// RedisVersion is the Redis version whose behaviour rlserver follows; it is
// what HELLO and INFO report as redis_version, for clients that check it.
const RedisVersion = "7.2.0"

// Limits bound what one request may carry (server.md, "Errors and bad
// input"). Exceeding one gets an error reply and the connection is closed.
type Limits struct {
	MaxArgs   int // arguments per command, name included
	MaxArgLen int // bytes per argument
	MaxKeyLen int // bytes per key argument
	MaxOutput int // bytes of replies pending for one connection
}

// DefaultLimits are server.md's defaults.
var DefaultLimits = Limits{MaxArgs: 1024, MaxArgLen: 64 << 10, MaxKeyLen: 1 << 10, MaxOutput: 64 << 20}

// Config is the server configuration visible through CONFIG GET. Fields
// that CONFIG SET may change at run time are read with the accessors.
type Config struct {
	Bind         string
	Port         int
	Dir          string
	SaveInterval time.Duration
	RequirePass  string
	MasterAuth   string
	ReplicaOf    string
	MaxClients   int
	Timeout      int // idle seconds before a client is closed; 0 never
	Shards       int
	ClockMode    string // "real" or "manual"
	TLSCert      string
	TLSKey       string
	LogLevel     string
	LogFormat    string
	MetricsAddr  string
	Limits       Limits
}

// Server is rlserver without its sockets: the keyspace, the clock, the
// configuration, the connected clients and the statistics. The resp package
// feeds it commands through Exec. Safe for concurrent use.
type Server struct {
	Engine *engine.Engine
	Clock  clock.Clock
	Log    *slog.Logger
	// LogLevel is the level CONFIG SET loglevel changes.
	LogLevel *slog.LevelVar
	table    Table
	started  time.Time // monotonic start, for uptime
	runID    string

	cfgMu sync.Mutex
	cfg   Config

	requirePass atomic.Pointer[string]
	maxClients  atomic.Int64
	timeout     atomic.Int64

	clientsMu sync.Mutex
	clients   map[int64]*Client
	nextID    atomic.Int64

	stats    serverStats
	dispatch dispatchStats
	memLimit atomic.Int64 // the process's memory limit RunMemoryLimit keeps, 0 if none

	shutdownOnce sync.Once
	shutdown     chan struct{}
	shutdownSave atomic.Bool

	// Persist is the snapshotter, nil when the server runs in memory only.
	// Set it before serving.
	Persist Persistence
	// Loaded describes the start-up load, for INFO persistence.
	Loaded LoadInfo
}

// Persistence is what the commands need of snapshots (SAVE, BGSAVE,
// LASTSAVE, SHUTDOWN, INFO persistence); the server package adapts the
// persist package to it.
type Persistence interface {
	Save() error
	BackgroundSave() error // ErrInProgress-like error if one runs
	Info() PersistenceInfo
}

// PersistenceInfo is the snapshot state INFO persistence reports.
type PersistenceInfo struct {
	ChangesSinceSave int64
	LastSaveUnix     int64
	LastOK           bool
	LastDuration     time.Duration
	InProgress       bool
	Errors, Saves    int64
	LastRecords      int64 // records the last good snapshot wrote
}

// LoadInfo describes what was loaded at start.
type LoadInfo struct {
	Keys, Expired int
	Duration      time.Duration
}

// serverStats are the counts that change per connection or per sweep;
// those that change per command are in dispatchStats.
type serverStats struct {
	connections, rejectedConns, expiredKeys atomic.Int64
	// expireHold is the longest the expiry sweep has held a shard's lock
	// at a time, in ns (engine.SweepStats.LongestHold).
	expireHold atomic.Int64
}

// NewServer returns a server over e and clk with configuration cfg.
func NewServer(cfg Config, e *engine.Engine, clk clock.Clock, log *slog.Logger, level *slog.LevelVar) *Server {
	if log == nil {
		log = slog.New(slog.DiscardHandler)
	}
	if level == nil {
		level = new(slog.LevelVar)
	}
	if cfg.Limits == (Limits{}) {
		cfg.Limits = DefaultLimits
	}
	s := &Server{
		Engine: e, Clock: clk, Log: log, LogLevel: level, table: newTable(),
		started: time.Now(), cfg: cfg, clients: make(map[int64]*Client),
		shutdown: make(chan struct{}),
		runID:    fmt.Sprintf("%040x", time.Now().UnixNano()),
	}
	pass := cfg.RequirePass
	s.requirePass.Store(&pass)
	s.maxClients.Store(int64(cfg.MaxClients))
	s.timeout.Store(int64(cfg.Timeout))
	return s
}

// Limits returns the request limits.
func (s *Server) Limits() Limits { return s.cfg.Limits }

// Config returns a copy of the current configuration.
func (s *Server) Config() Config {
	s.cfgMu.Lock()
	defer s.cfgMu.Unlock()
	return s.cfg
}

// IdleTimeout is the idle time after which a client is closed (0: never).
func (s *Server) IdleTimeout() time.Duration {
	return time.Duration(s.timeout.Load()) * time.Second
}

// ShutdownRequested is closed when a client runs SHUTDOWN.
func (s *Server) ShutdownRequested() <-chan struct{} { return s.shutdown }

// RequestShutdown asks the process to stop (as SHUTDOWN does), with a
// final snapshot when save is set. The first request decides.
func (s *Server) RequestShutdown(save bool) {
	s.shutdownOnce.Do(func() {
		s.shutdownSave.Store(save)
		close(s.shutdown)
	})
}

// ShutdownSave reports whether the requested shutdown wants a final
// snapshot (SHUTDOWN NOSAVE does not).
func (s *Server) ShutdownSave() bool { return s.shutdownSave.Load() }

// CountTraffic adds bytes read from and written to c's connection to INFO
// stats.
func (s *Server) CountTraffic(c *Client, in, out int) {
	d := s.dispatch.cell(c.stripe)
	d[nNetIn].Add(int64(in))
	d[nNetOut].Add(int64(out))
}

// Client is one connection's state. The resp package creates it with
// NewClient and passes it to every Exec on that connection; only that
// connection's goroutine calls Exec with it.
type Client struct {
	ID    int64
	Addr  string
	LAddr string

	proto   int
	authed  bool
	created time.Time
	ctx     Ctx // reused for every command: no allocation per command

	multi    bool
	multiErr bool
	queue    [][][]byte // MULTI queue; owns copies of the arguments

	// Close, given by the connection to NewClient, closes it from another
	// goroutine (CLIENT KILL). CloseAfterReply asks the connection to
	// close once the current reply is written (QUIT, limits).
	Close           func()
	closeAfterReply bool

	mu      sync.Mutex // guards name, libName, libVer (read by CLIENT LIST)
	name    string
	libName string
	libVer  string

	// Read by CLIENT LIST from other goroutines, written on every command.
	lastCmd    atomic.Pointer[string]
	lastActive atomic.Int64 // monotonic ns (monoNow) of the last command's end

	// Used only by the connection's own goroutine.
	lastLookup *Command    // the top-level command this client sent last
	killed     atomic.Bool // CLIENT KILL took it: it is closing and no longer listed
	// mark is the monotonic ns at which the current command began: the
	// end of the previous one, or the moment its batch was read (Mark).
	mark int64
	// stripe is the statistics cell the client's commands count in.
	stripe uint32
}

// SetStripe tells the client which statistics cell to count its commands
// in: the connection's event loop passes its own index, so that loops on
// different cores never update one cache line (see stripes). Call it
// before the client's first command. Without it, a client counts in the
// cell its ID picks.
func (c *Client) SetStripe(loop int) { c.stripe = uint32(loop) % stripes }

// procStart anchors the monotonic readings that time commands.
var procStart = time.Now()

// monoNow is monotonic ns since the process started (clock.Mono: a Real
// clock can read at it, see Exec).
func monoNow() int64 { return clock.Mono() }

// Mark records that a new batch of commands has just been read, so the
// first command's time excludes the wait for input. The connection calls
// it after a blocking read.
func (c *Client) Mark() { c.mark = monoNow() }

// NewClient registers a connection; close closes it from another goroutine
// (CLIENT KILL), and is set before the client is listed, so a kill never
// finds a client it cannot close. It returns ErrMaxClients to refuse the
// connection when maxclients is reached.
func (s *Server) NewClient(addr, laddr string, close func()) (*Client, error) {
	s.clientsMu.Lock()
	defer s.clientsMu.Unlock()
	if max := s.maxClients.Load(); max > 0 && int64(len(s.clients)) >= max {
		s.stats.rejectedConns.Add(1)
		return nil, ErrMaxClients
	}
	c := &Client{ID: s.nextID.Add(1), Addr: addr, LAddr: laddr, proto: 2, created: time.Now(), Close: close}
	c.stripe = uint32(c.ID) % stripes
	c.mark = monoNow()
	c.lastActive.Store(c.mark)
	c.authed = *s.requirePass.Load() == ""
	s.clients[c.ID] = c
	s.stats.connections.Add(1)
	return c, nil
}

// RemoveClient unregisters a closed connection.
func (s *Server) RemoveClient(c *Client) {
	s.clientsMu.Lock()
	delete(s.clients, c.ID)
	s.clientsMu.Unlock()
}

// Killed reports that CLIENT KILL took the client: its connection runs
// nothing more and closes.
func (c *Client) Killed() bool { return c.killed.Load() }

// Idle is how long the client has been without a command (the idle
// timeout's measure, CLIENT LIST's idle).
func (c *Client) Idle() time.Duration { return time.Duration(monoNow() - c.lastActive.Load()) }

// Proto is the client's protocol version (2 or 3).
func (c *Client) Proto() int { return c.proto }

// CloseAfterReply reports whether the connection must be closed once the
// pending replies are written.
func (c *Client) CloseAfterReply() bool { return c.closeAfterReply }

// Ctx is what a handler sees: the request, its client, the reply writer,
// the clock reading for this command and the keyspace. Args (name
// included) are valid only until the handler returns.
type Ctx struct {
	S     *Server
	C     *Client
	W     Writer
	Args  [][]byte
	Now   int64 // server clock, Unix ns, read once for this command
	Store engine.Store
	cmd   *Command
	fail  bool
}

// Error writes err as an error reply (mapped to Redis wording) and marks
// the command failed for INFO commandstats.
func (x *Ctx) Error(err error) {
	x.fail = true
	x.W.Error(errorReply(err))
}

// OK writes +OK.
func (x *Ctx) OK() { x.W.Simple("OK") }

// Exec runs one command for client c, writing its reply to w. args[0] is
// the command name; args are valid only during the call.
func (s *Server) Exec(c *Client, args [][]byte, w Writer) {
	if len(args) == 0 {
		return
	}
	d := s.dispatch.cell(c.stripe)
	d[nCommands].Add(1)
	cmd, rejected := s.resolve(c, args)
	if rejected != "" {
		d[nErrorReplies].Add(1)
		if cmd != nil {
			cmd.stats.cell(c.stripe)[nRejected].Add(1)
		}
		if c.multi {
			c.multiErr = true
		}
		w.Error(rejected)
		return
	}
	if c.multi && cmd.hasFlag(FlagNoMulti) {
		c.multiErr = true
		d[nErrorReplies].Add(1)
		w.Error("ERR Command not allowed inside a transaction")
		return
	}
	if c.multi && !cmd.hasFlag(FlagTxnControl) {
		q := make([][]byte, len(args))
		for i, a := range args {
			q[i] = append([]byte(nil), a...)
		}
		c.queue = append(c.queue, q)
		w.Simple("QUEUED")
		return
	}
	var now int64
	if !cmd.Clockless {
		// The clock reads at c.mark, the monotonic reading that ended
		// the previous command (or began the batch): the dispatcher's
		// timing and the clock share one reading per command.
		now = s.nowAt(c.mark)
	}
	s.run(c, cmd, args, w, now, s.Engine.Store())
}

// AppendKey appends the first key of the command args to keys, if the
// command has one, for Prefetch. Call it from the client's connection
// goroutine, as Exec.
func (s *Server) AppendKey(keys [][]byte, c *Client, args [][]byte) [][]byte {
	if len(args) < 2 {
		return keys
	}
	cmd := s.commandNamed(c, args[0])
	if cmd == nil || cmd.FirstKey <= 0 || cmd.FirstKey >= len(args) {
		return keys
	}
	return append(keys, args[cmd.FirstKey])
}

// Prefetch brings the keys' state into the CPU cache ahead of the commands
// that will use them (engine.Prefetch): a connection's pipelined batch.
func (s *Server) Prefetch(keys [][]byte) { s.Engine.Prefetch(keys) }

// atClock is a clock that can read at a monotonic reading its caller took
// with clock.Mono (clock.Real and clock.Manual are).
type atClock interface{ NowAt(mono int64) int64 }

// nowAt reads the server clock at the monotonic reading m (clock.Mono).
func (s *Server) nowAt(m int64) int64 {
	if c, ok := s.Clock.(atClock); ok {
		return c.NowAt(m)
	}
	return s.Clock.Now()
}

// equalFoldASCII compares a command name from the wire with a lower-case
// table name, ignoring ASCII case.
func equalFoldASCII(b []byte, lower string) bool {
	if len(b) != len(lower) {
		return false
	}
	for i, c := range b {
		if 'A' <= c && c <= 'Z' {
			c += 'a' - 'A'
		}
		if c != lower[i] {
			return false
		}
	}
	return true
}

// run executes a resolved command with the given clock reading and store.
//
// Timing takes one monotonic reading per command: a command runs from the
// end of the previous one (or its batch's Mark) to its own end.
func (s *Server) run(c *Client, cmd *Command, args [][]byte, w Writer, now int64, st engine.Store) {
	x := &c.ctx
	*x = Ctx{S: s, C: c, W: w, Args: args, Now: now, Store: st, cmd: cmd}
	cmd.Run(x)
	end := monoNow()
	cs := cmd.stats.cell(c.stripe)
	cs[nCalls].Add(1)
	cs[nNs].Add(end - c.mark)
	c.mark = end
	if x.fail {
		cs[nFailed].Add(1)
		s.dispatch.cell(c.stripe)[nErrorReplies].Add(1)
	}
	c.lastCmd.Store(&cmd.Name)
	c.lastActive.Store(end)
	x.Args = nil
}

// commandNamed finds the top-level command name in the table. Clients
// mostly repeat one command: the client's last one is tried first, which
// saves the lower-casing and the map lookup. It runs on the client's
// connection goroutine only (the cache is not shared).
func (s *Server) commandNamed(c *Client, name []byte) *Command {
	cmd := c.lastLookup
	if cmd == nil || !equalFoldASCII(name, cmd.Name) {
		cmd = s.table.lookup(name)
		if cmd != nil {
			c.lastLookup = cmd
		}
	}
	return cmd
}

// resolve finds the command (or subcommand) for args and applies the
// dispatcher's checks: existence, arity, authentication, key size. It
// returns the command and, if refused, the error text.
func (s *Server) resolve(c *Client, args [][]byte) (*Command, string) {
	cmd := s.commandNamed(c, args[0])
	if cmd == nil {
		return nil, unknownCommand(args)
	}
	if cmd.Sub != nil && len(args) >= 2 {
		sub := Table(cmd.Sub).lookup(args[1])
		if sub == nil {
			if !c.authed && !cmd.hasFlag(FlagNoAuth) {
				return cmd, string(ErrNoAuth)
			}
			return cmd, fmt.Sprintf("ERR unknown subcommand '%.128s'. Try %s HELP.", args[1], upperParent(cmd.Name))
		}
		cmd = sub
	}
	if !c.authed && !cmd.hasFlag(FlagNoAuth) {
		return cmd, string(ErrNoAuth)
	}
	if !cmd.arityOK(len(args)) {
		return cmd, fmt.Sprintf("ERR wrong number of arguments for '%s' command", cmd.displayName())
	}
	tooLong := false
	cmd.keyPositions(len(args), func(i int) {
		if len(args[i]) > s.cfg.Limits.MaxKeyLen {
			tooLong = true
		}
	})
	if tooLong {
		c.closeAfterReply = true
		return cmd, string(ErrKeyTooLong)
	}
	return cmd, ""
}

// unknownCommand words the error as Redis 7 does: the name, then the
// arguments quoted, stopping once 128 bytes of them are listed.
func unknownCommand(args [][]byte) string {
	b := make([]byte, 0, 128)
	for _, a := range args[1:] {
		if len(b) >= 128 {
			break
		}
		n := min(len(a), 128-len(b))
		b = append(b, '\'')
		b = append(b, a[:n]...)
		b = append(b, '\'', ' ')
	}
	return fmt.Sprintf("ERR unknown command '%.128s', with args beginning with: %s", args[0], b)
}

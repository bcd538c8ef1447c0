package commands

import (
	"errors"
	"fmt"
	"math"
	"os"
	"runtime"
	"runtime/debug"
	"sort"
	"strconv"
	"strings"
	"time"

	"github.com/rlserver/rlserver/clock"
	"github.com/rlserver/rlserver/engine"
)

func cmdTime(x *Ctx) {
	sec, us := x.Now/1e9, (x.Now%1e9)/1e3
	x.W.Array(2)
	x.W.BulkString(strconv.FormatInt(sec, 10))
	x.W.BulkString(strconv.FormatInt(us, 10))
}

// cmdDebugClock is DEBUG CLOCK SET time | ADVANCE duration | GET (clock.md).
func cmdDebugClock(x *Ctx) {
	m, ok := x.S.Clock.(*clock.Manual)
	if !ok {
		x.Error(ErrNeedManual)
		return
	}
	op := strings.ToUpper(string(x.Args[2]))
	switch {
	case op == "GET" && len(x.Args) == 3:
		x.W.Int(m.Now())
	case (op == "SET" || op == "ADVANCE") && len(x.Args) == 4:
		d, err := clock.ParseDuration(string(x.Args[3]))
		if err != nil {
			x.Error(ErrClockValue)
			return
		}
		if op == "SET" {
			if err := m.Set(d); err != nil {
				x.Error(ErrClockBack)
				return
			}
		} else if _, err := m.Advance(d); err != nil {
			if errors.Is(err, clock.ErrBackwards) {
				x.Error(ErrClockBack)
			} else {
				x.Error(ErrClockValue)
			}
			return
		}
		x.OK()
	default:
		x.Error(ErrSyntax)
	}
}

// cmdShutdown is SHUTDOWN [NOSAVE|SAVE] [NOW] [FORCE] [ABORT]: a final
// snapshot unless NOSAVE (SAVE needs persistence), then the process
// stops. As in Redis, a successful SHUTDOWN sends no reply.
func cmdShutdown(x *Ctx) {
	save, nosave := false, false
	for _, a := range x.Args[1:] {
		switch strings.ToUpper(string(a)) {
		case "NOW", "FORCE":
		case "NOSAVE":
			nosave = true
		case "SAVE":
			save = true
		case "ABORT":
			x.Error(Error("ERR No shutdown in progress."))
			return
		default:
			x.Error(ErrSyntax)
			return
		}
	}
	if save && nosave {
		x.Error(ErrSyntax)
		return
	}
	if save && x.S.Persist == nil {
		x.Error(ErrPersistOff)
		return
	}
	x.S.Log.Info("shutdown requested by client", "id", x.C.ID, "addr", x.C.Addr, "save", !nosave)
	x.C.closeAfterReply = true
	x.S.RequestShutdown(!nosave)
}

func cmdSave(x *Ctx) {
	if x.S.Persist == nil {
		x.Error(ErrPersistOff)
		return
	}
	if err := x.S.Persist.Save(); err != nil {
		x.Error(Error("ERR " + err.Error()))
		return
	}
	x.OK()
}

func cmdBgsave(x *Ctx) {
	if x.S.Persist == nil {
		x.Error(ErrPersistOff)
		return
	}
	if len(x.Args) > 2 || (len(x.Args) == 2 && !strings.EqualFold(string(x.Args[1]), "SCHEDULE")) {
		x.Error(ErrSyntax)
		return
	}
	if err := x.S.Persist.BackgroundSave(); err != nil {
		x.Error(Error("ERR Background save already in progress"))
		return
	}
	x.W.Simple("Background saving started")
}

func cmdLastsave(x *Ctx) {
	if x.S.Persist == nil {
		x.W.Int(x.S.started.Unix())
		return
	}
	x.W.Int(x.S.Persist.Info().LastSaveUnix)
}

func cmdCommand(x *Ctx) {
	cmds := x.S.table.sorted()
	x.W.Array(len(cmds))
	for _, c := range cmds {
		c.writeInfo(x.W)
	}
}

func cmdCommandCount(x *Ctx) { x.W.Int(int64(len(x.S.table))) }

func cmdCommandList(x *Ctx) {
	cmds := x.S.table.sorted()
	x.W.Array(len(cmds))
	for _, c := range cmds {
		x.W.BulkString(c.Name)
	}
}

func cmdCommandInfo(x *Ctx) {
	names := x.Args[2:]
	if len(names) == 0 {
		cmdCommand(x)
		return
	}
	x.W.Array(len(names))
	for _, n := range names {
		if c := x.S.findCommand(n); c != nil {
			c.writeInfo(x.W)
		} else {
			x.W.Null() // Redis's addReplyNull: $-1 in RESP2
		}
	}
}

// findCommand resolves "name" or "parent|sub".
func (s *Server) findCommand(n []byte) *Command {
	parent, sub, hasSub := strings.Cut(string(n), "|")
	c := s.table.lookup([]byte(parent))
	if c == nil || !hasSub {
		return c
	}
	return Table(c.Sub).lookup([]byte(sub))
}

func cmdCommandDocs(x *Ctx) {
	var cmds []*Command
	if len(x.Args) == 2 {
		cmds = x.S.table.sorted()
	} else {
		for _, n := range x.Args[2:] {
			if c := x.S.findCommand(n); c != nil {
				cmds = append(cmds, c)
			}
		}
	}
	x.W.Map(len(cmds))
	for _, c := range cmds {
		x.W.BulkString(c.Name)
		c.writeDocs(x.W)
	}
}

// configParam is one CONFIG GET/SET parameter; set is nil when immutable.
type configParam struct {
	name string
	get  func(s *Server) string
	set  func(s *Server, v string) error
}

func configParams() []configParam {
	str := func(f func(c Config) string) func(*Server) string {
		return func(s *Server) string { return f(s.Config()) }
	}
	return []configParam{
		{name: "bind", get: str(func(c Config) string { return c.Bind })},
		{name: "port", get: str(func(c Config) string { return strconv.Itoa(c.Port) })},
		{name: "dir", get: str(func(c Config) string { return c.Dir })},
		{name: "save-interval", get: str(func(c Config) string { return c.SaveInterval.String() })},
		// redis-benchmark reads save and appendonly at start: rlserver has
		// no RDB save points and no AOF.
		{name: "save", get: func(*Server) string { return "" }},
		{name: "appendonly", get: func(*Server) string { return "no" }},
		{name: "requirepass", get: func(s *Server) string { return *s.requirePass.Load() },
			set: func(s *Server, v string) error {
				s.requirePass.Store(&v)
				s.cfgMu.Lock()
				s.cfg.RequirePass = v
				s.cfgMu.Unlock()
				return nil
			}},
		{name: "masterauth", get: str(func(c Config) string { return c.MasterAuth })},
		{name: "replicaof", get: str(func(c Config) string { return c.ReplicaOf })},
		{name: "maxclients", get: func(s *Server) string { return strconv.FormatInt(s.maxClients.Load(), 10) },
			set: func(s *Server, v string) error {
				n, err := strconv.ParseInt(v, 10, 64)
				if err != nil || n < 1 {
					return errors.New("argument must be a positive integer")
				}
				s.maxClients.Store(n)
				return nil
			}},
		{name: "timeout", get: func(s *Server) string { return strconv.FormatInt(s.timeout.Load(), 10) },
			set: func(s *Server, v string) error {
				n, err := strconv.ParseInt(v, 10, 64)
				if err != nil || n < 0 {
					return errors.New("argument couldn't be parsed into an integer")
				}
				s.timeout.Store(n)
				return nil
			}},
		{name: "shards", get: func(s *Server) string { return strconv.Itoa(s.Engine.Shards()) }},
		{name: "clock", get: str(func(c Config) string { return c.ClockMode })},
		{name: "tls-cert-file", get: str(func(c Config) string { return c.TLSCert })},
		{name: "tls-key-file", get: str(func(c Config) string { return c.TLSKey })},
		{name: "loglevel", get: func(s *Server) string { return strings.ToLower(s.LogLevel.Level().String()) },
			set: func(s *Server, v string) error {
				var l slogLevel
				if err := l.parse(v); err != nil {
					return err
				}
				s.LogLevel.Set(l.level)
				return nil
			}},
		{name: "log-format", get: str(func(c Config) string { return c.LogFormat })},
		{name: "metrics-addr", get: str(func(c Config) string { return c.MetricsAddr })},
	}
}

func cmdConfigGet(x *Ctx) {
	params := configParams()
	seen := map[string]bool{}
	var out []configParam
	for _, pat := range x.Args[2:] {
		for _, p := range params {
			if !seen[p.name] && globMatch(pat, []byte(p.name), true) {
				seen[p.name] = true
				out = append(out, p)
			}
		}
	}
	x.W.Map(len(out))
	for _, p := range out {
		x.W.BulkString(p.name)
		x.W.BulkString(p.get(x.S))
	}
}

func cmdConfigSet(x *Ctx) {
	args := x.Args[2:]
	if len(args)%2 != 0 {
		x.Error(Error(fmt.Sprintf("ERR wrong number of arguments for 'config|set' command")))
		return
	}
	params := configParams()
	type change struct {
		p configParam
		v string
	}
	var changes []change
	for i := 0; i < len(args); i += 2 {
		name := strings.ToLower(string(args[i]))
		var found *configParam
		for j := range params {
			if params[j].name == name {
				found = &params[j]
			}
		}
		if found == nil {
			x.Error(Error(fmt.Sprintf("ERR Unknown option or number of arguments for CONFIG SET - '%s'", args[i])))
			return
		}
		if found.set == nil {
			x.Error(Error(fmt.Sprintf("ERR CONFIG SET failed (possibly related to argument '%s') - can't set immutable config", name)))
			return
		}
		changes = append(changes, change{*found, string(args[i+1])})
	}
	for _, c := range changes {
		if err := c.p.set(x.S, c.v); err != nil {
			x.Error(Error(fmt.Sprintf("ERR CONFIG SET failed (possibly related to argument '%s') - %s", c.p.name, err)))
			return
		}
	}
	x.OK()
}

func cmdConfigResetStat(x *Ctx) {
	for _, c := range x.S.table {
		c.stats.reset()
		for _, sc := range c.Sub {
			sc.stats.reset()
		}
	}
	st := &x.S.stats
	st.connections.Store(0)
	st.rejectedConns.Store(0)
	st.expireHold.Store(0)
	x.S.dispatch.reset()
	x.OK()
}

var infoDefault = []string{"server", "clients", "memory", "persistence", "stats", "replication", "cpu", "keyspace"}

func cmdInfo(x *Ctx) {
	want := map[string]bool{}
	for _, a := range x.Args[1:] {
		switch sec := strings.ToLower(string(a)); sec {
		case "all", "everything":
			for _, s := range infoDefault {
				want[s] = true
			}
			want["commandstats"] = true
		case "default":
			for _, s := range infoDefault {
				want[s] = true
			}
		default:
			want[sec] = true
		}
	}
	if len(x.Args) == 1 {
		for _, s := range infoDefault {
			want[s] = true
		}
	}
	var b strings.Builder
	for _, sec := range append(infoDefault[:len(infoDefault)-1:len(infoDefault)-1], "commandstats", "keyspace") {
		if !want[sec] {
			continue
		}
		if b.Len() > 0 {
			b.WriteString("\r\n")
		}
		x.S.writeInfoSection(&b, sec, x.Now, x.Store)
	}
	x.W.Verbatim(b.String())
}

// writeInfoSection writes one INFO section. It reads the keyspace through
// st, the command's store: inside EXEC every shard is already locked.
func (s *Server) writeInfoSection(b *strings.Builder, sec string, now int64, st engine.Store) {
	line := func(k string, v any) { fmt.Fprintf(b, "%s:%v\r\n", k, v) }
	cfg := s.Config()
	switch sec {
	case "server":
		b.WriteString("# Server\r\n")
		up := time.Since(s.started)
		line("redis_version", RedisVersion)
		line("rlserver_version", Version)
		line("redis_mode", "standalone")
		line("os", runtime.GOOS+" "+runtime.GOARCH)
		line("arch_bits", strconv.IntSize)
		line("go_version", runtime.Version())
		line("process_id", os.Getpid())
		line("run_id", s.runID)
		line("tcp_port", cfg.Port)
		line("server_time_usec", now/1000)
		line("uptime_in_seconds", int64(up.Seconds()))
		line("uptime_in_days", int64(up.Hours()/24))
		line("clock", cfg.ClockMode)
		offset := now - time.Now().UnixNano()
		if o, ok := s.Clock.(interface{ Offset() int64 }); ok {
			offset = o.Offset() // against the wall clock the real clock follows
		}
		line("clock_offset_ms", offset/1e6)
		line("shards", s.Engine.Shards())
		line("executable", os.Args[0])
	case "clients":
		b.WriteString("# Clients\r\n")
		s.clientsMu.Lock()
		n := len(s.clients)
		s.clientsMu.Unlock()
		line("connected_clients", n)
		line("maxclients", s.maxClients.Load())
		line("blocked_clients", 0)
	case "memory":
		var m runtime.MemStats
		runtime.ReadMemStats(&m)
		ks := st.Memory()
		used := m.HeapAlloc + uint64(ks.Held)
		b.WriteString("# Memory\r\n")
		line("used_memory", used)
		line("used_memory_human", humanBytes(used))
		line("used_memory_rss", rssBytes())
		line("used_memory_peak", m.HeapSys+uint64(ks.Held))
		// The keyspace lives outside the Go heap (engine/mem.go).
		line("keyspace_bytes", ks.Held)
		line("keyspace_records_bytes", ks.Records)
		line("keyspace_garbage_bytes", ks.Garbage)
		line("total_system_memory", totalMemory())
		line("mem_allocator", "go")
		line("go_heap_objects", m.HeapObjects)
		line("go_gc_cycles", m.NumGC)
		// GOMEMLIMIT bounds the process: the Go runtime's own limit is
		// what is left of it beside the keyspace (RunMemoryLimit).
		line("memory_limit", s.memLimit.Load())
		goLimit := debug.SetMemoryLimit(-1)
		if goLimit == math.MaxInt64 {
			goLimit = 0
		}
		line("go_memory_limit", goLimit)
	case "persistence":
		b.WriteString("# Persistence\r\n")
		pi := PersistenceInfo{LastOK: true, LastSaveUnix: s.started.Unix(), LastDuration: -time.Second}
		if s.Persist != nil {
			pi = s.Persist.Info()
		}
		status := "ok"
		if !pi.LastOK {
			status = "err"
		}
		line("loading", 0)
		line("async_loading", 0)
		line("rdb_changes_since_last_save", pi.ChangesSinceSave)
		line("rdb_bgsave_in_progress", b2i(pi.InProgress))
		line("rdb_last_save_time", pi.LastSaveUnix)
		line("rdb_last_bgsave_status", status)
		line("rdb_last_bgsave_time_sec", int64(pi.LastDuration.Seconds()))
		line("rdb_saves", pi.Saves)
		line("rdb_save_errors", pi.Errors)
		line("rdb_last_save_records", pi.LastRecords)
		line("aof_enabled", 0)
		line("persistence_enabled", b2i(s.Persist != nil))
		line("save_interval", cfg.SaveInterval.String())
		line("dir", cfg.Dir)
		line("keys_loaded", s.Loaded.Keys)
		line("expired_on_load", s.Loaded.Expired)
		line("load_time_ms", s.Loaded.Duration.Milliseconds())
	case "stats":
		st := &s.stats
		d := s.dispatch.totals()
		b.WriteString("# Stats\r\n")
		line("total_connections_received", st.connections.Load())
		line("total_commands_processed", d[nCommands])
		line("total_net_input_bytes", d[nNetIn])
		line("total_net_output_bytes", d[nNetOut])
		line("rejected_connections", st.rejectedConns.Load())
		line("expired_keys", st.expiredKeys.Load())
		// What a request could have waited behind the expiry sweep.
		line("expire_longest_hold_us", st.expireHold.Load()/1000)
		line("total_error_replies", d[nErrorReplies])
	case "replication":
		b.WriteString("# Replication\r\n")
		line("role", "master")
		line("connected_slaves", 0)
		line("master_replid", s.runID)
		line("master_repl_offset", 0)
	case "cpu":
		sys, user := cpuTimes()
		b.WriteString("# CPU\r\n")
		line("used_cpu_sys", fmt.Sprintf("%.6f", sys.Seconds()))
		line("used_cpu_user", fmt.Sprintf("%.6f", user.Seconds()))
	case "commandstats":
		b.WriteString("# Commandstats\r\n")
		var all []*Command
		for _, c := range s.table {
			all = append(all, c)
			for _, sc := range c.Sub {
				all = append(all, sc)
			}
		}
		sort.Slice(all, func(i, j int) bool { return all[i].Name < all[j].Name })
		for _, c := range all {
			n := c.stats.totals()
			calls, usec, rej, fail := n[nCalls], n[nNs]/1000, n[nRejected], n[nFailed]
			if calls+rej == 0 {
				continue
			}
			per := 0.0
			if calls > 0 {
				per = float64(usec) / float64(calls)
			}
			fmt.Fprintf(b, "cmdstat_%s:calls=%d,usec=%d,usec_per_call=%.2f,rejected_calls=%d,failed_calls=%d\r\n",
				c.Name, calls, usec, per, rej, fail)
		}
	case "keyspace":
		b.WriteString("# Keyspace\r\n")
		if n := st.Len(); n > 0 {
			fmt.Fprintf(b, "db0:keys=%d,expires=%d,avg_ttl=0\r\n", n, n)
		}
	}
}

func humanBytes(n uint64) string {
	switch {
	case n >= 1<<30:
		return fmt.Sprintf("%.2fG", float64(n)/(1<<30))
	case n >= 1<<20:
		return fmt.Sprintf("%.2fM", float64(n)/(1<<20))
	case n >= 1<<10:
		return fmt.Sprintf("%.2fK", float64(n)/(1<<10))
	}
	return fmt.Sprintf("%dB", n)
}

// rssBytes reads the resident set size from /proc (0 where unavailable).
func rssBytes() int64 {
	b, err := os.ReadFile("/proc/self/statm")
	if err != nil {
		return 0
	}
	f := strings.Fields(string(b))
	if len(f) < 2 {
		return 0
	}
	pages, _ := strconv.ParseInt(f[1], 10, 64)
	return pages * int64(os.Getpagesize())
}

func b2i(b bool) int {
	if b {
		return 1
	}
	return 0
}

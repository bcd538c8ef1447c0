package node

import (
	"fmt"
	"math"
	"os"
	"runtime"
	"runtime/debug"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/rlserver/rlserver/commands"
	"github.com/rlserver/rlserver/engine"
	"github.com/rlserver/rlserver/internal/ascii"
	"github.com/rlserver/rlserver/internal/proc"
	"github.com/rlserver/rlserver/persist"
	"github.com/rlserver/rlserver/replication"
)

// infoSection is one INFO section: its name (lower case), its heading,
// whether INFO without arguments prints it, and what writes its fields.
type infoSection struct {
	name, title string
	byDefault   bool
	write       func(n *Node, f *infoFields, now int64, st engine.Store)
}

// infoSections are INFO's sections in the order INFO prints them.
var infoSections = []infoSection{
	{"server", "Server", true, (*Node).infoServer},
	{"clients", "Clients", true, (*Node).infoClients},
	{"memory", "Memory", true, (*Node).infoMemory},
	{"persistence", "Persistence", true, (*Node).infoPersistence},
	{"stats", "Stats", true, (*Node).infoStats},
	{"replication", "Replication", true, (*Node).infoReplication},
	{"cpu", "CPU", true, (*Node).infoCPU},
	{"commandstats", "Commandstats", false, (*Node).infoCommandstats},
	{"latencystats", "Latencystats", false, (*Node).infoLatencystats},
	{"rlserver", "Rlserver", false, (*Node).infoRlserver},
	{"cluster", "Cluster", true, (*Node).infoCluster},
	{"keyspace", "Keyspace", true, (*Node).infoKeyspace},
}

// InfoSection adds a section to INFO, after the built-in ones, printed
// when named or with "all" or "everything": name is its name (lower
// case), title its heading, and write gives its fields through line. Add
// sections before the node serves; write is called on the INFO caller's
// goroutine, so it must be safe for concurrent use.
func (n *Node) InfoSection(name, title string, write func(line func(k string, v any))) {
	n.extraInfo = append(n.extraInfo, infoSection{name: name, title: title,
		write: func(_ *Node, f *infoFields, _ int64, _ engine.Store) { write(f.line) }})
}

// infoFields builds a section's "name:value" lines.
type infoFields struct{ b strings.Builder }

func (f *infoFields) line(k string, v any) { fmt.Fprintf(&f.b, "%s:%v\r\n", k, v) }

// Info renders INFO [section ...]: no argument or "default" for the
// default sections, "all" or "everything" for every one. It reads the
// keyspace through st, the command's store: inside EXEC every shard is
// already locked.
func (n *Node) Info(args [][]byte, now int64, st engine.Store) string {
	want := map[string]bool{}
	for _, a := range args {
		switch sec := ascii.Lower(a); sec {
		case "all", "everything":
			for _, s := range infoSections {
				want[s.name] = true
			}
			for _, s := range n.extraInfo {
				want[s.name] = true
			}
		case "default":
			for _, s := range infoSections {
				want[s.name] = want[s.name] || s.byDefault
			}
		default:
			want[sec] = true
		}
	}
	var f infoFields
	for _, s := range slices.Concat(infoSections, n.extraInfo) {
		if len(args) == 0 && !s.byDefault || len(args) > 0 && !want[s.name] {
			continue
		}
		if f.b.Len() > 0 {
			f.b.WriteString("\r\n")
		}
		f.b.WriteString("# " + s.title + "\r\n")
		s.write(n, &f, now, st)
	}
	return f.b.String()
}

func (n *Node) infoServer(f *infoFields, now int64, _ engine.Store) {
	cfg := n.Config()
	up := time.Since(n.started)
	f.line("redis_version", commands.RedisVersion)
	f.line("rlserver_version", commands.Version)
	if n.cluster != nil {
		f.line("redis_mode", "cluster")
	} else {
		f.line("redis_mode", "standalone")
	}
	f.line("os", runtime.GOOS+" "+runtime.GOARCH)
	f.line("arch_bits", strconv.IntSize)
	f.line("go_version", runtime.Version())
	f.line("process_id", os.Getpid())
	f.line("run_id", n.runID)
	f.line("tcp_port", cfg.Port)
	f.line("server_time_usec", now/1000)
	f.line("uptime_in_seconds", int64(up.Seconds()))
	f.line("uptime_in_days", int64(up.Hours()/24))
	f.line("clock", cfg.ClockMode)
	f.line("clock_offset_ms", n.clockOffset(now)/1e6)
	f.line("shards", n.engine.Shards())
	f.line("executable", os.Args[0])
}

func (n *Node) infoClients(f *infoFields, _ int64, _ engine.Store) {
	f.line("connected_clients", n.connectedClients())
	f.line("maxclients", n.maxClients.Load())
	f.line("blocked_clients", n.blocked.Load())
	f.line("tracking_clients", n.trackers.Load())
}

func (n *Node) infoMemory(f *infoFields, _ int64, st engine.Store) {
	var m runtime.MemStats
	runtime.ReadMemStats(&m)
	ks := st.Memory()
	used := m.HeapAlloc + uint64(ks.Held)
	f.line("used_memory", used)
	f.line("used_memory_human", humanBytes(used))
	f.line("used_memory_rss", proc.RSS())
	f.line("used_memory_peak", m.HeapSys+uint64(ks.Held))
	// The keyspace lives outside the Go heap (engine/mem.go).
	f.line("keyspace_bytes", ks.Held)
	f.line("keyspace_records_bytes", ks.Records)
	f.line("keyspace_garbage_bytes", ks.Garbage)
	f.line("total_system_memory", proc.TotalMemory())
	f.line("mem_allocator", "go")
	f.line("go_heap_objects", m.HeapObjects)
	f.line("go_gc_cycles", m.NumGC)
	// GOMEMLIMIT bounds the process: the Go runtime's own limit is what
	// is left of it beside the keyspace (the wiring's memory-limit loop).
	f.line("memory_limit", n.memLimit.Load())
	goLimit := debug.SetMemoryLimit(-1)
	if goLimit == math.MaxInt64 {
		goLimit = 0
	}
	f.line("go_memory_limit", goLimit)
	mm := n.maxMemory.Load()
	f.line("maxmemory", mm)
	f.line("maxmemory_human", humanBytes(uint64(mm)))
	f.line("maxmemory_policy", policyName(n.engine.EvictPolicy()))
}

func (n *Node) infoPersistence(f *infoFields, _ int64, _ engine.Store) {
	cfg := n.Config()
	pi := persist.Info{LastOK: true, LastSaveUnix: n.started.Unix(), LastDuration: -time.Second}
	if n.snap != nil {
		pi = n.snap.Info()
	}
	status := "ok"
	if !pi.LastOK {
		status = "err"
	}
	f.line("loading", 0)
	f.line("async_loading", 0)
	f.line("rdb_changes_since_last_save", pi.ChangesSinceSave)
	f.line("rdb_bgsave_in_progress", b2i(pi.InProgress))
	f.line("rdb_last_save_time", pi.LastSaveUnix)
	f.line("rdb_last_bgsave_status", status)
	f.line("rdb_last_bgsave_time_sec", int64(pi.LastDuration.Seconds()))
	f.line("rdb_saves", pi.Saves)
	f.line("rdb_save_errors", pi.Errors)
	f.line("rdb_last_save_records", pi.LastRecords)
	f.line("aof_enabled", 0)
	f.line("persistence_enabled", b2i(n.snap != nil))
	f.line("save_interval", cfg.SaveInterval.String())
	f.line("dir", cfg.Dir)
	f.line("keys_loaded", n.loaded.Keys)
	f.line("expired_on_load", n.loaded.Expired)
	f.line("load_time_ms", n.loaded.Duration.Milliseconds())
}

func (n *Node) infoStats(f *infoFields, _ int64, _ engine.Store) {
	st := &n.stats
	d := n.dispatch.totals()
	f.line("total_connections_received", st.connections.Load())
	f.line("total_commands_processed", d[nCommands])
	f.line("total_net_input_bytes", d[nNetIn])
	f.line("total_net_output_bytes", d[nNetOut])
	f.line("rejected_connections", st.rejectedConns.Load())
	var sync replication.Stats
	if n.repl != nil {
		sync = n.repl.Stats()
	}
	f.line("sync_full", sync.Full)
	f.line("sync_partial_ok", sync.PartialOK)
	f.line("sync_partial_err", sync.PartialErr)
	f.line("expired_keys", st.expiredKeys.Load())
	f.line("evicted_keys", n.engine.Evicted())
	// What a request could have waited behind the expiry sweep.
	f.line("expire_longest_hold_us", st.expireHold.Load()/1000)
	f.line("total_error_replies", d[nErrorReplies])
	f.line("client_output_buffer_limit_disconnections", st.outputDisconnects.Load()) // where Redis 7.2 has it
	f.line("acl_access_denied_auth", st.aclDenied[reasonAuth].Load())
	f.line("acl_access_denied_cmd", st.aclDenied[reasonCommand].Load())
	f.line("acl_access_denied_key", st.aclDenied[reasonKey].Load())
	f.line("acl_access_denied_channel", st.aclDenied[reasonChannel].Load())
	keys, items, prefixes := n.trackingStats()
	f.line("tracking_total_keys", keys)
	f.line("tracking_total_items", items)
	f.line("tracking_total_prefixes", prefixes)
}

func (n *Node) infoReplication(f *infoFields, _ int64, _ engine.Store) {
	if n.repl == nil {
		f.line("role", "master")
		f.line("connected_slaves", 0)
		return
	}
	for _, fl := range n.repl.Info(n.Config().ReplicaPriority) {
		f.line(fl.Name, fl.Value)
	}
}

func (n *Node) infoCPU(f *infoFields, _ int64, _ engine.Store) {
	sys, user := proc.CPUTimes()
	f.line("used_cpu_sys", fmt.Sprintf("%.6f", sys.Seconds()))
	f.line("used_cpu_user", fmt.Sprintf("%.6f", user.Seconds()))
}

func (n *Node) infoCommandstats(f *infoFields, _ int64, _ engine.Store) {
	for _, c := range n.table.All() {
		t := n.perCmd[c.Index].totals()
		calls, usec, rej, fail := t[nCalls], t[nNs]/1000, t[nRejected], t[nFailed]
		if calls+rej == 0 {
			continue
		}
		per := 0.0
		if calls > 0 {
			per = float64(usec) / float64(calls)
		}
		fmt.Fprintf(&f.b, "cmdstat_%s:calls=%d,usec=%d,usec_per_call=%.2f,rejected_calls=%d,failed_calls=%d\r\n",
			c.Name, calls, usec, per, rej, fail)
	}
}

// infoLatencystats prints, as Redis 7 does, each called command's
// latency percentiles in µs (upper bounds of the histogram's buckets:
// within 25% above the truth).
func (n *Node) infoLatencystats(f *infoFields, _ int64, _ engine.Store) {
	for _, c := range n.table.All() {
		b := n.buckets(c.Index)
		if b == nil {
			continue
		}
		p := Percentiles(b, 0.5, 0.99, 0.999)
		if p == nil {
			continue
		}
		fmt.Fprintf(&f.b, "latency_percentiles_usec_%s:p50=%.3f,p99=%.3f,p99.9=%.3f\r\n", c.Name,
			float64(p[0])/1e3, float64(p[1])/1e3, float64(p[2])/1e3)
	}
}

// Percentiles reads the percentiles qs (0 < q <= 1) from a histogram's
// buckets, each as its bucket's upper bound in ns; nil if it is empty.
func Percentiles(buckets []int64, qs ...float64) []int64 {
	total := int64(0)
	for _, c := range buckets {
		total += c
	}
	if total == 0 {
		return nil
	}
	out := make([]int64, len(qs))
	for i, q := range qs {
		want := int64(math.Ceil(q * float64(total)))
		seen := int64(0)
		for b, c := range buckets {
			if seen += c; seen >= want {
				out[i] = HistUpper(b)
				break
			}
		}
	}
	return out
}

// infoRlserver prints the limiters' decisions and keys by algorithm and
// the keys rejected most over the last minute.
func (n *Node) infoRlserver(f *infoFields, _ int64, st engine.Store) {
	d := n.Decisions()
	kinds := st.Kinds()
	for k, name := range kindNames {
		if name == "" {
			continue
		}
		fmt.Fprintf(&f.b, "decisions_%s:admitted=%d,rejected=%d,peek=%d\r\n", name, d[k][resultAdmitted], d[k][resultRejected], d[k][resultPeek])
		f.line("keys_"+name, kinds[k])
	}
	l := n.engine.LeaseStats()
	fmt.Fprintf(&f.b, "leases:acquired=%d,released=%d,renewed=%d,expired=%d\r\n", l.Acquired, l.Released, l.Renewed, l.Expired)
	for i, e := range n.TopRejected(10) {
		fmt.Fprintf(&f.b, "top_rejected_%d:key=%s,rejections=%d\r\n", i+1, commands.QuoteInfoKey(e.Key), e.Count)
	}
}

func (n *Node) infoCluster(f *infoFields, _ int64, _ engine.Store) {
	f.line("cluster_enabled", b2i(n.cluster != nil))
}

func (n *Node) infoKeyspace(f *infoFields, _ int64, st engine.Store) {
	if k := st.Len(); k > 0 {
		fmt.Fprintf(&f.b, "db0:keys=%d,expires=%d,avg_ttl=0\r\n", k, k)
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

func b2i(b bool) int {
	if b {
		return 1
	}
	return 0
}

// Package metrics serves a node's Prometheus metrics (docs/protocol.md,
// "Observability"): a collector that reads, at each scrape, the counts
// the node keeps anyway (node.Node.Observe), with Go's runtime and
// process collectors beside it. Nothing here runs on the request path.
package metrics

import (
	"context"
	"errors"
	"log/slog"
	"net"
	"net/http"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/collectors"
	"github.com/prometheus/client_golang/prometheus/promhttp"
	"github.com/rlserver/rlserver/node"
)

// Durations are exported in seconds with these histogram bounds: the
// node's log-linear buckets cut at the powers of two from 1 µs to about
// 1 s (2^10 to 2^30 ns), each cumulative count exact.
var boundsNs = func() (b []int64) {
	for e := 10; e <= 30; e++ {
		b = append(b, 1<<e)
	}
	return b
}()

var (
	descCommands  = prometheus.NewDesc("rlserver_commands_total", "Commands run, by command (INFO commandstats calls).", []string{"command"}, nil)
	descRejected  = prometheus.NewDesc("rlserver_commands_rejected_total", "Commands refused before running (unknown, arity, auth, redirected, read-only), by command.", []string{"command"}, nil)
	descFailed    = prometheus.NewDesc("rlserver_commands_failed_total", "Commands that ran and answered an error, by command.", []string{"command"}, nil)
	descDuration  = prometheus.NewDesc("rlserver_command_duration_seconds", "Time to run a command, by command.", []string{"command"}, nil)
	descDecisions = prometheus.NewDesc("rlserver_decisions_total", "Limiter decisions by algorithm and result (admitted, rejected, or peek: cost 0).", []string{"algorithm", "result"}, nil)
	descKeys      = prometheus.NewDesc("rlserver_keys", "Keys held, by algorithm (expired keys not yet swept included).", []string{"algorithm"}, nil)
	descClients   = prometheus.NewDesc("rlserver_connected_clients", "Client connections.", nil, nil)
	descMemory    = prometheus.NewDesc("rlserver_memory_bytes", "Memory by kind: keyspace (held outside the Go heap), records and garbage within it, go_heap, rss.", []string{"kind"}, nil)
	descSnapDur   = prometheus.NewDesc("rlserver_snapshot_duration_seconds", "How long the last snapshot took.", nil, nil)
	descSnapLast  = prometheus.NewDesc("rlserver_last_snapshot_timestamp_seconds", "Unix time of the last good snapshot (the start while none).", nil, nil)
	descSnapErrs  = prometheus.NewDesc("rlserver_snapshot_errors_total", "Snapshots that failed.", nil, nil)
	descClockOff  = prometheus.NewDesc("rlserver_clock_offset_seconds", "The server clock minus the wall clock.", nil, nil)
	descReplOff   = prometheus.NewDesc("rlserver_replication_offset", "This node's replication offset (bytes of the stream).", nil, nil)
	descReplLag   = prometheus.NewDesc("rlserver_replication_lag_seconds", "A replica: since its primary last sent anything (-1 while the link is down); a primary: the longest an online replica has not acknowledged.", nil, nil)
	descReplicas  = prometheus.NewDesc("rlserver_connected_replicas", "Online replicas of this primary.", nil, nil)
	descReplFails = prometheus.NewDesc("rlserver_replication_failures_total", "A replica's failed links: refused_unit (a unit of its primary's stream it refused, none of it applied), full_sync (a full sync that failed).", []string{"kind"}, nil)
	descDenied    = prometheus.NewDesc("rlserver_acl_denied_total", "Refusals of the users' rules and failed logins (ACL LOG), by reason: auth, command, key, channel.", []string{"reason"}, nil)
	descLeases    = prometheus.NewDesc("rlserver_leases_total", "Lease events (RL.ACQUIRE): acquired, released, renewed, and expired (ended without a release: a holder that died, or leaked one).", []string{"event"}, nil)
	descTop       = prometheus.NewDesc("rlserver_top_rejected", "Rejections over the last minute of the most rejected keys (--metrics-top-keys).", []string{"key"}, nil)
)

// collector exports a node's Observed at each scrape.
type collector struct {
	n   *node.Node
	top int
}

func (c collector) Describe(ch chan<- *prometheus.Desc) {
	for _, d := range []*prometheus.Desc{descCommands, descRejected, descFailed, descDuration, descDecisions, descKeys,
		descClients, descMemory, descSnapDur, descSnapLast, descSnapErrs, descClockOff, descReplOff, descReplLag, descReplicas, descReplFails, descTop, descLeases, descDenied} {
		ch <- d
	}
}

func (c collector) Collect(ch chan<- prometheus.Metric) {
	o := c.n.Observe(c.top)
	for _, cmd := range o.Commands {
		ch <- prometheus.MustNewConstMetric(descCommands, prometheus.CounterValue, float64(cmd.Calls), cmd.Name)
		ch <- prometheus.MustNewConstMetric(descRejected, prometheus.CounterValue, float64(cmd.Rejected), cmd.Name)
		ch <- prometheus.MustNewConstMetric(descFailed, prometheus.CounterValue, float64(cmd.Failed), cmd.Name)
		if cmd.Buckets != nil {
			ch <- histogram(cmd)
		}
	}
	for k := range o.Decisions {
		name := node.KindName(k)
		if name == "" {
			continue
		}
		for r, v := range o.Decisions[k] {
			ch <- prometheus.MustNewConstMetric(descDecisions, prometheus.CounterValue, float64(v), name, node.ResultName(r))
		}
		ch <- prometheus.MustNewConstMetric(descKeys, prometheus.GaugeValue, float64(o.Keys[k]), name)
	}
	ch <- prometheus.MustNewConstMetric(descClients, prometheus.GaugeValue, float64(o.Clients))
	for kind, v := range o.Memory {
		ch <- prometheus.MustNewConstMetric(descMemory, prometheus.GaugeValue, float64(v), kind)
	}
	if o.Snapshots {
		ch <- prometheus.MustNewConstMetric(descSnapDur, prometheus.GaugeValue, max(o.SnapshotDuration.Seconds(), 0))
		ch <- prometheus.MustNewConstMetric(descSnapLast, prometheus.GaugeValue, float64(o.LastSnapshotUnix))
		ch <- prometheus.MustNewConstMetric(descSnapErrs, prometheus.CounterValue, float64(o.SnapshotErrors))
	}
	ch <- prometheus.MustNewConstMetric(descClockOff, prometheus.GaugeValue, o.ClockOffset.Seconds())
	ch <- prometheus.MustNewConstMetric(descReplOff, prometheus.GaugeValue, float64(o.ReplOffset))
	lag := o.ReplLag.Seconds()
	if o.ReplLag < 0 {
		lag = -1
	}
	ch <- prometheus.MustNewConstMetric(descReplLag, prometheus.GaugeValue, lag)
	ch <- prometheus.MustNewConstMetric(descReplicas, prometheus.GaugeValue, float64(o.ConnectedReplicas))
	ch <- prometheus.MustNewConstMetric(descReplFails, prometheus.CounterValue, float64(o.ReplRefusedUnits), "refused_unit")
	ch <- prometheus.MustNewConstMetric(descReplFails, prometheus.CounterValue, float64(o.ReplFailedSyncs), "full_sync")
	for r, v := range o.ACLDenied {
		ch <- prometheus.MustNewConstMetric(descDenied, prometheus.CounterValue, float64(v), r)
	}
	for event, v := range map[string]int64{"acquired": o.Leases.Acquired, "released": o.Leases.Released, "renewed": o.Leases.Renewed, "expired": o.Leases.Expired} {
		ch <- prometheus.MustNewConstMetric(descLeases, prometheus.CounterValue, float64(v), event)
	}
	for _, e := range o.TopRejected {
		ch <- prometheus.MustNewConstMetric(descTop, prometheus.GaugeValue, float64(e.Count), e.Key)
	}
}

// histogram turns a command's buckets into a Prometheus histogram: each
// bound of boundsNs is a bucket edge of the node's, so every cumulative
// count is exact; the sum is the command's total time.
func histogram(cmd node.CommandObserved) prometheus.Metric {
	cum := make(map[float64]uint64, len(boundsNs))
	var total uint64
	bi := 0
	for i, c := range cmd.Buckets {
		for bi < len(boundsNs) && node.HistUpper(i) > boundsNs[bi] {
			cum[float64(boundsNs[bi])/1e9] = total
			bi++
		}
		total += uint64(c)
	}
	for ; bi < len(boundsNs); bi++ {
		cum[float64(boundsNs[bi])/1e9] = total
	}
	return prometheus.MustNewConstHistogram(descDuration, total, float64(cmd.Nanos)/1e9, cum, cmd.Name)
}

// Registry returns a registry with n's metrics (top: how many of the
// most rejected keys to export), Go's runtime and process collectors, and
// the fronts' collectors (extra: the Envoy rate limit service's).
func Registry(n *node.Node, top int, extra ...prometheus.Collector) *prometheus.Registry {
	r := prometheus.NewRegistry()
	r.MustRegister(collector{n, top}, collectors.NewGoCollector(), collectors.NewProcessCollector(collectors.ProcessCollectorOpts{}))
	r.MustRegister(extra...)
	return r
}

// Server serves /metrics.
type Server struct {
	Addr net.Addr
	srv  *http.Server
}

// Listen serves n's metrics at http://addr/metrics. An address without a
// host (":9121") listens on loopback only: exposing the metrics is a
// choice to make explicitly ("0.0.0.0:9121").
func Listen(addr string, n *node.Node, top int, log *slog.Logger, extra ...prometheus.Collector) (*Server, error) {
	if host, port, err := net.SplitHostPort(addr); err == nil && host == "" {
		addr = net.JoinHostPort("127.0.0.1", port)
	}
	ln, err := net.Listen("tcp", addr)
	if err != nil {
		return nil, err
	}
	mux := http.NewServeMux()
	mux.Handle("/metrics", promhttp.HandlerFor(Registry(n, top, extra...), promhttp.HandlerOpts{ErrorLog: slog.NewLogLogger(log.Handler(), slog.LevelError)}))
	s := &Server{Addr: ln.Addr(), srv: &http.Server{Handler: mux, ReadHeaderTimeout: 5 * time.Second}}
	go func() {
		if err := s.srv.Serve(ln); err != nil && !errors.Is(err, http.ErrServerClosed) {
			log.Error("metrics server stopped", "err", err)
		}
	}()
	log.Info("metrics served", "url", "http://"+ln.Addr().String()+"/metrics")
	return s, nil
}

// Close stops serving.
func (s *Server) Close(ctx context.Context) error { return s.srv.Shutdown(ctx) }

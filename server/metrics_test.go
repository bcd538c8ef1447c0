package server_test

import (
	"context"
	"fmt"
	"io"
	"net/http"
	"strconv"
	"strings"
	"testing"
	"time"

	dto "github.com/prometheus/client_model/go"
	"github.com/prometheus/common/expfmt"
	"github.com/redis/go-redis/v9"
	"github.com/rlserver/rlserver/internal/rltest"
	"github.com/rlserver/rlserver/internal/testserver"
	"github.com/rlserver/rlserver/server"
	"github.com/stretchr/testify/require"
)

// scrape reads and parses s's /metrics.
func scrape(t *testing.T, s *server.Server) map[string]*dto.MetricFamily {
	t.Helper()
	resp, err := http.Get("http://" + s.Metrics.Addr.String() + "/metrics")
	require.NoError(t, err)
	defer resp.Body.Close()
	require.Equal(t, http.StatusOK, resp.StatusCode)
	body, err := io.ReadAll(resp.Body)
	require.NoError(t, err)
	var p expfmt.TextParser
	fams, err := p.TextToMetricFamilies(strings.NewReader(string(body)))
	require.NoError(t, err, "%s", body)
	return fams
}

// sample finds the metric of family name with exactly the labels given
// (name=value pairs).
func sample(t *testing.T, fams map[string]*dto.MetricFamily, name string, labels ...string) *dto.Metric {
	t.Helper()
	f, ok := fams[name]
	require.True(t, ok, "no family %s", name)
	for _, m := range f.Metric {
		if len(m.Label) != len(labels)/2 {
			continue
		}
		match := true
		for i, l := range m.Label {
			match = match && l.GetName() == labels[2*i] && l.GetValue() == labels[2*i+1]
		}
		if match {
			return m
		}
	}
	t.Fatalf("%s%v: no such sample", name, labels)
	return nil
}

func value(t *testing.T, fams map[string]*dto.MetricFamily, name string, labels ...string) float64 {
	t.Helper()
	m := sample(t, fams, name, labels...)
	switch {
	case m.Counter != nil:
		return m.Counter.GetValue()
	case m.Gauge != nil:
		return m.Gauge.GetValue()
	}
	t.Fatalf("%s is neither a counter nor a gauge", name)
	return 0
}

// TestMetrics: /metrics has every metric with its type and labels, and
// the counters move exactly with known traffic: 100 admitted and 50
// rejected CL.THROTTLE decisions, 7 admitted and 3 peeking RL.FIXED ones.
func TestMetrics(t *testing.T) {
	s := testserver.Start(t, func(o *server.Options) {
		o.Config.MetricsAddr = "127.0.0.1:0"
		o.Config.MetricsTopKeys = 3
		o.Config.SaveInterval = time.Hour
	})
	c := rltest.Dial(t, s.Addr.String())
	var cmds [][]string
	for i := range 100 {
		cmds = append(cmds, []string{"CL.THROTTLE", fmt.Sprintf("k%02d", i), "0", "1", "60"})
	}
	for i := range 50 {
		cmds = append(cmds, []string{"CL.THROTTLE", fmt.Sprintf("k%02d", i), "0", "1", "60"})
	}
	for i := range 10 {
		cost := "1"
		if i >= 7 {
			cost = "0"
		}
		cmds = append(cmds, []string{"RL.FIXED", "f", "100", "60s", "COST", cost})
	}
	rltest.Pipeline(t, c, cmds)
	require.Equal(t, "-ERR wrong number of arguments for 'rl.fixed' command", c.Do("RL.FIXED", "f"))
	// Two refused logins and a refused key, for rlserver_acl_denied_total.
	require.Equal(t, "+OK", c.Do("ACL", "SETUSER", "ro", "on", ">pw", "+@all", "~r*"))
	require.Contains(t, c.Do("AUTH", "ro", "bad"), "WRONGPASS")
	require.Contains(t, c.Do("HELLO", "3", "AUTH", "nobody", "x"), "WRONGPASS")
	require.Equal(t, "+OK", c.Do("AUTH", "ro", "pw"))
	require.Contains(t, c.Do("GET", "x"), "NOPERM")
	require.Equal(t, "+OK", c.Do("AUTH", "default", "any")) // nopass: back as before

	fams := scrape(t, s)
	for name, typ := range map[string]dto.MetricType{
		"rlserver_commands_total": dto.MetricType_COUNTER, "rlserver_commands_rejected_total": dto.MetricType_COUNTER,
		"rlserver_commands_failed_total": dto.MetricType_COUNTER, "rlserver_command_duration_seconds": dto.MetricType_HISTOGRAM,
		"rlserver_decisions_total": dto.MetricType_COUNTER, "rlserver_keys": dto.MetricType_GAUGE,
		"rlserver_connected_clients": dto.MetricType_GAUGE, "rlserver_memory_bytes": dto.MetricType_GAUGE,
		"rlserver_snapshot_duration_seconds": dto.MetricType_GAUGE, "rlserver_last_snapshot_timestamp_seconds": dto.MetricType_GAUGE,
		"rlserver_snapshot_errors_total": dto.MetricType_COUNTER, "rlserver_clock_offset_seconds": dto.MetricType_GAUGE,
		"rlserver_replication_offset": dto.MetricType_GAUGE, "rlserver_replication_lag_seconds": dto.MetricType_GAUGE,
		"rlserver_connected_replicas": dto.MetricType_GAUGE, "rlserver_top_rejected": dto.MetricType_GAUGE,
		"rlserver_replication_failures_total": dto.MetricType_COUNTER, "rlserver_acl_denied_total": dto.MetricType_COUNTER,
		"go_goroutines": dto.MetricType_GAUGE, "process_resident_memory_bytes": dto.MetricType_GAUGE,
	} {
		f, ok := fams[name]
		require.True(t, ok, "no family %s", name)
		require.Equal(t, typ, f.GetType(), name)
	}
	for _, tc := range []struct {
		name   string
		labels []string
		want   float64
	}{
		{"rlserver_decisions_total", []string{"algorithm", "gcra", "result", "admitted"}, 100},
		{"rlserver_decisions_total", []string{"algorithm", "gcra", "result", "rejected"}, 50},
		{"rlserver_decisions_total", []string{"algorithm", "gcra", "result", "peek"}, 0},
		{"rlserver_decisions_total", []string{"algorithm", "fixed", "result", "admitted"}, 7},
		{"rlserver_decisions_total", []string{"algorithm", "fixed", "result", "peek"}, 3},
		{"rlserver_decisions_total", []string{"algorithm", "bucket", "result", "rejected"}, 0},
		{"rlserver_commands_total", []string{"command", "cl.throttle"}, 150},
		{"rlserver_commands_total", []string{"command", "rl.fixed"}, 10},
		{"rlserver_commands_rejected_total", []string{"command", "rl.fixed"}, 1},
		{"rlserver_keys", []string{"algorithm", "gcra"}, 100},
		{"rlserver_keys", []string{"algorithm", "fixed"}, 1},
		{"rlserver_keys", []string{"algorithm", "log"}, 0},
		{"rlserver_connected_clients", nil, 1},
		{"rlserver_snapshot_errors_total", nil, 0},
		{"rlserver_connected_replicas", nil, 0},
		{"rlserver_replication_failures_total", []string{"kind", "refused_unit"}, 0},
		{"rlserver_replication_failures_total", []string{"kind", "full_sync"}, 0},
		{"rlserver_acl_denied_total", []string{"reason", "auth"}, 2},
		{"rlserver_acl_denied_total", []string{"reason", "key"}, 1},
		{"rlserver_acl_denied_total", []string{"reason", "command"}, 0},
		{"rlserver_acl_denied_total", []string{"reason", "channel"}, 0},
		{"rlserver_top_rejected", []string{"key", "k00"}, 1},
		{"rlserver_top_rejected", []string{"key", "k02"}, 1},
	} {
		require.Equal(t, tc.want, value(t, fams, tc.name, tc.labels...), "%s%v", tc.name, tc.labels)
	}
	require.Len(t, fams["rlserver_top_rejected"].Metric, 3)
	h := sample(t, fams, "rlserver_command_duration_seconds", "command", "cl.throttle").Histogram
	require.Equal(t, uint64(150), h.GetSampleCount())
	require.Equal(t, uint64(150), h.Bucket[len(h.Bucket)-1].GetCumulativeCount(), "no call took a second")
	require.Greater(t, value(t, fams, "rlserver_memory_bytes", "kind", "keyspace"), 0.0)
	wantOff := float64(rltest.StartNs-time.Now().UnixNano()) / 1e9
	require.InDelta(t, wantOff, value(t, fams, "rlserver_clock_offset_seconds"), 60, "the manual clock stands at StartNs")

	// The counters move exactly with more traffic.
	c.Do("CL.THROTTLE", "k00", "0", "1", "60")
	c.Do("CL.THROTTLE", "k00", "0", "1", "60", "0")
	fams = scrape(t, s)
	require.Equal(t, 51.0, value(t, fams, "rlserver_decisions_total", "algorithm", "gcra", "result", "rejected"))
	require.Equal(t, 1.0, value(t, fams, "rlserver_decisions_total", "algorithm", "gcra", "result", "peek"))
	require.Equal(t, 2.0, value(t, fams, "rlserver_top_rejected", "key", "k00"))

	// Leases: two acquired and a third refused; the first renewed to 2 s,
	// the second (closest to its end) released; the first ends unreleased.
	first := strconv.FormatInt(rltest.StartNs+1, 10)
	require.Equal(t, "[0 2 1 -1 1000 "+first+"]", c.Do("RL.ACQUIRE", "lk", "2", "1s"))
	require.Equal(t, "[0 2 0 -1 1000 "+strconv.FormatInt(rltest.StartNs+2, 10)+"]", c.Do("RL.ACQUIRE", "lk", "2", "1s"))
	require.Equal(t, "[1 2 0 1000 1000 (nil)]", c.Do("RL.ACQUIRE", "lk", "2", "1s"))
	require.Equal(t, "2000", c.Do("RL.RENEW", "lk", first, "2s"))
	require.Equal(t, "1", c.Do("RL.RELEASE", "lk", "ANY"))
	require.Equal(t, "+OK", c.Do("DEBUG", "CLOCK", "ADVANCE", "2s"))
	require.Equal(t, "0", c.Do("EXISTS", "lk"))
	fams = scrape(t, s)
	require.Equal(t, dto.MetricType_COUNTER, fams["rlserver_leases_total"].GetType())
	for event, want := range map[string]float64{"acquired": 2, "released": 1, "renewed": 1, "expired": 1} {
		require.Equal(t, want, value(t, fams, "rlserver_leases_total", "event", event), event)
	}
	require.Equal(t, 2.0, value(t, fams, "rlserver_decisions_total", "algorithm", "lease", "result", "admitted"))
	require.Equal(t, 1.0, value(t, fams, "rlserver_decisions_total", "algorithm", "lease", "result", "rejected"))
	require.Equal(t, "acquired=2,released=1,renewed=1,expired=1", rltest.Info(t, c, "rlserver")["leases"])
}

// TestMetricsTopKeysOff: without --metrics-top-keys no key is a label.
func TestMetricsTopKeysOff(t *testing.T) {
	s := testserver.Start(t, func(o *server.Options) { o.Config.MetricsAddr = "127.0.0.1:0" })
	c := rltest.Dial(t, s.Addr.String())
	c.Do("CL.THROTTLE", "k", "0", "1", "60")
	c.Do("CL.THROTTLE", "k", "0", "1", "60")
	_, ok := scrape(t, s)["rlserver_top_rejected"]
	require.False(t, ok)
	require.Equal(t, `[["k" 1]]`, c.Do("RL.TOP"), "RL.TOP works regardless")
}

// TestTopRejected: among 100,000 keys each rejected once, ten keys
// hammered (rejected 500 times each) are exactly RL.TOP 10, each counted
// at least as often as it was rejected, and INFO rlserver lists them
// first. (A key is sure to be kept when rejected more than 1/256th of
// the rejections in its slice of the minute, internal/topk.)
func TestTopRejected(t *testing.T) {
	s := testserver.Start(t)
	c := rltest.Dial(t, s.Addr.String())
	var cmds [][]string
	flush := func() {
		rltest.Pipeline(t, c, cmds)
		cmds = cmds[:0]
	}
	for i := range 100_000 {
		k := "cold:" + strconv.Itoa(i)
		cmds = append(cmds, []string{"CL.THROTTLE", k, "0", "1", "60"}, []string{"CL.THROTTLE", k, "0", "1", "60"})
		if i%10_000 == 9_999 {
			for h := range 10 {
				for range 50 {
					cmds = append(cmds, []string{"CL.THROTTLE", "hot:" + strconv.Itoa(h), "0", "1", "60"})
				}
			}
			flush()
		}
	}
	top := c.Do("RL.TOP", "10")
	for h := range 10 {
		require.Regexp(t, fmt.Sprintf(`\["hot:%d" (499|[5-9]\d\d|\d{4,})\]`, h), top)
	}
	require.NotContains(t, top, "cold:")
	info := rltest.InfoFields(rltest.InfoText(t, c, "rlserver"))
	require.True(t, strings.HasPrefix(info["top_rejected_1"], "key=hot:"), info["top_rejected_1"])
	require.Equal(t, "admitted=100010,rejected=104990,peek=0", info["decisions_gcra"])
}

// TestSlowlog: with a threshold of 0 every command is logged, newest
// first, shaped as Redis's entries; LEN and RESET; long arguments are
// trimmed as Redis trims them.
func TestSlowlog(t *testing.T) {
	s := testserver.Start(t, func(o *server.Options) { o.Config.SlowlogSlowerThan, o.Config.SlowlogMaxLen = 0, 3 })
	ctx := context.Background()
	rdb := redis.NewClient(&redis.Options{Addr: s.Addr.String(), ClientName: "tester", Protocol: 2})
	defer rdb.Close()
	require.NoError(t, rdb.Do(ctx, "SLOWLOG", "RESET").Err())
	require.NoError(t, rdb.Do(ctx, "CL.THROTTLE", "k", "1", "2", "3").Err())
	long := strings.Repeat("x", 200)
	require.NoError(t, rdb.Do(ctx, "EXISTS", long).Err())
	logs, err := rdb.SlowLogGet(ctx, 10).Result()
	require.NoError(t, err)
	require.Len(t, logs, 3, "RESET, CL.THROTTLE, EXISTS (SLOWLOG GET itself is logged after it answers)")
	require.Equal(t, []string{"EXISTS", strings.Repeat("x", 128) + "... (72 more bytes)"}, logs[0].Args)
	require.Equal(t, []string{"CL.THROTTLE", "k", "1", "2", "3"}, logs[1].Args)
	require.Equal(t, "tester", logs[1].ClientName)
	require.Equal(t, logs[0].ID, logs[1].ID+1)
	require.Contains(t, logs[1].ClientAddr, "127.0.0.1:")
	require.GreaterOrEqual(t, logs[1].Duration, time.Duration(0))
	n, err := rdb.Do(ctx, "SLOWLOG", "LEN").Int()
	require.NoError(t, err)
	require.Equal(t, 3, n, "at most slowlog-max-len")
	require.NoError(t, rdb.Do(ctx, "CONFIG", "SET", "slowlog-log-slower-than", "-1").Err())
	require.NoError(t, rdb.Do(ctx, "SLOWLOG", "RESET").Err())
	require.NoError(t, rdb.Do(ctx, "PING").Err())
	n, err = rdb.Do(ctx, "SLOWLOG", "LEN").Int()
	require.NoError(t, err)
	require.Equal(t, 0, n, "off")
}

// TestInfoLatencystats: INFO latencystats and INFO rlserver parse with
// go-redis's InfoMap.
func TestInfoLatencystats(t *testing.T) {
	s := testserver.Start(t)
	ctx := context.Background()
	rdb := redis.NewClient(&redis.Options{Addr: s.Addr.String()})
	defer rdb.Close()
	for range 100 {
		require.NoError(t, rdb.Do(ctx, "RL.BUCKET", "b", "10", "1", "1m").Err())
	}
	info, err := rdb.InfoMap(ctx, "latencystats", "rlserver").Result()
	require.NoError(t, err)
	line := info["Latencystats"]["latency_percentiles_usec_rl.bucket"]
	require.Regexp(t, `^p50=\d+\.\d{3},p99=\d+\.\d{3},p99\.9=\d+\.\d{3}$`, line)
	require.Equal(t, "admitted=10,rejected=90,peek=0", info["Rlserver"]["decisions_bucket"])
	require.Equal(t, "1", info["Rlserver"]["keys_bucket"])
}

// TestInfoSectionsFoldASCII: INFO takes a section's name in any ASCII case,
// as Redis's strcasecmp, and no other way: the Kelvin sign (U+212A), which
// Unicode lowers to k, names no section.
func TestInfoSectionsFoldASCII(t *testing.T) {
	s := testserver.Start(t)
	ctx := context.Background()
	rdb := redis.NewClient(&redis.Options{Addr: s.Addr.String()})
	defer rdb.Close()
	got, err := rdb.Info(ctx, "KeySpace").Result()
	require.NoError(t, err)
	require.True(t, strings.HasPrefix(got, "# Keyspace\r\n"), "%q", got)
	got, err = rdb.Info(ctx, "\u212Aeyspace").Result()
	require.NoError(t, err)
	require.Empty(t, got)
}

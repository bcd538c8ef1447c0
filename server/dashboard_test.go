package server_test

import (
	"encoding/json"
	"os"
	"regexp"
	"strings"
	"testing"
	"time"

	"github.com/rlserver/rlserver/internal/rltest"
	"github.com/rlserver/rlserver/internal/testserver"
	"github.com/rlserver/rlserver/server"
	"github.com/stretchr/testify/require"
)

// exprs collects every "expr" string in a decoded JSON document.
func exprs(v any, out *[]string) {
	switch v := v.(type) {
	case map[string]any:
		for k, x := range v {
			if s, ok := x.(string); ok && k == "expr" {
				*out = append(*out, s)
			} else {
				exprs(x, out)
			}
		}
	case []any:
		for _, x := range v {
			exprs(x, out)
		}
	}
}

// TestDashboardNamesExportedMetrics: every metric a query of the Grafana
// dashboard (deploy/grafana/rlserver.json) names is one a server with
// persistence, a replica-less primary and --metrics-top-keys exports, and
// the dashboard covers what an operator watches.
func TestDashboardNamesExportedMetrics(t *testing.T) {
	b, err := os.ReadFile("../deploy/grafana/rlserver.json")
	require.NoError(t, err)
	var doc any
	require.NoError(t, json.Unmarshal(b, &doc))
	var qs []string
	exprs(doc, &qs)
	require.NotEmpty(t, qs)

	s := testserver.Start(t, func(o *server.Options) {
		o.Config.MetricsAddr = "127.0.0.1:0"
		o.Config.MetricsTopKeys = 5
		o.Config.SaveInterval = time.Hour
	})
	c := rltest.Dial(t, s.Addr.String())
	c.Do("CL.THROTTLE", "k", "0", "1", "60")
	c.Do("CL.THROTTLE", "k", "0", "1", "60")
	fams := scrape(t, s)
	exported := map[string]bool{}
	for name, f := range fams {
		exported[name] = true
		if f.GetType().String() == "HISTOGRAM" {
			for _, suffix := range []string{"_bucket", "_sum", "_count"} {
				exported[name+suffix] = true
			}
		}
	}
	metric := regexp.MustCompile(`\b(rlserver|go|process)_[a-z0-9_]+\b`)
	named := map[string]bool{}
	for _, q := range qs {
		for _, m := range metric.FindAllString(q, -1) {
			named[m] = true
			require.True(t, exported[m], "the dashboard's query %q names %s, which the server does not export", q, m)
		}
	}
	for _, want := range []string{"rlserver_commands_total", "rlserver_decisions_total", "rlserver_command_duration_seconds_bucket",
		"rlserver_keys", "rlserver_memory_bytes", "rlserver_last_snapshot_timestamp_seconds", "rlserver_snapshot_errors_total",
		"rlserver_replication_lag_seconds", "rlserver_clock_offset_seconds", "rlserver_top_rejected"} {
		require.True(t, named[want], "the dashboard shows no %s", want)
	}
	require.False(t, strings.Contains(string(b), "DS_PROMETHEUS}"), "queries use the ${datasource} variable")
}

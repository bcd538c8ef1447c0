package main

import (
	"context"
	"encoding/json"
	"strings"
	"testing"
	"time"

	"github.com/rlserver/rlserver/internal/rltest"
	"github.com/stretchr/testify/require"
)

// TestJSONLogs: with --log-format json every line is one JSON object
// with time (RFC 3339), level and msg, and the lifecycle events keep
// their keys: start (addr, version, keys_loaded), a CONFIG REWRITE-free
// run's stop; requests log nothing.
func TestJSONLogs(t *testing.T) {
	var logs rltest.SyncBuffer
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() {
		done <- run(ctx, []string{"--port", "0", "--save-interval", "0", "--log-format", "json"}, &logs)
	}()
	var addr string
	rltest.WaitFor(t, 10*time.Second, "the start line", func() (bool, string) {
		for _, line := range strings.Split(logs.String(), "\n") {
			var m map[string]any
			if json.Unmarshal([]byte(line), &m) == nil && m["msg"] == "rlserver started" {
				addr, _ = m["addr"].(string)
				return true, ""
			}
		}
		return false, logs.String()
	})
	c := rltest.Dial(t, addr)
	for range 100 {
		c.Do("CL.THROTTLE", "k", "0", "1", "60")
	}
	before := strings.Count(logs.String(), "\n")
	c.Do("PING")
	require.Equal(t, before, strings.Count(logs.String(), "\n"), "requests log nothing")
	cancel()
	require.NoError(t, <-done)

	var msgs []string
	for _, line := range strings.Split(strings.TrimSpace(logs.String()), "\n") {
		var m map[string]any
		require.NoError(t, json.Unmarshal([]byte(line), &m), "not JSON: %s", line)
		ts, _ := m["time"].(string)
		_, err := time.Parse(time.RFC3339Nano, ts)
		require.NoError(t, err, "time of %s", line)
		require.Contains(t, []any{"DEBUG", "INFO", "WARN", "ERROR"}, m["level"], line)
		msg, _ := m["msg"].(string)
		msgs = append(msgs, msg)
		if msg == "rlserver started" {
			for _, k := range []string{"version", "addr", "shards", "clock", "dir", "persistence", "keys_loaded", "expired_dropped", "load_time"} {
				require.Contains(t, m, k, "start line: %s", line)
			}
		}
	}
	require.Equal(t, []string{"rlserver started", "signal received, shutting down", "rlserver stopped"}, msgs)
}

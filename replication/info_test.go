package replication

import (
	"testing"

	"github.com/rlserver/rlserver/clock"
	"github.com/rlserver/rlserver/engine"
	"github.com/stretchr/testify/require"
)

// TestInfoWhileSyncing: a replica in the middle of a full sync lists the
// sync's progress fields after slave_repl_offset and its link as down,
// in Redis 7's order; ROLE says "sync" with offset -1.
func TestInfoWhileSyncing(t *testing.T) {
	e := engine.New(1)
	m := New(Options{Engine: e, Clock: clock.NewTimeline(clock.NewManual(1e18), 0)})
	m.up = &upstream{m: m, host: "127.0.0.1", port: 6379, state: stateSync, syncRead: 1234}
	var names []string
	values := map[string]string{}
	for _, f := range m.Info(100) {
		names = append(names, f.Name)
		values[f.Name] = f.Value
	}
	require.Equal(t, []string{"role", "master_host", "master_port", "master_link_status",
		"master_last_io_seconds_ago", "master_sync_in_progress", "slave_read_repl_offset", "slave_repl_offset",
		"master_sync_total_bytes", "master_sync_read_bytes", "master_sync_left_bytes", "master_sync_perc",
		"master_sync_last_io_seconds_ago", "master_link_down_since_seconds", "slave_priority", "slave_read_only",
		"replica_announced", "connected_slaves", "master_failover_state", "master_replid", "master_replid2",
		"master_repl_offset", "second_repl_offset", "repl_backlog_active", "repl_backlog_size",
		"repl_backlog_first_byte_offset", "repl_backlog_histlen"}, names)
	require.Equal(t, "down", values["master_link_status"])
	require.Equal(t, "1", values["master_sync_in_progress"])
	require.Equal(t, "-1", values["master_sync_total_bytes"])
	require.Equal(t, "1234", values["master_sync_read_bytes"])
	require.Equal(t, "-1", values["master_link_down_since_seconds"])
	r := m.Role()
	require.Equal(t, Role{Replica: true, Host: "127.0.0.1", Port: 6379, State: "sync", Offset: -1}, r)
}

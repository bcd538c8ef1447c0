package server_test

import (
	"strings"
	"testing"
	"time"

	"github.com/cockroachdb/pebble/v2/vfs"
	"github.com/rlserver/rlserver/internal/rltest"
	"github.com/stretchr/testify/require"
)

// TestServerCommandsInsideExec: commands that look at the whole server
// (INFO's keyspace and persistence sections, LASTSAVE, DBSIZE, KEYS, SCAN)
// run inside EXEC, which holds every shard lock, without deadlocking.
func TestServerCommandsInsideExec(t *testing.T) {
	n := startNode(t, vfs.NewMem(), time.Hour)
	defer n.s.Close(t.Context())
	c := rltest.Dial(t, n.s.Addr.String())
	require.Equal(t, "[0 10 9 -1 10000]", c.Do("RL.FIXED", "k", "10", "10s"))
	require.Equal(t, "+OK", c.Do("MULTI"))
	for _, cmd := range [][]string{{"INFO"}, {"INFO", "keyspace", "persistence"}, {"LASTSAVE"}, {"DBSIZE"}, {"KEYS", "*"}, {"SCAN", "0"}, {"RL.FIXED", "k", "10", "10s"}} {
		require.Equal(t, "+QUEUED", c.Do(cmd...))
	}
	got := c.Do("EXEC")
	require.Contains(t, got, "db0:keys=1")
	require.Contains(t, got, "rdb_changes_since_last_save:1")
	require.True(t, strings.HasSuffix(got, ` 1 ["k"] ["0" ["k"]] [0 10 8 -1 10000]]`), got)
}

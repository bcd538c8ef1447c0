package server_test

import (
	"bytes"
	"context"
	"log/slog"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/cockroachdb/pebble/v2/vfs"
	"github.com/rlserver/rlserver/internal/faultfs"
	"github.com/rlserver/rlserver/internal/rltest"
	"github.com/rlserver/rlserver/node"
	"github.com/rlserver/rlserver/server"
	"github.com/stretchr/testify/require"
)

type syncBuffer struct {
	mu sync.Mutex
	b  bytes.Buffer
}

func (s *syncBuffer) Write(p []byte) (int, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.Write(p)
}

func (s *syncBuffer) String() string {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.String()
}

// TestInjectedWriteErrors: with the disk failing every write, SAVE answers
// an error, the failure is logged and counted in INFO, the server keeps
// deciding requests, and nothing panics.
func TestInjectedWriteErrors(t *testing.T) {
	toggle := &faultfs.Writes{}
	fs := toggle.Wrap(vfs.NewMem())
	var logs syncBuffer
	s, err := server.Start(server.Options{
		Config: node.Config{Bind: "127.0.0.1", Dir: "/data", SaveInterval: 20 * time.Millisecond, Shards: 4,
			ClockMode: "manual", MaxClients: 10, Limits: node.DefaultLimits},
		ClockStart: rltest.StartNs, FS: fs, Logger: slog.New(slog.NewTextHandler(&logs, nil)),
	})
	require.NoError(t, err)
	defer s.Close(context.Background())
	c := rltest.Dial(t, s.Addr.String())
	require.Equal(t, "+OK", c.Do("SAVE"))
	toggle.On()
	require.Equal(t, "[0 10 9 -1 10000]", c.Do("RL.FIXED", "k", "10", "10s"))
	// SAVE fails writing, or, if a background snapshot failed first,
	// reopening the store (the state it leaves for the next attempt).
	got := c.Do("SAVE")
	require.True(t, strings.HasPrefix(got, "-ERR "), got)
	require.Contains(t, got, "/data")
	require.Contains(t, got, "injected error")
	require.Contains(t, logs.String(), "snapshot failed")
	info := c.Do("INFO", "persistence")
	require.Contains(t, info, `rdb_last_bgsave_status:err`)
	require.NotContains(t, info, `rdb_save_errors:0\r\n`)
	// The server keeps answering, exactly.
	require.Equal(t, "[0 10 8 -1 10000]", c.Do("RL.FIXED", "k", "10", "10s"))
	require.Equal(t, "[0 16 15 -1 2]", c.Do("CL.THROTTLE", "user123", "15", "30", "60", "1"))
}

// TestWriteErrorsRetried: once the disk works again, the next snapshot
// writes what the failed ones could not.
func TestWriteErrorsRetried(t *testing.T) {
	toggle := &faultfs.Writes{}
	mem := vfs.NewMem()
	fs := toggle.Wrap(mem)
	opts := server.Options{
		Config: node.Config{Bind: "127.0.0.1", Dir: "/data", SaveInterval: time.Hour, Shards: 4,
			ClockMode: "manual", MaxClients: 10, Limits: node.DefaultLimits},
		ClockStart: rltest.StartNs, FS: fs,
	}
	s, err := server.Start(opts)
	require.NoError(t, err)
	c := rltest.Dial(t, s.Addr.String())
	toggle.On()
	require.Equal(t, "[0 10 9 -1 10000]", c.Do("RL.FIXED", "k", "10", "10s"))
	require.True(t, strings.HasPrefix(c.Do("SAVE"), "-ERR"))
	toggle.Off()
	require.Equal(t, "+OK", c.Do("SAVE"))
	require.NoError(t, s.Close(context.Background()))
	opts.FS = mem
	s, err = server.Start(opts)
	require.NoError(t, err)
	defer s.Close(context.Background())
	c = rltest.Dial(t, s.Addr.String())
	require.Equal(t, "[0 10 9 -1 10000]", c.Do("RL.FIXED", "k", "10", "10s", "COST", "0"))
}

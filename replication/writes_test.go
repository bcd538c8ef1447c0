package replication

import (
	"context"
	"testing"
	"time"

	"github.com/rlserver/rlserver/clock"
	"github.com/rlserver/rlserver/engine"
	"github.com/stretchr/testify/require"
)

// TestCheckWritesBeforeRun: a primary with MinReplicas is told to refuse
// writes by CheckWrites, with Run not started (the server calls it before
// it serves: a request could otherwise come before Run's first check,
// the double-admission window MinReplicas closes); without MinReplicas
// nothing changes.
func TestCheckWritesBeforeRun(t *testing.T) {
	for _, c := range []struct {
		min  int
		want []Writes
	}{{1, []Writes{WritesNoReplicas}}, {0, nil}} {
		var told []Writes
		m := New(Options{Engine: engine.New(1), Clock: clock.NewTimeline(clock.NewManual(1e18), 0),
			MinReplicas: c.min, MinReplicasMaxLag: 10, Writes: func(w Writes) { told = append(told, w) }})
		m.CheckWrites()
		require.Equal(t, c.want, told, "min-replicas-to-write %d", c.min)
	}
}

// TestPendingIsFalseWhileThePumpHolds: a write within BatchInterval of
// the last pump waits for it, and the event loops, which yield to the
// pump while Pending says a write waits for it, stop yielding meanwhile;
// the write still counts as waiting (Changed does not wake the pump
// again).
func TestPendingIsFalseWhileThePumpHolds(t *testing.T) {
	m := New(Options{Engine: engine.New(1), Clock: clock.NewTimeline(clock.NewManual(1e18), 0),
		BatchInterval: time.Hour})
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan struct{})
	go func() { m.Run(ctx); close(done) }()
	defer func() { cancel(); <-done }()
	m.linked.Store(true)
	m.Changed() // the first write after a quiet spell: pumped at once
	require.Eventually(t, func() bool { return !m.kicked.Load() }, 10*time.Second, time.Millisecond, "the first write is pumped")
	m.Changed() // within the hour: held
	require.Eventually(t, func() bool { return m.holding.Load() }, 10*time.Second, time.Millisecond, "the second write waits for the interval")
	require.False(t, m.Pending(), "nothing to yield to while the pump holds")
	require.True(t, m.kicked.Load(), "the write still waits: writes do not kick again")
}

package replication

import (
	"testing"

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

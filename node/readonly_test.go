package node_test

import (
	"testing"

	"github.com/rlserver/rlserver/clock"
	"github.com/rlserver/rlserver/commands"
	"github.com/rlserver/rlserver/engine"
	"github.com/rlserver/rlserver/internal/rltest"
	"github.com/rlserver/rlserver/node"
	"github.com/stretchr/testify/require"
)

// TestRefuseWrites: a node told to refuse writes (a replica) answers every
// write command with the error it was given, at once or at MULTI's queue
// time, and changes nothing; reads run; accepting writes again restores
// them.
func TestRefuseWrites(t *testing.T) {
	n := node.New(node.Config{Shards: 4, MaxClients: 10}, engine.New(4), clock.NewManual(rltest.StartNs), node.Options{})
	c, err := n.NewClient("t", "t", nil)
	require.NoError(t, err)
	w := rltest.NewRecorder(2)
	do := func(args ...string) string {
		w.Reset()
		n.Exec(c, rltest.Argv(args...), w)
		return w.String()
	}
	require.Equal(t, "*5 :0 :10 :9 :-1 :40000", do("RL.FIXED", "k", "10", "60s"))
	n.RefuseWrites(commands.ErrReadOnly)
	ro := "-" + string(commands.ErrReadOnly)
	for _, cmd := range [][]string{
		{"RL.FIXED", "k", "10", "60s"},
		{"CL.THROTTLE", "t", "1", "1", "1"},
		{"SET", "t", "1"},
		{"DEL", "k"},
		{"FLUSHALL"},
	} {
		require.Equal(t, ro, do(cmd...), "%v", cmd)
	}
	require.Equal(t, ":1", do("DBSIZE"))
	require.Equal(t, ":40000", do("PTTL", "k"))
	require.Equal(t, "+PONG", do("PING"))
	require.Equal(t, "+OK", do("MULTI"))
	require.Equal(t, ro, do("RL.FIXED", "k", "10", "60s"))
	require.Equal(t, "+QUEUED", do("DBSIZE"))
	require.Equal(t, "-"+string(commands.ErrExecAbort), do("EXEC"))

	n.AcceptWrites()
	require.Equal(t, "*5 :0 :10 :8 :-1 :40000", do("RL.FIXED", "k", "10", "60s"))
	require.Equal(t, ":1", do("DEL", "k"))
}

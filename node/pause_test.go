package node_test

import (
	"fmt"
	"testing"
	"time"

	"github.com/rlserver/rlserver/clock"
	"github.com/rlserver/rlserver/engine"
	"github.com/rlserver/rlserver/internal/rltest"
	"github.com/rlserver/rlserver/node"
	"github.com/stretchr/testify/require"
)

// TestPauseWaitsForRunningCommands: CLIENT PAUSE answers only once the
// commands already running on other clients have ended, so that after
// its +OK no write changes the keyspace or the stream (the recipe for a
// switch under Sentinel reads the replicas' offsets then). A batch an
// event loop is running stands for such a command (BeginBatch): a write
// in it may have looked for a hold before the pause began.
//   - alone: the pause waits for the batch, and answers when it ends;
//   - two pauses, each run inside its client's open batch (as an event
//     loop runs it), wait for the third batch and not for each other: a
//     pause that waited for the other's batch would never end;
//   - inside EXEC: the wait comes after EXEC has run, under no shard's
//     lock, and EXEC's reply after it.
//
// Then a write is held, as after any pause.
func TestPauseWaitsForRunningCommands(t *testing.T) {
	for _, tc := range []struct {
		name    string
		pausers int
		txn     bool
	}{
		{"alone", 1, false},
		{"two-pauses", 2, false},
		{"in-exec", 1, true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			n := node.New(node.Config{Shards: 4, MaxClients: 10}, engine.New(4), clock.NewManual(rltest.StartNs), node.Options{})
			busy, _ := n.NewClient("busy", "busy", nil)
			busy.SetLooped()
			busy.BeginBatch()
			done := make(chan string, tc.pausers)
			for i := range tc.pausers {
				c, _ := n.NewClient(fmt.Sprint("p", i), "p", nil)
				c.SetLooped()
				if tc.txn {
					n.Exec(c, rltest.Argv("MULTI"), rltest.Discard{})
					n.Exec(c, rltest.Argv("CLIENT", "PAUSE", "3600000", "WRITE"), rltest.Discard{})
				}
				c.BeginBatch() // before any pause looks at it
				go func() {
					defer c.EndBatch()
					w := rltest.NewRecorder(1)
					if tc.txn {
						n.Exec(c, rltest.Argv("EXEC"), w)
					} else {
						n.Exec(c, rltest.Argv("CLIENT", "PAUSE", "3600000", "WRITE"), w)
					}
					done <- w.String()
				}()
			}
			rltest.WaitFor(t, 30*time.Second, "every pause waiting for the batch", func() (bool, string) {
				k := rltest.StackCount("node.(*Node).drain(")
				return k == tc.pausers, fmt.Sprint(k)
			})
			select {
			case got := <-done:
				t.Fatalf("answered %q while a batch ran", got)
			default:
			}
			busy.EndBatch()
			want := "+OK"
			if tc.txn {
				want = "*1 +OK"
			}
			for range tc.pausers {
				select {
				case got := <-done:
					require.Equal(t, want, got)
				case <-time.After(30 * time.Second):
					t.Fatal("no answer 30 s after the batch ended")
				}
			}
			// The pause is in force: a write that comes now is held.
			w := rltest.NewRecorder(1)
			busy.BeginBatch()
			n.Exec(busy, rltest.Argv("RL.FIXED", "k", "5", "1m"), w)
			busy.EndBatch()
			require.NotNil(t, busy.TakePark(), "a write after the pause is held")
			require.Empty(t, w.String())
			n.Unpause()
		})
	}
}

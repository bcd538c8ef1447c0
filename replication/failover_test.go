package replication

import (
	"bufio"
	"net"
	"runtime"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/rlserver/rlserver/clock"
	"github.com/rlserver/rlserver/engine"
	"github.com/rlserver/rlserver/internal/rltest"
	"github.com/stretchr/testify/require"
)

// TestRefusedHandoverIsNotRetried: a primary handing over (FAILOVER) to a
// node that refuses its PSYNC ... FAILOVER gives up that link at once; the
// failover then makes it a primary again. It never asks again without
// FAILOVER: the node that refused is a primary here, and its full sync
// would replace every limit the node holds. Nothing stops the link in
// this test, so a link that retried would still be running.
func TestRefusedHandoverIsNotRetried(t *testing.T) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	require.NoError(t, err)
	t.Cleanup(func() { ln.Close() })
	var mu sync.Mutex
	var psyncs [][]string
	go func() {
		for {
			conn, err := ln.Accept()
			if err != nil {
				return
			}
			go func() {
				defer conn.Close()
				br := bufio.NewReader(conn)
				for {
					args, err := readCommand(br)
					if err != nil {
						return
					}
					switch strings.ToUpper(args[0]) {
					case "PING":
						conn.Write([]byte("+PONG\r\n"))
					case "PSYNC":
						mu.Lock()
						psyncs = append(psyncs, args)
						mu.Unlock()
						if len(args) > 3 {
							conn.Write([]byte("-ERR PSYNC FAILOVER can't be sent to a master.\r\n"))
						} else {
							conn.Write([]byte("+FULLRESYNC " + strings.Repeat("ab", 20) + " 0\r\n"))
						}
					default:
						conn.Write([]byte("+OK\r\n"))
					}
				}
			}()
		}
	}()

	m := New(Options{Engine: engine.New(1), Clock: clock.NewTimeline(clock.NewManual(t0), 0)})
	m.retryEvery = time.Millisecond // a retry, if any, comes at once
	running(t, m)
	result := make(chan error, 1)
	m.replicaOf("127.0.0.1", ln.Addr().(*net.TCPAddr).Port, result)
	select {
	case err := <-result:
		require.ErrorContains(t, err, "PSYNC FAILOVER can't be sent to a master.")
	case <-time.After(30 * time.Second):
		t.Fatal("no outcome for the handover")
	}
	rltest.WaitFor(t, 30*time.Second, "the link to give up", func() (bool, string) {
		buf := make([]byte, 1<<20)
		n := strings.Count(string(buf[:runtime.Stack(buf, true)]), "replication.(*upstream).run(")
		return n == 0, strconv.Itoa(n) + " running"
	})
	mu.Lock()
	defer mu.Unlock()
	require.Len(t, psyncs, 1, "%q", psyncs)
	require.Equal(t, "FAILOVER", psyncs[0][3])
}

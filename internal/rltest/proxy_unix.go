//go:build unix

package rltest

import (
	"io"
	"net"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
)

// StreamProxy passes connections on to a server (a replica's link to its
// primary, say) and can stop passing the server's bytes on (Pause). Its
// sockets to the server have a small receive buffer pinned (4 KB), so
// bytes it does not read stay in the server's socket and buffers, not in
// its own. Closed when the test ends.
type StreamProxy struct {
	ln     net.Listener
	target string
	mu     sync.Mutex
	cond   *sync.Cond
	paused bool
	conns  []net.Conn // both ends of every connection passed on, closed at the end
	closed bool       // the test ended: a connection accepted now is closed at once
}

// NewStreamProxy listens on 127.0.0.1 and passes each connection on to
// target.
func NewStreamProxy(t testing.TB, target string) *StreamProxy {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	require.NoError(t, err)
	px := &StreamProxy{ln: ln, target: target}
	px.cond = sync.NewCond(&px.mu)
	t.Cleanup(func() {
		ln.Close()
		px.mu.Lock()
		px.paused, px.closed = false, true
		px.cond.Broadcast()
		for _, c := range px.conns {
			c.Close()
		}
		px.mu.Unlock()
	})
	go px.serve()
	return px
}

// Addr is the proxy's address, host:port.
func (px *StreamProxy) Addr() string { return px.ln.Addr().String() }

// Port is the port the proxy listens on.
func (px *StreamProxy) Port() int { return px.ln.Addr().(*net.TCPAddr).Port }

func (px *StreamProxy) serve() {
	for {
		c, err := px.ln.Accept()
		if err != nil {
			return
		}
		d := net.Dialer{Timeout: 5 * time.Second, Control: func(_, _ string, rc syscall.RawConn) error {
			var serr error
			rc.Control(func(fd uintptr) { serr = syscall.SetsockoptInt(int(fd), syscall.SOL_SOCKET, syscall.SO_RCVBUF, 4096) })
			return serr
		}}
		up, err := d.Dial("tcp", px.target)
		if err != nil {
			c.Close()
			continue
		}
		px.mu.Lock()
		if px.closed {
			c.Close()
			up.Close()
		}
		px.conns = append(px.conns, c, up)
		px.mu.Unlock()
		go func() { io.Copy(up, c); up.Close() }()
		go func() { px.copyDown(c, up); c.Close() }()
	}
}

// copyDown passes the server's bytes on, except while paused: a read's
// bytes wait for Resume, so nothing the server sends after Pause returns
// is passed on before.
func (px *StreamProxy) copyDown(down, up net.Conn) {
	buf := make([]byte, 64<<10)
	for {
		n, err := up.Read(buf)
		px.mu.Lock()
		for px.paused {
			px.cond.Wait()
		}
		px.mu.Unlock()
		if n > 0 {
			if _, werr := down.Write(buf[:n]); werr != nil {
				return
			}
		}
		if err != nil {
			return
		}
	}
}

// Pause stops passing the server's bytes on: those it sends from now on
// wait for Resume.
func (px *StreamProxy) Pause() {
	px.mu.Lock()
	px.paused = true
	px.mu.Unlock()
}

// Resume passes the server's bytes on again.
func (px *StreamProxy) Resume() {
	px.mu.Lock()
	px.paused = false
	px.cond.Broadcast()
	px.mu.Unlock()
}

// GrowStream writes new RL.FIXED keys (limit 5 a minute, names of about
// 900 bytes, so about 1 KB of replication stream each) on c, a primary,
// 500 to a pipeline, until its master_repl_offset has grown by at least
// n bytes. Every write must be admitted. It returns how many keys it
// wrote and the last one's name.
func GrowStream(t testing.TB, c *Conn, n int64) (keys int, last string) {
	t.Helper()
	offset := func() int64 { return InfoInt(t, c, "replication", "master_repl_offset") }
	from := offset()
	pad := strings.Repeat("k", 900) // under MaxKeyLen, 1 KB
	for offset()-from < n {
		require.Less(t, keys, 1_000_000, "the stream grows with the writes")
		cmds := make([][]string, 0, 500)
		for range 500 {
			cmds = append(cmds, []string{"RL.FIXED", pad + strconv.Itoa(keys), "5", "1m"})
			keys++
		}
		for i, got := range Pipeline(t, c, cmds) {
			require.Regexp(t, `^\[0 5 4 -1 \d+\]$`, got, "write %d", i)
		}
	}
	return keys, pad + strconv.Itoa(keys-1)
}

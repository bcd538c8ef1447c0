// Package testnode runs commands through a node's dispatcher in process,
// as a connection would, for tests and transcripts without sockets. It
// sits on node and resp; internal/rltest, below it, imports neither.
package testnode

import (
	"bufio"
	"bytes"
	"testing"

	"github.com/rlserver/rlserver/internal/rltest"
	"github.com/rlserver/rlserver/node"
	"github.com/rlserver/rlserver/resp"
)

// Local is a connection in process: it runs commands through a node's
// dispatcher (Node.Exec) as a connection's goroutine would, encodes the
// replies with the wire's own writer and renders them as rltest.ReadReply does,
// so transcripts run without sockets.
type Local struct {
	t testing.TB
	n *node.Node
	c *node.Client
	w *resp.Writer
}

// NewLocal registers a client with n; it is removed when the test ends.
func NewLocal(t testing.TB, n *node.Node) *Local {
	t.Helper()
	c, err := n.NewClient("local", "local", nil)
	if err != nil {
		t.Fatalf("new client: %v", err)
	}
	t.Cleanup(func() { n.RemoveClient(c) })
	return &Local{t: t, n: n, c: c, w: resp.NewWriter(c.Proto)}
}

// Do runs one command and returns its rendered reply.
func (l *Local) Do(args ...string) string {
	l.t.Helper()
	l.w.Reset()
	l.c.Mark()
	l.n.Exec(l.c, rltest.Argv(args...), l.w)
	for p := l.c.TakePark(); p != nil; p = l.c.TakePark() { // a WAIT that waits, a held command: here, in line
		p(nil)(l.w)
	}
	out := l.w.Bytes()
	if len(out) == 0 { // SHUTDOWN: no reply
		return ""
	}
	rd := bufio.NewReader(bytes.NewReader(out))
	r, err := rltest.ReadReply(rd)
	if err != nil {
		l.t.Fatalf("%q: render reply %q: %v", args, out, err)
	}
	if rd.Buffered() > 0 {
		l.t.Fatalf("%q: more than one reply: %q", args, out)
	}
	return r
}

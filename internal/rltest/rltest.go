// Package rltest talks to rlservers in tests with a raw RESP client that
// renders replies as canonical one-line text, so transcripts can compare
// replies byte for byte. It imports no package of rlserver: every test
// can use it (servers in process: internal/testserver, internal/testnode).
//
// Rendering: +simple, -error, integers bare (42), bulk strings Go-quoted
// ("abc"), (nil) for a null bulk or RESP3 null, (nil-array) for *-1,
// arrays [a b c], RESP3 maps {k: v, k: v}, sets ~[a b], verbatim strings
// =txt:"...", doubles ,1.5, booleans #t/#f.
package rltest

import (
	"bufio"
	"errors"
	"fmt"
	"io"
	"net"
	"os"
	"strconv"
	"strings"
	"testing"
	"time"
)

// StartNs is where the manual clock of a test server starts:
// 1700000000000000000 ns (2023-11-14T22:13:20Z), a whole second.
const StartNs = int64(1_700_000_000_000_000_000)

// Conn is a raw RESP connection.
type Conn struct {
	t  testing.TB
	nc net.Conn
	rd *bufio.Reader
}

// Dial connects to addr; the connection is closed when the test ends.
func Dial(t testing.TB, addr string) *Conn {
	t.Helper()
	nc, err := net.DialTimeout("tcp", addr, 5*time.Second)
	if err != nil {
		t.Fatalf("dial %s: %v", addr, err)
	}
	t.Cleanup(func() { nc.Close() })
	return &Conn{t: t, nc: nc, rd: bufio.NewReader(nc)}
}

// Encode returns args as a RESP multibulk request.
func Encode(args ...string) []byte {
	b := []byte("*" + strconv.Itoa(len(args)) + "\r\n")
	for _, a := range args {
		b = append(b, "$"+strconv.Itoa(len(a))+"\r\n"+a+"\r\n"...)
	}
	return b
}

// Do sends one command and returns its rendered reply.
func (c *Conn) Do(args ...string) string {
	c.t.Helper()
	c.Send(Encode(args...))
	r, err := c.Read()
	if err != nil {
		c.t.Fatalf("%q: read reply: %v", args, err)
	}
	return r
}

// Send writes raw bytes, failing the test if it cannot. Call it from the
// test's goroutine; other goroutines use Write.
func (c *Conn) Send(b []byte) {
	c.t.Helper()
	if err := c.Write(b); err != nil {
		c.t.Fatalf("write: %v", err)
	}
}

// Write writes raw bytes and returns the error, for goroutines other than
// the test's (which must not stop the test).
func (c *Conn) Write(b []byte) error {
	c.nc.SetWriteDeadline(time.Now().Add(10 * time.Second))
	_, err := c.nc.Write(b)
	return err
}

// Read reads and renders one reply.
func (c *Conn) Read() (string, error) {
	c.nc.SetReadDeadline(time.Now().Add(10 * time.Second))
	return ReadReply(c.rd)
}

// Closed reports whether the server has closed the connection: the next
// read, within a few seconds, ends in EOF or a reset (a server that closes
// with unread input resets the connection), not in a timeout or data.
func (c *Conn) Closed() bool {
	c.nc.SetReadDeadline(time.Now().Add(5 * time.Second))
	_, err := c.rd.ReadByte()
	var ne net.Error
	if errors.As(err, &ne) && ne.Timeout() {
		return false
	}
	return err != nil
}

// ReadReply reads one RESP2/RESP3 reply from rd and renders it.
func ReadReply(rd *bufio.Reader) (string, error) {
	line, err := rd.ReadString('\n')
	if err != nil {
		return "", err
	}
	if !strings.HasSuffix(line, "\r\n") || len(line) < 3 {
		return "", fmt.Errorf("bad reply line %q", line)
	}
	body := line[1 : len(line)-2]
	agg := func(n int, open, sep, close string, pairs bool) (string, error) {
		var parts []string
		for i := 0; i < n; i++ {
			k, err := ReadReply(rd)
			if err != nil {
				return "", err
			}
			if pairs {
				v, err := ReadReply(rd)
				if err != nil {
					return "", err
				}
				k += ": " + v
			}
			parts = append(parts, k)
		}
		return open + strings.Join(parts, sep) + close, nil
	}
	switch line[0] {
	case '+':
		return "+" + body, nil
	case '-':
		return "-" + body, nil
	case ':':
		return body, nil
	case ',':
		return "," + body, nil
	case '#':
		return "#" + body, nil
	case '_':
		return "(nil)", nil
	case '$', '=':
		n, err := strconv.Atoi(body)
		if err != nil {
			return "", err
		}
		if n < 0 {
			return "(nil)", nil
		}
		buf := make([]byte, n+2)
		if _, err := io.ReadFull(rd, buf); err != nil {
			return "", err
		}
		s := strconv.Quote(string(buf[:n]))
		if line[0] == '=' {
			return "=" + s, nil
		}
		return s, nil
	case '*', '~', '%', '>':
		n, err := strconv.Atoi(body)
		if err != nil {
			return "", err
		}
		if n < 0 {
			return "(nil-array)", nil
		}
		switch line[0] {
		case '~':
			return agg(n, "~[", " ", "]", false)
		case '>':
			return agg(n, ">[", " ", "]", false)
		case '%':
			return agg(n, "{", ", ", "}", true)
		}
		return agg(n, "[", " ", "]", false)
	}
	return "", fmt.Errorf("unknown reply type %q", line)
}

// SplitArgs splits a transcript command line into arguments: fields
// separated by spaces, or Go-quoted strings ("a b", "\xff").
func SplitArgs(line string) ([]string, error) {
	var out []string
	for {
		line = strings.TrimLeft(line, " \t")
		if line == "" {
			return out, nil
		}
		if line[0] == '"' {
			q, err := strconv.QuotedPrefix(line)
			if err != nil {
				return nil, fmt.Errorf("bad quoted argument in %q: %v", line, err)
			}
			s, _ := strconv.Unquote(q)
			out = append(out, s)
			line = line[len(q):]
			continue
		}
		i := strings.IndexAny(line, " \t")
		if i < 0 {
			i = len(line)
		}
		out = append(out, line[:i])
		line = line[i:]
	}
}

// Transcript is a file of commands and their expected replies:
//
//	# a comment
//	> CL.THROTTLE user123 15 30 60 1
//	[0 16 15 -1 2]
//
// Each "> " line is sent on one connection; the next line is the reply as
// ReadReply renders it. "new-conn" on a line of its own switches to a new
// connection. RunTranscript runs it over TCP against the server at addr.
func RunTranscript(t *testing.T, addr, path string, rewrite bool) {
	t.Helper()
	RunTranscriptOn(t, func() Doer { return Dial(t, addr) }, path, rewrite)
}

// Doer sends one command and returns its rendered reply: a Conn over TCP,
// or a Local connection in process.
type Doer interface {
	Do(args ...string) string
}

// RunTranscriptOn runs the transcript at path on connections conn opens.
func RunTranscriptOn(t *testing.T, conn func() Doer, path string, rewrite bool) {
	t.Helper()
	data, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	lines := strings.Split(strings.TrimRight(string(data), "\n"), "\n")
	c := conn()
	var out []string
	for i := 0; i < len(lines); i++ {
		l := lines[i]
		out = append(out, l)
		switch {
		case l == "new-conn":
			c = conn()
		case strings.HasPrefix(l, "> "):
			args, err := SplitArgs(l[2:])
			if err != nil {
				t.Fatalf("%s:%d: %v", path, i+1, err)
			}
			got := c.Do(args...)
			if i+1 >= len(lines) {
				t.Fatalf("%s:%d: no expected reply after command", path, i+1)
			}
			i++
			out = append(out, got)
			if !rewrite && got != lines[i] {
				t.Errorf("%s:%d: %s\n  got:  %s\n  want: %s", path, i+1, l[2:], got, lines[i])
			}
		}
	}
	if rewrite {
		if err := os.WriteFile(path, []byte(strings.Join(out, "\n")+"\n"), 0o644); err != nil {
			t.Fatal(err)
		}
	}
}

// Close closes the connection from the client's side.
func (c *Conn) Close() error { return c.nc.Close() }

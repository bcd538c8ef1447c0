// Package respconn is the bench tools' RESP client: a connection that
// writes hand-encoded pipelines and reads replies without building
// values, so that a load generator costs the measured machine little.
package respconn

import (
	"bufio"
	"fmt"
	"net"
	"os"
	"strconv"
	"strings"
)

// Conn is a RESP connection. Its methods exit the process on an I/O
// error: a bench tool has nothing to recover.
type Conn struct {
	net.Conn
	rd *bufio.Reader
}

// Dial connects to addr or exits.
func Dial(addr string) *Conn {
	nc, err := net.Dial("tcp", addr)
	if err != nil {
		Fail("dial %s: %v", addr, err)
	}
	return &Conn{Conn: nc, rd: bufio.NewReaderSize(nc, 64<<10)}
}

// Load loads a script and returns its SHA1.
func (c *Conn) Load(script string) string {
	if _, err := c.Write(AppendCmd(nil, "SCRIPT", "LOAD", script)); err != nil {
		Fail("write: %v", err)
	}
	line, err := c.rd.ReadString('\n')
	if err != nil || line[0] != '$' {
		Fail("SCRIPT LOAD: %q %v", line, err)
	}
	sha, err := c.rd.ReadString('\n')
	if err != nil {
		Fail("SCRIPT LOAD: %v", err)
	}
	return strings.TrimSpace(sha)
}

// Reply is what a reply says, as far as the tools look: an error's text,
// an integer, and whether it was an integer or an array of six elements
// ending in one (an RL.ACQUIRE that gave a token).
type Reply struct {
	Err   string
	N     int64
	Token bool
}

// Reply reads one reply.
func (c *Conn) Reply() Reply {
	line, err := c.rd.ReadSlice('\n')
	if err != nil {
		Fail("read: %v", err)
	}
	body := string(line[1 : len(line)-2])
	switch line[0] {
	case '-':
		return Reply{Err: body}
	case ':':
		n, _ := strconv.ParseInt(body, 10, 64)
		return Reply{N: n, Token: true}
	case '$':
		n, _ := strconv.Atoi(body)
		if n >= 0 {
			if _, err := c.rd.Discard(n + 2); err != nil {
				Fail("read: %v", err)
			}
		}
		return Reply{}
	case '*':
		n, _ := strconv.Atoi(body)
		var last Reply
		for range max(n, 0) {
			last = c.Reply()
		}
		return Reply{Token: n == 6 && last.Token}
	}
	return Reply{Err: "unexpected " + body}
}

// AppendCmd appends a command in RESP.
func AppendCmd(b []byte, args ...string) []byte {
	b = append(b, '*')
	b = strconv.AppendInt(b, int64(len(args)), 10)
	b = append(b, '\r', '\n')
	for _, a := range args {
		b = append(b, '$')
		b = strconv.AppendInt(b, int64(len(a)), 10)
		b = append(b, '\r', '\n')
		b = append(b, a...)
		b = append(b, '\r', '\n')
	}
	return b
}

// CPUTicks reads a process's user plus system time, in clock ticks (0 for
// no process).
func CPUTicks(pid int) int64 {
	if pid == 0 {
		return 0
	}
	b, err := os.ReadFile(fmt.Sprintf("/proc/%d/stat", pid))
	if err != nil {
		Fail("read /proc/%d/stat: %v", pid, err)
	}
	f := strings.Fields(string(b[strings.LastIndexByte(string(b), ')')+2:]))
	u, _ := strconv.ParseInt(f[11], 10, 64)
	s, _ := strconv.ParseInt(f[12], 10, 64)
	return u + s
}

// Fail prints to stderr, prefixed with the command's name, and exits 1.
func Fail(format string, args ...any) {
	name := os.Args[0]
	if i := strings.LastIndexByte(name, '/'); i >= 0 {
		name = name[i+1:]
	}
	fmt.Fprintf(os.Stderr, name+": "+format+"\n", args...)
	os.Exit(1)
}

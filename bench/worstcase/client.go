package worstcase

import (
	"bufio"
	"fmt"
	"io"
	"net"
	"strconv"
	"time"
)

// client is a minimal pipelining RESP client: commands are buffered by
// send and their replies read in order by reply.
type client struct {
	nc net.Conn
	w  *bufio.Writer
	r  *bufio.Reader
}

func dial(addr string) (*client, error) {
	nc, err := net.DialTimeout("tcp", addr, 5*time.Second)
	if err != nil {
		return nil, err
	}
	return &client{nc: nc, w: bufio.NewWriterSize(nc, 64<<10), r: bufio.NewReaderSize(nc, 64<<10)}, nil
}

func (c *client) close() error { return c.nc.Close() }

func (c *client) send(args ...string) {
	c.w.WriteString("*" + strconv.Itoa(len(args)) + "\r\n")
	for _, a := range args {
		c.w.WriteString("$" + strconv.Itoa(len(a)) + "\r\n" + a + "\r\n")
	}
}

func (c *client) flush() error { return c.w.Flush() }

// reply reads one reply: an integer, a simple string, or an array of
// integers (the limiter reply). Errors come back as Go errors.
func (c *client) reply() ([]int64, error) {
	line, err := c.r.ReadString('\n')
	if err != nil {
		return nil, err
	}
	if len(line) < 3 {
		return nil, fmt.Errorf("short reply %q", line)
	}
	body := line[1 : len(line)-2]
	switch line[0] {
	case '+':
		return nil, nil
	case '-':
		return nil, fmt.Errorf("server error: %s", body)
	case ':':
		n, err := strconv.ParseInt(body, 10, 64)
		return []int64{n}, err
	case '*':
		n, err := strconv.Atoi(body)
		if err != nil {
			return nil, err
		}
		out := make([]int64, 0, n)
		for i := 0; i < n; i++ {
			v, err := c.reply()
			if err != nil {
				return nil, err
			}
			out = append(out, v...)
		}
		return out, nil
	case '$':
		n, err := strconv.Atoi(body)
		if err != nil || n < 0 {
			return nil, err
		}
		buf := make([]byte, n+2)
		_, err = io.ReadFull(c.r, buf)
		return nil, err
	}
	return nil, fmt.Errorf("unexpected reply %q", line)
}

// do sends one command and returns its reply.
func (c *client) do(args ...string) ([]int64, error) {
	c.send(args...)
	if err := c.flush(); err != nil {
		return nil, err
	}
	return c.reply()
}

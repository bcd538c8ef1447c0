package cluster

import (
	"bufio"
	"context"
	"errors"
	"fmt"
	"io"
	"net"
	"strconv"
	"time"
)

// peer is a connection to another node of the map, for ROLE and for
// taking over slots: a minimal RESP2 client. Not safe for concurrent use.
type peer struct {
	addr, password string
	conn           net.Conn
	br             *bufio.Reader
}

// peerError is an error reply from a peer.
type peerError string

func (e peerError) Error() string { return string(e) }

// dialTimeout bounds connecting to a peer: on loopback or a LAN, a node
// that takes longer is as good as down for routing purposes.
const dialTimeout = 300 * time.Millisecond

// do sends args and reads the reply within timeout, connecting (and
// authenticating) first if needed. A reply is a string (simple), []byte
// (bulk), int64, []any, nil, or a peerError returned as the error. Any
// other error closes the connection.
func (p *peer) do(ctx context.Context, timeout time.Duration, args ...string) (any, error) {
	if p.conn == nil {
		d := net.Dialer{Timeout: dialTimeout}
		c, err := d.DialContext(ctx, "tcp", p.addr)
		if err != nil {
			return nil, err
		}
		p.conn, p.br = c, bufio.NewReader(c)
		if p.password != "" {
			if _, err := p.do(ctx, timeout, "AUTH", p.password); err != nil {
				p.close()
				return nil, fmt.Errorf("AUTH: %w", err)
			}
		}
	}
	var b []byte
	b = fmt.Appendf(b, "*%d\r\n", len(args))
	for _, a := range args {
		b = fmt.Appendf(b, "$%d\r\n%s\r\n", len(a), a)
	}
	_ = p.conn.SetDeadline(time.Now().Add(timeout))
	if _, err := p.conn.Write(b); err != nil {
		p.close()
		return nil, err
	}
	v, err := readReply(p.br, 0)
	if err != nil {
		var pe peerError
		if !errors.As(err, &pe) {
			p.close()
		}
	}
	return v, err
}

func (p *peer) close() {
	if p.conn != nil {
		p.conn.Close()
		p.conn, p.br = nil, nil
	}
}

// maxReply bounds a bulk reply from a peer (a slot range's records).
const maxReply = 1 << 30

// readReply reads one RESP2 reply.
func readReply(br *bufio.Reader, depth int) (any, error) {
	if depth > 8 {
		return nil, errors.New("cluster: reply nested too deep")
	}
	line, err := br.ReadSlice('\n')
	if err != nil {
		return nil, err
	}
	if len(line) < 3 || line[len(line)-2] != '\r' {
		return nil, errors.New("cluster: malformed reply")
	}
	body := string(line[1 : len(line)-2])
	switch line[0] {
	case '+':
		return body, nil
	case '-':
		return nil, peerError(body)
	case ':':
		return strconv.ParseInt(body, 10, 64)
	case '$':
		n, err := strconv.Atoi(body)
		if err != nil || n > maxReply {
			return nil, errors.New("cluster: malformed bulk length")
		}
		if n < 0 {
			return nil, nil
		}
		b := make([]byte, n+2)
		if _, err := io.ReadFull(br, b); err != nil {
			return nil, err
		}
		return b[:n], nil
	case '*':
		n, err := strconv.Atoi(body)
		if err != nil || n > 1<<20 {
			return nil, errors.New("cluster: malformed array length")
		}
		if n < 0 {
			return nil, nil
		}
		out := make([]any, n)
		for i := range out {
			if out[i], err = readReply(br, depth+1); err != nil {
				var pe peerError
				if !errors.As(err, &pe) {
					return nil, err
				}
				out[i] = pe
			}
		}
		return out, nil
	}
	return nil, fmt.Errorf("cluster: unknown reply type %q", line[0])
}

// PeerRole is what a node's ROLE said: a primary, or a replica with its
// link state; Offset is its replication offset.
type PeerRole struct {
	Replica bool
	// Host and Port are a replica's primary; LinkUp whether its link is.
	Host   string
	Port   int
	LinkUp bool
	Offset int64
}

// parseRole reads ROLE's reply.
func parseRole(v any) (PeerRole, error) {
	a, ok := v.([]any)
	if !ok || len(a) < 2 {
		return PeerRole{}, errors.New("cluster: ROLE reply is not an array")
	}
	kind, _ := a[0].([]byte)
	switch string(kind) {
	case "master":
		off, _ := a[1].(int64)
		return PeerRole{Offset: off}, nil
	case "slave":
		if len(a) < 5 {
			return PeerRole{}, errors.New("cluster: short replica ROLE reply")
		}
		host, _ := a[1].([]byte)
		port, _ := a[2].(int64)
		state, _ := a[3].([]byte)
		off, _ := a[4].(int64)
		return PeerRole{Replica: true, Host: string(host), Port: int(port), LinkUp: string(state) == "connected", Offset: off}, nil
	}
	return PeerRole{}, fmt.Errorf("cluster: ROLE %q", kind)
}

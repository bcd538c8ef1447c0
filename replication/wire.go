package replication

import (
	"bufio"
	"errors"
	"fmt"
	"strconv"
	"strings"
)

// The few RESP shapes a link exchanges besides the stream: a replica's
// commands (the handshake, REPLCONF ACK) and a primary's one-line replies.

// maxWireArg bounds an argument read on a link.
const maxWireArg = 1 << 20

var errWire = errors.New("replication: malformed RESP on the link")

// readCommand reads one command: a RESP array of bulk strings, or an
// inline command (words on a line).
func readCommand(br *bufio.Reader) ([]string, error) {
	line, err := readLine(br)
	if err != nil {
		return nil, err
	}
	if !strings.HasPrefix(line, "*") {
		return strings.Fields(line), nil
	}
	n, err := strconv.Atoi(line[1:])
	if err != nil || n < 0 || n > 64 {
		return nil, errWire
	}
	args := make([]string, n)
	for i := range args {
		h, err := readLine(br)
		if err != nil {
			return nil, err
		}
		if !strings.HasPrefix(h, "$") {
			return nil, errWire
		}
		k, err := strconv.Atoi(h[1:])
		if err != nil || k < 0 || k > maxWireArg {
			return nil, errWire
		}
		b := make([]byte, k+2)
		if _, err := readFull(br, b); err != nil {
			return nil, err
		}
		args[i] = string(b[:k])
	}
	return args, nil
}

// readLine reads a line ending in \r\n (or \n), without it.
func readLine(br *bufio.Reader) (string, error) {
	line, err := br.ReadSlice('\n')
	if err != nil {
		if errors.Is(err, bufio.ErrBufferFull) {
			return "", errWire
		}
		return "", err
	}
	return strings.TrimRight(string(line), "\r\n"), nil
}

func readFull(br *bufio.Reader, b []byte) (int, error) {
	n := 0
	for n < len(b) {
		k, err := br.Read(b[n:])
		n += k
		if err != nil {
			return n, err
		}
	}
	return n, nil
}

// appendCommand encodes args as a RESP array of bulk strings.
func appendCommand(dst []byte, args ...string) []byte {
	dst = fmt.Appendf(dst, "*%d\r\n", len(args))
	for _, a := range args {
		dst = fmt.Appendf(dst, "$%d\r\n%s\r\n", len(a), a)
	}
	return dst
}

//go:build !linux

package resp

import (
	"io"
	"net"
)

// rawIO is the connection itself where raw system calls are not used.
func rawIO(nc net.Conn) io.ReadWriter { return nc }

//go:build !linux

package replication

import "net"

// blocking returns c unchanged: the event loops, and so the need for
// blocking links (fdconn_linux.go), exist on Linux only.
func blocking(c net.Conn) net.Conn { return c }

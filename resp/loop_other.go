//go:build !linux

package resp

import (
	"net"
	"sync/atomic"
)

// Event loops are Linux-only; elsewhere every connection has a goroutine.
type loop struct{ stop atomic.Bool }

type lconn struct{}

func (*lconn) kill()                  {}
func (*loop) wakeUp()                 {}
func (s *Server) startLoops() bool    { return false }
func (s *Server) adopt(net.Conn) bool { return false }

// Watch reports that no event loop serves: see watch_linux.go.
func (s *Server) Watch(fd int, ready func() bool) (stop, kick func(), ok bool) {
	return nil, nil, false
}

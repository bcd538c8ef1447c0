package replication

import (
	"errors"
	"io"
	"net"
	"os"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
)

// TestBlockingConn: a connection made blocking reads and writes what the
// other side sends, times out at its read deadline, sees the peer's close
// as EOF, and a Close wakes a read blocked on it.
func TestBlockingConn(t *testing.T) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	require.NoError(t, err)
	defer ln.Close()
	accepted := make(chan net.Conn, 1)
	go func() {
		c, _ := ln.Accept()
		accepted <- c
	}()
	d, err := net.Dial("tcp", ln.Addr().String())
	require.NoError(t, err)
	c := blocking(d)
	require.IsType(t, &fdConn{}, c)
	peer := <-accepted
	defer peer.Close()

	_, err = c.Write([]byte("ping"))
	require.NoError(t, err)
	buf := make([]byte, 4)
	_, err = io.ReadFull(peer, buf)
	require.NoError(t, err)
	require.Equal(t, "ping", string(buf))
	_, err = peer.Write([]byte("pong"))
	require.NoError(t, err)
	_, err = io.ReadFull(c, buf)
	require.NoError(t, err)
	require.Equal(t, "pong", string(buf))

	require.NoError(t, c.SetReadDeadline(time.Now().Add(20*time.Millisecond)))
	_, err = c.Read(buf)
	require.True(t, errors.Is(err, os.ErrDeadlineExceeded), "%v", err)
	var ne net.Error
	require.True(t, errors.As(err, &ne) && ne.Timeout(), "a timeout the replica recognises: %v", err)
	require.NoError(t, c.SetReadDeadline(time.Time{}))

	done := make(chan error, 1)
	go func() {
		_, err := c.Read(buf)
		done <- err
	}()
	require.Never(t, func() bool { return len(done) > 0 }, 50*time.Millisecond, 5*time.Millisecond, "the read blocks")
	require.NoError(t, c.Close())
	select {
	case err := <-done:
		require.Error(t, err)
	case <-time.After(5 * time.Second):
		t.Fatal("Close did not wake the blocked read")
	}
	require.ErrorIs(t, c.Close(), net.ErrClosed)
	_, err = c.Write([]byte("x"))
	require.ErrorIs(t, err, net.ErrClosed)

	// The peer's close is EOF.
	d2, err := net.Dial("tcp", ln.Addr().String())
	require.NoError(t, err)
	go func() {
		c, _ := ln.Accept()
		accepted <- c
	}()
	c2 := blocking(d2)
	defer c2.Close()
	(<-accepted).Close()
	_, err = c2.Read(buf)
	require.ErrorIs(t, err, io.EOF)
}

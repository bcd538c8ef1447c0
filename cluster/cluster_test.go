package cluster

import (
	"fmt"
	"os"
	"path/filepath"
	"testing"

	"github.com/stretchr/testify/require"
)

// twoShards: A owns 0-5460, B the rest; D replicates A.
var twoShards = fmt.Sprintf(`%s 127.0.0.1:7301@17301 master - 0 0 1 connected 0-5460
%s 127.0.0.1:7302@17302 master - 0 0 2 connected 5461-16383
%s 127.0.0.1:7304@17304 slave %s 0 0 1 connected
vars currentEpoch 2 lastVoteEpoch 0
`, idA, idB, idD, idA)

// moved is twoShards with slots 0-100 given to B, a later epoch.
var moved = fmt.Sprintf(`%s 127.0.0.1:7301@17301 master - 0 0 1 connected 101-5460
%s 127.0.0.1:7302@17302 master - 0 0 2 connected 0-100 5461-16383
%s 127.0.0.1:7304@17304 slave %s 0 0 1 connected
vars currentEpoch 3 lastVoteEpoch 0
`, idA, idB, idD, idA)

// testCluster is a Cluster of map text as node self, its role read from
// *role; rewrite replaces the map file (then Reload).
func testCluster(t *testing.T, text, self string, role *PeerRole) (*Cluster, func(string)) {
	t.Helper()
	path := filepath.Join(t.TempDir(), "nodes.conf")
	write := func(s string) { require.NoError(t, os.WriteFile(path, []byte(s), 0o644)) }
	write(text)
	c, err := New(Options{Path: path, Self: self, FullCoverage: true, Role: func() PeerRole { return *role }})
	require.NoError(t, err)
	return c, write
}

type routed struct {
	v    Verdict
	addr string
}

func route(c *Cluster, s int, readOK bool) routed {
	v, a := c.Route(s, readOK)
	return routed{v, a}
}

// setPeer records what a poll of node id found, and rebuilds the view.
func setPeer(c *Cluster, id string, r PeerRole, up bool) {
	c.mu.Lock()
	defer c.mu.Unlock()
	i := c.m.Index(id)
	c.peers[i], c.up[i] = r, up
	c.rebuildLocked()
}

// TestFollowFailover: a shard's current primary is the member that says
// it is one; a primary that comes back beside the promoted one does not
// take the shard back; this node's own role and whom it follows count.
func TestFollowFailover(t *testing.T) {
	me := PeerRole{}
	c, _ := testCluster(t, twoShards, idB, &me)
	require.Equal(t, routed{Moved, "127.0.0.1:7301"}, route(c, 0, false))
	require.Equal(t, routed{Serve, ""}, route(c, 6000, false))

	setPeer(c, idA, PeerRole{}, false) // A killed
	require.Equal(t, routed{Moved, "127.0.0.1:7301"}, route(c, 0, false), "no one says primary yet: the last one stays")
	setPeer(c, idD, PeerRole{Offset: 10}, true) // Sentinel promoted D
	require.Equal(t, routed{Moved, "127.0.0.1:7304"}, route(c, 0, false))
	setPeer(c, idA, PeerRole{}, true) // A restarted, still a primary
	require.Equal(t, routed{Moved, "127.0.0.1:7304"}, route(c, 0, false), "the promoted primary keeps the shard")
	setPeer(c, idA, PeerRole{Replica: true, Host: "127.0.0.1", Port: 7304, LinkUp: true}, true)
	top := c.Topology()
	require.False(t, top.Nodes[0].Master)
	require.Equal(t, idD, top.Nodes[0].Of)
	require.True(t, top.Nodes[2].Master)
	require.Equal(t, []int{2, 0}, top.Shards[0].Nodes, "the current primary first")
	require.Equal(t, []Range{{0, 5460}}, top.Nodes[2].Ranges)

	// A demoted node follows its new primary even before any poll.
	me = PeerRole{Replica: true, Host: "127.0.0.1", Port: 7304}
	a, _ := testCluster(t, twoShards, idA, &me)
	require.Equal(t, routed{Moved, "127.0.0.1:7304"}, route(a, 0, false))
	require.Equal(t, routed{Serve, ""}, route(a, 0, true), "READONLY reads of its own shard")
	require.Equal(t, routed{Moved, "127.0.0.1:7302"}, route(a, 6000, true))
}

// TestReloadRefusesLowerEpoch: the loaded map stays.
func TestReloadRefusesLowerEpoch(t *testing.T) {
	me := PeerRole{}
	c, write := testCluster(t, moved, idA, &me)
	write(twoShards)
	require.ErrorIs(t, c.Reload(), ErrLowerEpoch)
	require.Equal(t, int64(3), c.Topology().CurrentEpoch)
	require.Equal(t, routed{Moved, "127.0.0.1:7302"}, route(c, 0, false))
	write("garbage line\n")
	require.ErrorContains(t, c.Reload(), "nodes.conf:1: a node line has at least 8 fields")
}

// TestMoveGiver: slots a new map gives away are decided here until their
// new owner takes them (Give), then redirected to it.
func TestMoveGiver(t *testing.T) {
	me := PeerRole{}
	c, write := testCluster(t, twoShards, idA, &me)
	write(moved)
	require.NoError(t, c.Reload())
	require.Equal(t, routed{Serve, ""}, route(c, 50, false), "lent until taken")
	require.Equal(t, routed{Serve, ""}, route(c, 200, false))
	require.Equal(t, []Range{{0, 100}, {5461, 16383}}, c.Topology().Shards[1].Ranges, "replies show the new map at once")
	slots, err := ParseRanges([]string{"0-100"})
	require.NoError(t, err)
	require.NoError(t, c.Give(idB, slots))
	require.Equal(t, routed{Moved, "127.0.0.1:7302"}, route(c, 50, false))
	require.Equal(t, routed{Serve, ""}, route(c, 101, false))
	require.ErrorContains(t, c.Give(idA[:39]+"e", slots), "unknown node")

	me = PeerRole{Replica: true, Host: "127.0.0.1", Port: 7302}
	require.ErrorContains(t, c.Give(idB, slots), "not a primary")
}

// TestMoveGiverAhead: a node handed slots by a newer map than its own
// redirects them to their taker until its map catches up.
func TestMoveGiverAhead(t *testing.T) {
	me := PeerRole{}
	c, write := testCluster(t, twoShards, idA, &me)
	slots, _ := ParseRanges([]string{"0-100"})
	require.NoError(t, c.Give(idB, slots))
	require.Equal(t, routed{Moved, "127.0.0.1:7302"}, route(c, 50, false))
	write(moved)
	require.NoError(t, c.Reload())
	require.Equal(t, routed{Moved, "127.0.0.1:7302"}, route(c, 50, false))
	require.Empty(t, c.to, "the map caught up")
}

// TestMoveTaker: slots a new map gives this node are sent back with ASK
// to where their records are (whoever is that shard's primary now), are
// TRYAGAIN while the handoff runs, and served once it is done; a failed
// handoff goes back to ASK.
func TestMoveTaker(t *testing.T) {
	me := PeerRole{}
	c, write := testCluster(t, twoShards, idB, &me)
	write(moved)
	require.NoError(t, c.Reload())
	require.Equal(t, routed{Ask, "127.0.0.1:7301"}, route(c, 50, false))
	require.Equal(t, routed{Moved, "127.0.0.1:7301"}, route(c, 101, false))
	setPeer(c, idA, PeerRole{}, false)
	setPeer(c, idD, PeerRole{}, true) // A's shard failed over to D
	require.Equal(t, routed{Ask, "127.0.0.1:7304"}, route(c, 50, false), "the records are with the shard's primary now")

	addr, slots := c.nextImport()
	require.Equal(t, "127.0.0.1:7304", addr)
	require.Equal(t, []Range{{0, 100}}, rangesOf(slots))
	require.Equal(t, routed{TryAgain, ""}, route(c, 50, false))
	a2, s2 := c.nextImport()
	require.Nil(t, s2, "nothing else to import (%s)", a2)

	// A failed handoff: back to ASK; a good one: served.
	c.finishImport(slots, false)
	require.Equal(t, routed{Ask, "127.0.0.1:7304"}, route(c, 50, false))
	_, slots = c.nextImport()
	c.finishImport(slots, true)
	require.Equal(t, routed{Serve, ""}, route(c, 50, false))
	require.Equal(t, routed{Serve, ""}, route(c, 6000, false))
}

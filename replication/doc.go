// Package replication owns a node's replication (docs/replication.md).
//
// As a primary it reads the engine's changes through a change feed of its
// own, writes them as a stream of absolute state records tagged with the
// clock into a backlog, and sends the backlog to each replica link,
// reading the replicas' acknowledgements. As a replica it keeps one link to
// its primary: Redis's handshake (PING, AUTH, REPLCONF, PSYNC), a full or a
// partial sync, then it applies the stream to the engine, keeps it in its
// own backlog and acknowledges it. A replica never decides: it installs the
// states its primary decided.
//
// The records are persistence's codec. The node's clock is a
// clock.Timeline, which follows the primary's readings and is promoted
// with the node.
//
// This package imports engine, clock and persist (for the codec) and never
// node, commands, resp or server: the node calls it, not the other way.
package replication

// Package cluster holds what makes rlserver nodes one Redis Cluster: the
// hash slots of keys, the shared slot map (the nodes.conf line format),
// and each node's live view of it: which node is each shard's primary
// now, which slots this node serves, and the slots it is taking over
// from another shard. docs/cluster.md describes the protocol.
//
// There is no gossip bus. Every node reads the same map file; a shard's
// current primary is learned by asking the shard's nodes for their ROLE;
// a slot that moves is pulled by its new owner from its old one.
//
// It imports only the standard library and the clock package's loop:
// its own role, following a primary and installing records pulled from
// another shard are the node's, given as functions (Options).
package cluster

// Package node is one rlserver node without its sockets: its state (the
// keyspace, the clock, the configuration, the snapshotter), its clients,
// the dispatcher that runs their commands (Exec: checks, the users'
// permissions among them, the clock read once, the handler, the
// counters), the users (users.go), INFO as a table of section functions,
// CONFIG's parameters and the background expiry sweep.
//
// Dependencies point one way: node imports commands (the table, the
// handlers, the reply writer, the errors), acl, engine, clock and persist, and
// implements commands.Node for the handlers. It never imports resp, net
// or the wiring; resp feeds it commands and the server package assembles
// it. Only node and the wiring import persist.
package node

// Package commands is rlserver's command table and what runs each entry:
//
//   - commands.go: the one table (NewTable), with Redis's arity, flags,
//     key positions and ACL categories, from which COMMAND and COMMAND
//     DOCS are generated; table.go the Command type, and the table as
//     the users' rules see it (Table.ACLCatalog, for package acl).
//   - handlers, one file per family, each parsing its arguments apart from
//     running them: connection.go (PING, AUTH, HELLO, ...), client.go
//     (CLIENT), keys.go (DEL, TYPE, TTL, GET, SET, SCAN, ...), limiters.go
//     (RL.*), throttle.go (CL.THROTTLE), server.go (INFO, CONFIG, SAVE,
//     SHUTDOWN, DEBUG CLOCK, ...), introspection.go (COMMAND), txn.go
//     (MULTI, EXEC, DISCARD), cluster.go (CLUSTER, READONLY, READWRITE,
//     ASKING), acl.go (ACL SETUSER, LIST, LOAD, ...).
//   - session.go: one connection's protocol state; ctx.go what a handler
//     sees (Ctx) and what it may ask of the node (the Node interface).
//   - writer.go: the narrow reply Writer; errors.go every error text sent.
//
// Handlers write to a Writer and reach the node only through Node, so
// every command runs and is tested without sockets. Dependencies point
// one way: commands imports engine, clock, cluster, acl and glob; the node package imports
// commands and implements Node; commands never imports node, resp,
// persist or net.
package commands

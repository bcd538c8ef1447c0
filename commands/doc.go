// Package commands is rlserver's logic between the wire and the engine: the
// command table, argument parsing, connection state (auth, protocol
// version, MULTI), and replies written to a narrow Writer, so every command
// runs and is tested without sockets.
//
// Dependencies point one way: commands imports engine and clock, never the
// resp package or net; resp imports commands.
package commands

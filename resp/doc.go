// Package resp is rlserver's wire: it accepts TCP (optionally TLS)
// connections, reads RESP2/RESP3 and inline commands, hands each to
// node.Node.Exec and writes the replies. It imports node (the dispatcher)
// and commands (the reply writer it implements), never engine.
//
// Replies are encoded with tidwall/redcon's Append* functions. Requests are
// read by this package's own bounded parser rather than redcon's reader,
// which has no size limits and panics on some malformed input: here every
// count and length is checked against node.Limits before any memory is
// committed, malformed input gets Redis's protocol error and the connection
// is closed, and argument slices point into a reused buffer (no allocation
// per command). The parser is fuzzed (FuzzRequest).
//
// Pipelining: replies accumulate in a per-connection buffer and are flushed
// when no complete command is left in the input (or the buffer passes
// 64 KiB), so a pipeline of N commands costs one write, not N.
package resp

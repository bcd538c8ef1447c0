package commands

import (
	"github.com/rlserver/rlserver/acl"
	"github.com/rlserver/rlserver/engine"
)

// NewTable returns rlserver's command table: every command the dispatcher
// knows, with Redis's arity, flags, key positions and ACL categories, so
// COMMAND (which clients cache) describes it truthfully. Each call builds
// a table of its own (a node counts per command in its own slice, by
// Index).
func NewTable() Table {
	const (
		conn   = "connection"
		keys   = "generic"
		server = "server"
		str    = "string"
		txn    = "transactions"
		rl     = "ratelimit"
		pubsub = "pubsub"
	)
	cmds := []*Command{
		// connection
		{Name: "ping", Arity: -1, Clockless: true, Flags: FlagFast, Tips: []string{"request_policy:all_shards", "response_policy:all_succeeded"}, ACL: []string{"@fast", "@connection"}, Group: conn, Since: "1.0.0", Summary: "Returns the server's liveliness response.", Run: cmdPing},
		{Name: "echo", Arity: 2, Clockless: true, Flags: FlagLoading | FlagStale | FlagFast, ACL: []string{"@fast", "@connection"}, Group: conn, Since: "1.0.0", Summary: "Returns the given string.", Run: cmdEcho},
		{Name: "hello", Arity: -1, Clockless: true, Flags: FlagNoScript | FlagLoading | FlagStale | FlagFast | FlagNoAuth | FlagAllowBusy, ACL: []string{"@fast", "@connection"}, Group: conn, Since: "6.0.0", Summary: "Handshakes with the server: protocol version, authentication, client name.", Run: cmdHello},
		{Name: "auth", Arity: -2, Clockless: true, Flags: FlagNoScript | FlagLoading | FlagStale | FlagFast | FlagNoAuth | FlagAllowBusy, ACL: []string{"@fast", "@connection"}, Group: conn, Since: "1.0.0", Summary: "Authenticates the connection.", Run: cmdAuth},
		{Name: "select", Arity: 2, Clockless: true, Flags: FlagLoading | FlagStale | FlagFast, ACL: []string{"@fast", "@connection"}, Group: conn, Since: "1.0.0", Summary: "Selects the database: only 0 exists.", Run: cmdSelect},
		{Name: "quit", Arity: -1, Clockless: true, Flags: FlagNoScript | FlagLoading | FlagStale | FlagFast | FlagNoAuth | FlagTxnControl | FlagAllowBusy, ACL: []string{"@fast", "@connection"}, Group: conn, Since: "1.0.0", Summary: "Closes the connection.", Run: cmdQuit},
		{Name: "reset", Arity: 1, Flags: FlagNoScript | FlagLoading | FlagStale | FlagFast | FlagNoAuth | FlagTxnControl | FlagAllowBusy, ACL: []string{"@fast", "@connection"}, Group: conn, Since: "6.2.0", Summary: "Resets the connection.", Run: cmdReset},
		{Name: "client", Arity: -2, ACL: []string{"@slow"}, Group: conn, Since: "2.4.0", Summary: "A container for client connection commands.", Sub: subTable("client", []*Command{
			{Name: "id", Arity: 2, Flags: FlagNoScript | FlagLoading | FlagStale, ACL: []string{"@slow", "@connection"}, Summary: "Returns the unique client ID of the connection.", Run: cmdClientID},
			{Name: "unblock", Arity: -3, Clockless: true, Flags: FlagAdmin | FlagNoScript | FlagLoading | FlagStale, ACL: []string{"@admin", "@slow", "@dangerous", "@connection"}, Summary: "Unblocks a client blocked by a blocking command: none here, as no command blocks.", Run: cmdClientUnblock},
			{Name: "getredir", Arity: 2, Clockless: true, Flags: FlagNoScript | FlagLoading | FlagStale, ACL: []string{"@slow", "@connection"}, Summary: "Returns the client ID to which the connection's tracking notifications are redirected.", Run: cmdClientGetRedir},
			{Name: "trackinginfo", Arity: 2, Clockless: true, Flags: FlagNoScript | FlagLoading | FlagStale, ACL: []string{"@slow", "@connection"}, Summary: "Returns information about server-assisted client-side caching for the connection.", Run: cmdClientTrackingInfo},
			{Name: "tracking", Arity: -3, Clockless: true, Flags: FlagNoScript | FlagLoading | FlagStale, ACL: []string{"@slow", "@connection"}, Summary: "Controls server-assisted client-side caching for the connection.", Run: cmdClientTracking},
			{Name: "reply", Arity: 3, Clockless: true, Flags: FlagNoScript | FlagLoading | FlagStale, ACL: []string{"@slow", "@connection"}, Summary: "Instructs the server whether to reply to commands.", Run: cmdClientReply},
			{Name: "caching", Arity: 3, Clockless: true, Flags: FlagNoScript | FlagLoading | FlagStale, ACL: []string{"@slow", "@connection"}, Summary: "Instructs the server whether to track the keys in the next request.", Run: cmdClientCaching},
			{Name: "setname", Arity: 3, Flags: FlagNoScript | FlagLoading | FlagStale, ACL: []string{"@slow", "@connection"}, Summary: "Sets the connection name.", Run: cmdClientSetName},
			{Name: "getname", Arity: 2, Flags: FlagNoScript | FlagLoading | FlagStale, ACL: []string{"@slow", "@connection"}, Summary: "Returns the name of the connection.", Run: cmdClientGetName},
			{Name: "list", Arity: -2, Flags: FlagAdmin | FlagNoScript | FlagLoading | FlagStale, Tips: []string{"nondeterministic_output"}, ACL: []string{"@admin", "@slow", "@dangerous", "@connection"}, Summary: "Lists open connections.", Run: cmdClientList},
			{Name: "info", Arity: 2, Flags: FlagNoScript | FlagLoading | FlagStale, Tips: []string{"nondeterministic_output"}, ACL: []string{"@slow", "@connection"}, Summary: "Returns information about the connection.", Run: cmdClientInfo},
			{Name: "kill", Arity: -3, Flags: FlagAdmin | FlagNoScript | FlagLoading | FlagStale, ACL: []string{"@admin", "@slow", "@dangerous", "@connection"}, Summary: "Terminates open connections.", Run: cmdClientKill},
			{Name: "setinfo", Arity: 4, Flags: FlagNoScript | FlagLoading | FlagStale, ACL: []string{"@slow", "@connection"}, Summary: "Sets information specific to the client.", Run: cmdClientSetInfo},
			{Name: "no-evict", Arity: 3, Flags: FlagAdmin | FlagNoScript | FlagLoading | FlagStale, ACL: []string{"@admin", "@slow", "@dangerous", "@connection"}, Summary: "Accepted for compatibility; rlserver never evicts.", Run: cmdClientOnOff},
			{Name: "no-touch", Arity: 3, Flags: FlagNoScript | FlagLoading | FlagStale, ACL: []string{"@slow", "@connection"}, Summary: "Accepted for compatibility; rlserver keeps no access times.", Run: cmdClientOnOff},
			{Name: "pause", Arity: -3, Flags: FlagAdmin | FlagNoScript | FlagLoading | FlagStale, ACL: []string{"@admin", "@slow", "@dangerous", "@connection"}, Summary: "Holds the write commands, or every command, for some milliseconds.", Run: cmdClientPause},
			{Name: "unpause", Arity: 2, Flags: FlagAdmin | FlagNoScript | FlagLoading | FlagStale, ACL: []string{"@admin", "@slow", "@dangerous", "@connection"}, Summary: "Ends CLIENT PAUSE: the held commands run.", Run: cmdClientUnpause},
			{Name: "help", Arity: 2, Flags: FlagLoading | FlagStale, ACL: []string{"@slow", "@connection"}, Summary: "Returns helpful text about the different subcommands.", Run: cmdClientHelp},
		})},
		// keys
		{Name: "del", Arity: -2, Flags: FlagWrite, FirstKey: 1, LastKey: -1, Step: 1, Tips: []string{"request_policy:multi_shard", "response_policy:agg_sum"}, ACL: []string{"@keyspace", "@write", "@slow"}, KeySpecFlags: []string{"RM", "delete"}, Group: keys, Since: "1.0.0", Summary: "Deletes one or more keys.", Run: cmdDel},
		{Name: "unlink", Arity: -2, Flags: FlagWrite | FlagFast, FirstKey: 1, LastKey: -1, Step: 1, Tips: []string{"request_policy:multi_shard", "response_policy:agg_sum"}, ACL: []string{"@keyspace", "@write", "@fast"}, KeySpecFlags: []string{"RM", "delete"}, Group: keys, Since: "4.0.0", Summary: "Deletes one or more keys.", Run: cmdDel},
		{Name: "exists", Arity: -2, Flags: FlagReadOnly | FlagFast, FirstKey: 1, LastKey: -1, Step: 1, KeySpecFlags: []string{"RO"}, Tips: []string{"request_policy:multi_shard", "response_policy:agg_sum"}, ACL: []string{"@keyspace", "@read", "@fast"}, Group: keys, Since: "1.0.0", Summary: "Counts how many of the given keys exist.", Run: cmdExists},
		{Name: "type", Arity: 2, Flags: FlagReadOnly | FlagFast, FirstKey: 1, LastKey: 1, Step: 1, KeySpecFlags: []string{"RO"}, ACL: []string{"@keyspace", "@read", "@fast"}, Group: keys, Since: "1.0.0", Summary: "Returns the type of a key: string (CL.THROTTLE), fixed, log, slide or bucket.", Run: cmdType},
		{Name: "ttl", Arity: 2, Flags: FlagReadOnly | FlagFast, FirstKey: 1, LastKey: 1, Step: 1, Tips: []string{"nondeterministic_output"}, ACL: []string{"@keyspace", "@read", "@fast"}, Group: keys, Since: "1.0.0", Summary: "Returns the expiration time in seconds of a key.", Run: cmdTTL},
		{Name: "pttl", Arity: 2, Flags: FlagReadOnly | FlagFast, FirstKey: 1, LastKey: 1, Step: 1, Tips: []string{"nondeterministic_output"}, ACL: []string{"@keyspace", "@read", "@fast"}, Group: keys, Since: "2.6.0", Summary: "Returns the expiration time in milliseconds of a key.", Run: cmdPTTL},
		{Name: "get", Arity: 2, Flags: FlagReadOnly | FlagFast, FirstKey: 1, LastKey: 1, Step: 1, ACL: []string{"@read", "@string", "@fast"}, Group: str, Since: "1.0.0", Summary: "Returns a CL.THROTTLE key's TAT in ns since the Unix epoch.", Run: cmdGet},
		{Name: "set", Arity: -3, Flags: FlagWrite | FlagDenyOOM, FirstKey: 1, LastKey: 1, Step: 1, KeysOf: setKeys, KeySpecFlags: []string{"RW", "access", "update", "variable_flags"}, ACL: []string{"@write", "@string", "@slow"}, Group: str, Since: "1.0.0", Summary: "Stores a CL.THROTTLE TAT (an unsigned 64-bit integer of ns).", Run: cmdSet},
		{Name: "scan", Arity: -2, Flags: FlagReadOnly, Tips: []string{"nondeterministic_output", "request_policy:special"}, ACL: []string{"@keyspace", "@read", "@slow"}, Group: keys, Since: "2.8.0", Summary: "Iterates over the key names.", Run: cmdScan},
		{Name: "keys", Arity: 2, Flags: FlagReadOnly, Tips: []string{"request_policy:all_shards", "nondeterministic_output_order"}, ACL: []string{"@keyspace", "@read", "@slow", "@dangerous"}, Group: keys, Since: "1.0.0", Summary: "Returns all key names that match a pattern.", Run: cmdKeys},
		{Name: "dbsize", Arity: 1, Flags: FlagReadOnly | FlagFast, Tips: []string{"request_policy:all_shards", "response_policy:agg_sum"}, ACL: []string{"@keyspace", "@read", "@fast"}, Group: server, Since: "1.0.0", Summary: "Returns the number of keys.", Run: cmdDBSize},
		{Name: "flushall", Arity: -1, Flags: FlagWrite, Tips: []string{"request_policy:all_shards", "response_policy:all_succeeded"}, ACL: []string{"@keyspace", "@write", "@slow", "@dangerous"}, Group: server, Since: "1.0.0", Summary: "Removes all keys.", Run: cmdFlushAll},
		{Name: "flushdb", Arity: -1, Flags: FlagWrite, Tips: []string{"request_policy:all_shards", "response_policy:all_succeeded"}, ACL: []string{"@keyspace", "@write", "@slow", "@dangerous"}, Group: server, Since: "1.0.0", Summary: "Removes all keys.", Run: cmdFlushAll},
		{Name: "object", Arity: -2, ACL: []string{"@slow"}, Group: keys, Since: "2.2.3", Summary: "A container for object introspection commands.", Sub: subTable("object", []*Command{
			{Name: "encoding", Arity: 3, Flags: FlagReadOnly, FirstKey: 2, LastKey: 2, Step: 1, KeySpecFlags: []string{"RO"}, Tips: []string{"nondeterministic_output"}, ACL: []string{"@keyspace", "@read", "@slow"}, Summary: "Returns the internal encoding of a key: int (a CL.THROTTLE TAT) or record (RL.* state).", Run: cmdObjectEncoding},
			{Name: "refcount", Arity: 3, Flags: FlagReadOnly, FirstKey: 2, LastKey: 2, Step: 1, KeySpecFlags: []string{"RO"}, Tips: []string{"nondeterministic_output"}, ACL: []string{"@keyspace", "@read", "@slow"}, Summary: "Returns the reference count of a key's value: always 1.", Run: cmdObjectRefcount},
			{Name: "freq", Arity: 3, Flags: FlagReadOnly, FirstKey: 2, LastKey: 2, Step: 1, KeySpecFlags: []string{"RO"}, Tips: []string{"nondeterministic_output"}, ACL: []string{"@keyspace", "@read", "@slow"}, Summary: "Access frequency is not tracked (there is no LFU eviction).", Run: cmdObjectFreq},
			{Name: "help", Arity: 2, Flags: FlagLoading | FlagStale, ACL: []string{"@keyspace", "@slow"}, Summary: "Returns helpful text about the different subcommands.", Run: cmdObjectHelp},
		})},
		{Name: "memory", Arity: -2, ACL: []string{"@slow"}, Group: server, Since: "4.0.0", Summary: "A container for memory diagnostics commands.", Sub: subTable("memory", []*Command{
			{Name: "usage", Arity: -3, Flags: FlagReadOnly, FirstKey: 2, LastKey: 2, Step: 1, KeySpecFlags: []string{"RO"}, ACL: []string{"@read", "@slow"}, Summary: "Estimates the memory usage of a key.", Run: cmdMemoryUsage},
		})},
		// server
		{Name: "info", Arity: -1, Flags: FlagLoading | FlagStale, Tips: []string{"nondeterministic_output", "request_policy:all_shards", "response_policy:special"}, ACL: []string{"@slow", "@dangerous"}, Group: server, Since: "1.0.0", Summary: "Returns information and statistics about the server.", Run: cmdInfo},
		{Name: "command", Arity: -1, Flags: FlagLoading | FlagStale, Tips: []string{"nondeterministic_output_order"}, ACL: []string{"@slow", "@connection"}, Group: server, Since: "2.8.13", Summary: "Returns detailed information about all commands.", Run: cmdCommand, Sub: subTable("command", []*Command{
			{Name: "count", Arity: 2, Flags: FlagLoading | FlagStale, ACL: []string{"@slow", "@connection"}, Summary: "Returns a count of commands.", Run: cmdCommandCount},
			{Name: "info", Arity: -2, Flags: FlagLoading | FlagStale, Tips: []string{"nondeterministic_output_order"}, ACL: []string{"@slow", "@connection"}, Summary: "Returns information about one, multiple or all commands.", Run: cmdCommandInfo},
			{Name: "docs", Arity: -2, Flags: FlagLoading | FlagStale, Tips: []string{"nondeterministic_output_order"}, ACL: []string{"@slow", "@connection"}, Summary: "Returns documentary information about one, multiple or all commands.", Run: cmdCommandDocs},
			{Name: "list", Arity: -2, Flags: FlagLoading | FlagStale, Tips: []string{"nondeterministic_output_order"}, ACL: []string{"@slow", "@connection"}, Summary: "Returns a list of command names.", Run: cmdCommandList},
			{Name: "getkeys", Arity: -4, Flags: FlagLoading | FlagStale, ACL: []string{"@slow", "@connection"}, Summary: "Extracts the key names from an arbitrary command.", Run: cmdCommandGetKeys},
		})},
		{Name: "config", Arity: -2, ACL: []string{"@slow"}, Group: server, Since: "2.0.0", Summary: "A container for server configuration commands.", Sub: subTable("config", []*Command{
			{Name: "get", Arity: -3, Flags: FlagAdmin | FlagNoScript | FlagLoading | FlagStale, ACL: []string{"@admin", "@slow", "@dangerous"}, Summary: "Returns the effective values of configuration parameters.", Run: cmdConfigGet},
			{Name: "set", Arity: -4, Flags: FlagAdmin | FlagNoScript | FlagLoading | FlagStale, Tips: []string{"request_policy:all_nodes", "response_policy:all_succeeded"}, ACL: []string{"@admin", "@slow", "@dangerous"}, Summary: "Sets configuration parameters in-flight.", Run: cmdConfigSet},
			{Name: "rewrite", Arity: 2, Flags: FlagAdmin | FlagNoScript | FlagLoading | FlagStale, ACL: []string{"@admin", "@slow", "@dangerous"}, Summary: "Writes the running configuration to the configuration file.", Run: cmdConfigRewrite},
			{Name: "resetstat", Arity: 2, Flags: FlagAdmin | FlagNoScript | FlagLoading | FlagStale, ACL: []string{"@admin", "@slow", "@dangerous"}, Summary: "Resets the server's statistics.", Run: cmdConfigResetStat},
		})},
		{Name: "time", Arity: 1, Flags: FlagLoading | FlagStale | FlagFast, Tips: []string{"nondeterministic_output"}, ACL: []string{"@fast"}, Group: server, Since: "2.6.0", Summary: "Returns the server clock.", Run: cmdTime},
		{Name: "debug", Arity: -2, Flags: FlagAdmin | FlagNoScript | FlagLoading | FlagStale, ACL: []string{"@admin", "@slow", "@dangerous"}, Group: server, Since: "1.0.0", Summary: "A container for debugging commands.", Sub: subTable("debug", []*Command{
			{Name: "clock", Arity: -3, Flags: FlagAdmin | FlagNoScript | FlagLoading | FlagStale, ACL: []string{"@admin", "@slow", "@dangerous"}, Summary: "Reads or moves the manual clock: SET time | ADVANCE duration | GET.", Run: cmdDebugClock},
		})},
		{Name: "save", Arity: 1, Flags: FlagAdmin | FlagNoScript | FlagNoMulti | FlagNoAsyncLoading, ACL: []string{"@admin", "@slow", "@dangerous"}, Group: server, Since: "1.0.0", Summary: "Writes a snapshot now and waits for it.", Run: cmdSave},
		{Name: "bgsave", Arity: -1, Flags: FlagAdmin | FlagNoScript | FlagNoAsyncLoading, ACL: []string{"@admin", "@slow", "@dangerous"}, Group: server, Since: "1.0.0", Summary: "Writes a snapshot in the background.", Run: cmdBgsave},
		{Name: "lastsave", Arity: 1, Flags: FlagLoading | FlagStale | FlagFast, Tips: []string{"nondeterministic_output"}, ACL: []string{"@admin", "@fast", "@dangerous"}, Group: server, Since: "1.0.0", Summary: "Returns the Unix time of the last good snapshot.", Run: cmdLastsave},
		{Name: "shutdown", Arity: -1, Flags: FlagAdmin | FlagNoScript | FlagLoading | FlagStale | FlagNoMulti | FlagAllowBusy, ACL: []string{"@admin", "@slow", "@dangerous"}, Group: server, Since: "1.0.0", Summary: "Stops the server.", Run: cmdShutdown},
		{Name: "slowlog", Arity: -2, ACL: []string{"@slow"}, Group: server, Since: "2.2.12", Summary: "A container for slow log commands.", Sub: subTable("slowlog", []*Command{
			{Name: "get", Arity: -2, Flags: FlagAdmin | FlagLoading | FlagStale, Tips: []string{"request_policy:all_nodes", "nondeterministic_output"}, ACL: []string{"@admin", "@slow", "@dangerous"}, Summary: "Returns the slow log's entries.", Run: cmdSlowlogGet},
			{Name: "len", Arity: 2, Flags: FlagAdmin | FlagLoading | FlagStale, Tips: []string{"request_policy:all_nodes", "response_policy:agg_sum", "nondeterministic_output"}, ACL: []string{"@admin", "@slow", "@dangerous"}, Summary: "Returns the number of entries in the slow log.", Run: cmdSlowlogLen},
			{Name: "reset", Arity: 2, Flags: FlagAdmin | FlagLoading | FlagStale, Tips: []string{"request_policy:all_nodes", "response_policy:all_succeeded"}, ACL: []string{"@admin", "@slow", "@dangerous"}, Summary: "Clears all entries from the slow log.", Run: cmdSlowlogReset},
			{Name: "help", Arity: 2, Flags: FlagLoading | FlagStale, ACL: []string{"@slow"}, Summary: "Show helpful text about the different subcommands", Run: cmdSlowlogHelp},
		})},
		{Name: "latency", Arity: -2, ACL: []string{"@slow"}, Group: server, Since: "2.8.13", Summary: "A container for latency diagnostics commands.", Sub: subTable("latency", []*Command{
			{Name: "latest", Arity: 2, Flags: FlagAdmin | FlagNoScript | FlagLoading | FlagStale, Tips: []string{"nondeterministic_output", "request_policy:all_nodes", "response_policy:special"}, ACL: []string{"@admin", "@slow", "@dangerous"}, Summary: "Returns the latest latency samples for all events.", Run: cmdLatencyLatest},
			{Name: "history", Arity: 3, Flags: FlagAdmin | FlagNoScript | FlagLoading | FlagStale, Tips: []string{"nondeterministic_output", "request_policy:all_nodes", "response_policy:special"}, ACL: []string{"@admin", "@slow", "@dangerous"}, Summary: "Returns timestamp-latency samples for an event.", Run: cmdLatencyHistory},
			{Name: "reset", Arity: -2, Flags: FlagAdmin | FlagNoScript | FlagLoading | FlagStale, Tips: []string{"request_policy:all_nodes", "response_policy:all_succeeded"}, ACL: []string{"@admin", "@slow", "@dangerous"}, Summary: "Resets the latency data for one or more events.", Run: cmdLatencyReset},
			{Name: "help", Arity: 2, Flags: FlagLoading | FlagStale, ACL: []string{"@slow"}, Summary: "Returns helpful text about the different subcommands.", Run: cmdLatencyHelp},
		})},
		{Name: "acl", Arity: -2, ACL: []string{"@slow"}, Group: server, Since: "6.0.0", Summary: "A container for Access List Control commands.", Sub: subTable("acl", []*Command{
			{Name: "setuser", Arity: -3, Clockless: true, Flags: FlagAdmin | FlagNoScript | FlagLoading | FlagStale, ACL: []string{"@admin", "@slow", "@dangerous"}, Summary: "Creates and modifies an ACL user and its rules.", Run: cmdACLSetUser},
			{Name: "deluser", Arity: -3, Clockless: true, Flags: FlagAdmin | FlagNoScript | FlagLoading | FlagStale, ACL: []string{"@admin", "@slow", "@dangerous"}, Summary: "Deletes ACL users, and terminates their connections.", Run: cmdACLDelUser},
			{Name: "getuser", Arity: 3, Clockless: true, Flags: FlagAdmin | FlagNoScript | FlagLoading | FlagStale, ACL: []string{"@admin", "@slow", "@dangerous"}, Summary: "Lists the ACL rules of a user.", Run: cmdACLGetUser},
			{Name: "list", Arity: 2, Clockless: true, Flags: FlagAdmin | FlagNoScript | FlagLoading | FlagStale, ACL: []string{"@admin", "@slow", "@dangerous"}, Summary: "Dumps the effective rules in ACL file format.", Run: cmdACLList},
			{Name: "users", Arity: 2, Clockless: true, Flags: FlagAdmin | FlagNoScript | FlagLoading | FlagStale, ACL: []string{"@admin", "@slow", "@dangerous"}, Summary: "Lists all ACL users.", Run: cmdACLUsers},
			{Name: "whoami", Arity: 2, Clockless: true, Flags: FlagNoScript | FlagLoading | FlagStale, ACL: []string{"@slow"}, Summary: "Returns the authenticated username of the current connection.", Run: cmdACLWhoAmI},
			{Name: "load", Arity: 2, Clockless: true, Flags: FlagAdmin | FlagNoScript | FlagLoading | FlagStale, ACL: []string{"@admin", "@slow", "@dangerous"}, Summary: "Reloads the rules from the configured ACL file.", Run: cmdACLLoad},
			{Name: "save", Arity: 2, Clockless: true, Flags: FlagAdmin | FlagNoScript | FlagLoading | FlagStale, ACL: []string{"@admin", "@slow", "@dangerous"}, Summary: "Saves the effective ACL rules in the configured ACL file.", Run: cmdACLSave},
			{Name: "log", Arity: -2, Clockless: true, Flags: FlagAdmin | FlagNoScript | FlagLoading | FlagStale, ACL: []string{"@admin", "@slow", "@dangerous"}, Summary: "Lists recent security events generated due to ACL rules.", Run: cmdACLLog},
			{Name: "cat", Arity: -2, Clockless: true, Flags: FlagNoScript | FlagLoading | FlagStale, ACL: []string{"@slow"}, Summary: "Lists the ACL categories, or the commands inside a category.", Run: cmdACLCat},
			{Name: "genpass", Arity: -2, Clockless: true, Flags: FlagNoScript | FlagLoading | FlagStale, ACL: []string{"@slow"}, Summary: "Generates a pseudorandom, secure password that can be used to identify ACL users.", Run: cmdACLGenPass},
			{Name: "dryrun", Arity: -4, Clockless: true, Flags: FlagAdmin | FlagNoScript | FlagLoading | FlagStale, ACL: []string{"@admin", "@slow", "@dangerous"}, Summary: "Simulates the execution of a command by a user, without executing the command.", Run: cmdACLDryRun},
			{Name: "help", Arity: 2, Clockless: true, Flags: FlagLoading | FlagStale, ACL: []string{"@slow"}, Summary: "Returns helpful text about the different subcommands.", Run: cmdACLHelp},
		})},
		// replication
		{Name: "replicaof", Arity: 3, Flags: FlagAdmin | FlagNoScript | FlagStale | FlagNoAsyncLoading, ACL: []string{"@admin", "@slow", "@dangerous"}, Group: server, Since: "5.0.0", Summary: "Follows a primary (host port), or becomes one (NO ONE).", Run: cmdReplicaOf},
		{Name: "slaveof", Arity: 3, Flags: FlagAdmin | FlagNoScript | FlagStale | FlagNoAsyncLoading, ACL: []string{"@admin", "@slow", "@dangerous"}, Group: server, Since: "1.0.0", Summary: "Follows a primary (host port), or becomes one (NO ONE). Alias of REPLICAOF.", Run: cmdReplicaOf},
		{Name: "role", Arity: 1, Flags: FlagNoScript | FlagLoading | FlagStale | FlagFast, ACL: []string{"@admin", "@fast", "@dangerous"}, Group: server, Since: "2.8.12", Summary: "Returns the replication role.", Run: cmdRole},
		{Name: "failover", Arity: -1, Flags: FlagAdmin | FlagNoScript | FlagStale, ACL: []string{"@admin", "@slow", "@dangerous"}, Group: server, Since: "6.2.0", Summary: "Hands the primary's role to a replica once it holds every decision, holding writes meanwhile.", Run: cmdFailover},
		{Name: "wait", Arity: 3, Flags: FlagNoScript, Tips: []string{"request_policy:all_shards", "response_policy:agg_min"}, ACL: []string{"@slow", "@connection"}, Group: server, Since: "3.0.0", Summary: "Waits until the replicas have acknowledged this connection's writes.", Run: cmdWait},
		{Name: "replconf", Arity: -1, Flags: FlagAdmin | FlagNoScript | FlagLoading | FlagStale | FlagNoMulti | FlagAllowBusy, ACL: []string{"@admin", "@slow", "@dangerous"}, Group: server, Since: "3.0.0", Summary: "An internal command of the replication handshake.", Run: cmdReplconf},
		{Name: "psync", Arity: -3, Flags: FlagAdmin | FlagNoScript | FlagNoMulti | FlagNoAsyncLoading, ACL: []string{"@admin", "@slow", "@dangerous"}, Group: server, Since: "2.8.0", Summary: "An internal command: a replica asks for the stream from an offset.", Run: cmdPsync},
		// pub/sub
		{Name: "subscribe", Arity: -2, Clockless: true, Flags: FlagNoScript | FlagLoading | FlagStale | FlagPubSub, ACL: []string{"@pubsub", "@slow"}, Channels: acl.SubscribeChannels, Group: pubsub, Since: "2.0.0", Summary: "Listens for messages published to channels.", Run: cmdSubscribe},
		{Name: "unsubscribe", Arity: -1, Clockless: true, Flags: FlagNoScript | FlagLoading | FlagStale | FlagPubSub, ACL: []string{"@pubsub", "@slow"}, Group: pubsub, Since: "2.0.0", Summary: "Stops listening to messages posted to channels.", Run: cmdUnsubscribe},
		{Name: "psubscribe", Arity: -2, Clockless: true, Flags: FlagNoScript | FlagLoading | FlagStale | FlagPubSub, ACL: []string{"@pubsub", "@slow"}, Channels: acl.SubscribePatterns, Group: pubsub, Since: "2.0.0", Summary: "Listens for messages published to channels that match patterns.", Run: cmdPSubscribe},
		{Name: "punsubscribe", Arity: -1, Clockless: true, Flags: FlagNoScript | FlagLoading | FlagStale | FlagPubSub, ACL: []string{"@pubsub", "@slow"}, Group: pubsub, Since: "2.0.0", Summary: "Stops listening to messages published to channels that match patterns.", Run: cmdPUnsubscribe},
		{Name: "pubsub", Arity: -2, ACL: []string{"@slow"}, Group: pubsub, Since: "2.8.0", Summary: "A container for Pub/Sub commands.", Sub: subTable("pubsub", []*Command{
			{Name: "channels", Arity: -2, Clockless: true, Flags: FlagPubSub | FlagLoading | FlagStale, ACL: []string{"@pubsub", "@slow"}, Summary: "Returns the active channels.", Run: cmdPubsubChannels},
			{Name: "numsub", Arity: -2, Clockless: true, Flags: FlagPubSub | FlagLoading | FlagStale, ACL: []string{"@pubsub", "@slow"}, Summary: "Returns a count of subscribers to channels.", Run: cmdPubsubNumSub},
			{Name: "numpat", Arity: 2, Clockless: true, Flags: FlagPubSub | FlagLoading | FlagStale, ACL: []string{"@pubsub", "@slow"}, Summary: "Returns a count of unique pattern subscriptions.", Run: cmdPubsubNumPat},
			{Name: "shardchannels", Arity: -2, Clockless: true, Flags: FlagPubSub | FlagLoading | FlagStale, ACL: []string{"@pubsub", "@slow"}, Summary: "Returns the active shard channels: none, as there is no SSUBSCRIBE.", Run: cmdPubsubShardChannels},
			{Name: "shardnumsub", Arity: -2, Clockless: true, Flags: FlagPubSub | FlagLoading | FlagStale, ACL: []string{"@pubsub", "@slow"}, Summary: "Returns the count of subscribers of shard channels: 0, as there is no SSUBSCRIBE.", Run: cmdPubsubShardNumSub},
			{Name: "help", Arity: 2, Clockless: true, Flags: FlagLoading | FlagStale, ACL: []string{"@slow"}, Summary: "Returns helpful text about the different subcommands.", Run: cmdPubsubHelp},
		})},
		{Name: "publish", Arity: 3, Clockless: true, Flags: FlagLoading | FlagStale | FlagFast | FlagPubSub, ACL: []string{"@pubsub", "@fast"}, Channels: acl.PublishChannel, Group: pubsub, Since: "2.0.0", Summary: "Posts a message to a channel.", Run: cmdPublish},
		// cluster (docs/cluster.md)
		{Name: "cluster", Arity: -2, ACL: []string{"@slow"}, Group: "cluster", Since: "3.0.0", Summary: "A container for Redis Cluster commands.", Sub: subTable("cluster", []*Command{
			{Name: "slots", Arity: 2, Flags: FlagStale, Tips: []string{"nondeterministic_output"}, ACL: []string{"@slow"}, Summary: "Returns the mapping of cluster slots to nodes.", Run: cmdClusterSlots},
			{Name: "shards", Arity: 2, Flags: FlagStale, Tips: []string{"nondeterministic_output"}, ACL: []string{"@slow"}, Summary: "Returns the mapping of cluster slots to shards.", Run: cmdClusterShards},
			{Name: "nodes", Arity: 2, Flags: FlagStale, Tips: []string{"nondeterministic_output"}, ACL: []string{"@slow"}, Summary: "Returns the cluster configuration for a node.", Run: cmdClusterNodes},
			{Name: "info", Arity: 2, Flags: FlagStale, Tips: []string{"nondeterministic_output"}, ACL: []string{"@slow"}, Summary: "Returns information about the state of a node.", Run: cmdClusterInfo},
			{Name: "myid", Arity: 2, Flags: FlagStale, ACL: []string{"@slow"}, Summary: "Returns the ID of a node.", Run: cmdClusterMyID},
			{Name: "keyslot", Arity: 3, Flags: FlagStale, ACL: []string{"@slow"}, Summary: "Returns the hash slot for a key.", Run: cmdClusterKeySlot},
			{Name: "countkeysinslot", Arity: 3, Flags: FlagStale, ACL: []string{"@slow"}, Summary: "Returns the number of keys in a hash slot.", Run: cmdClusterCountKeys},
			{Name: "getkeysinslot", Arity: 4, Flags: FlagStale, Tips: []string{"nondeterministic_output"}, ACL: []string{"@slow"}, Summary: "Returns the key names in a hash slot.", Run: cmdClusterGetKeys},
			{Name: "handoff", Arity: -4, Flags: FlagAdmin | FlagNoScript | FlagNoMulti, ACL: []string{"@admin", "@slow", "@dangerous"}, Summary: "An internal command: the node with the given id takes the slot ranges over and gets their records.", Run: cmdClusterHandOff},
			{Name: "help", Arity: 2, Flags: FlagLoading | FlagStale, ACL: []string{"@slow"}, Summary: "Returns helpful text about the different subcommands.", Run: cmdClusterHelp},
		})},
		{Name: "readonly", Arity: 1, Clockless: true, Flags: FlagLoading | FlagStale | FlagFast, ACL: []string{"@fast", "@connection"}, Group: "cluster", Since: "3.0.0", Summary: "Enables read-only queries for a connection to a Redis Cluster replica node.", Run: cmdReadOnlyConn},
		{Name: "readwrite", Arity: 1, Clockless: true, Flags: FlagLoading | FlagStale | FlagFast, ACL: []string{"@fast", "@connection"}, Group: "cluster", Since: "3.0.0", Summary: "Enables read-write queries for a connection to a Redis Cluster replica node.", Run: cmdReadWriteConn},
		{Name: "asking", Arity: 1, Clockless: true, Flags: FlagFast, ACL: []string{"@fast", "@connection"}, Group: "cluster", Since: "3.0.0", Summary: "Signals that a cluster client is following an -ASK redirect.", Run: cmdAsking},
		// transactions
		{Name: "multi", Arity: 1, Clockless: true, Flags: FlagNoScript | FlagLoading | FlagStale | FlagFast | FlagTxnControl | FlagAllowBusy, ACL: []string{"@fast", "@transaction"}, Group: txn, Since: "1.2.0", Summary: "Starts a transaction.", Run: cmdMulti},
		{Name: "exec", Arity: 1, Flags: FlagNoScript | FlagLoading | FlagStale | FlagSkipSlowlog | FlagTxnControl, ACL: []string{"@slow", "@transaction"}, Group: txn, Since: "1.2.0", Summary: "Executes all commands in a transaction, atomically.", Run: cmdExec},
		{Name: "watch", Arity: -2, Flags: FlagNoScript | FlagLoading | FlagStale | FlagFast | FlagTxnControl | FlagAllowBusy, FirstKey: 1, LastKey: -1, Step: 1, KeySpecFlags: []string{"RO"}, ACL: []string{"@fast", "@transaction"}, Group: txn, Since: "2.2.0", Summary: "Monitors changes to keys to determine the execution of a transaction.", Run: cmdWatch},
		{Name: "unwatch", Arity: 1, Clockless: true, Flags: FlagNoScript | FlagLoading | FlagStale | FlagFast | FlagAllowBusy, ACL: []string{"@fast", "@transaction"}, Group: txn, Since: "2.2.0", Summary: "Forgets about watched keys of a transaction.", Run: cmdUnwatch},
		{Name: "discard", Arity: 1, Clockless: true, Flags: FlagNoScript | FlagLoading | FlagStale | FlagFast | FlagTxnControl | FlagAllowBusy, ACL: []string{"@fast", "@transaction"}, Group: txn, Since: "2.0.0", Summary: "Discards a transaction.", Run: cmdDiscard},
		// limiters
		{Name: "rl.fixed", Arity: -4, Flags: FlagWrite | FlagFast, FirstKey: 1, LastKey: 1, Step: 1, ACL: []string{"@write", "@fast", "@ratelimit"}, Group: rl, Since: "0.1.0", Summary: "Fixed window counter: key limit window [COST n] [RESERVE maxwait].", Peek: limiterPeek, Run: limiter(engine.KindFixed)},
		{Name: "rl.log", Arity: -4, Flags: FlagWrite | FlagFast, FirstKey: 1, LastKey: 1, Step: 1, ACL: []string{"@write", "@fast", "@ratelimit"}, Group: rl, Since: "0.1.0", Summary: "Sliding window log, exact: key limit window [COST n] [RESERVE maxwait].", Peek: limiterPeek, Run: limiter(engine.KindLog)},
		{Name: "rl.slide", Arity: -4, Flags: FlagWrite | FlagFast, FirstKey: 1, LastKey: 1, Step: 1, ACL: []string{"@write", "@fast", "@ratelimit"}, Group: rl, Since: "0.1.0", Summary: "Sliding window counter (two windows, weighted): key limit window [COST n].", Peek: limiterPeek, Run: limiter(engine.KindSlide)},
		{Name: "rl.bucket", Arity: -5, Flags: FlagWrite | FlagFast, FirstKey: 1, LastKey: 1, Step: 1, ACL: []string{"@write", "@fast", "@ratelimit"}, Group: rl, Since: "0.1.0", Summary: "Token bucket, exact refill: key capacity rate period [COST n] [RESERVE maxwait].", Peek: limiterPeek, Run: limiter(engine.KindBucket)},
		{Name: "rl.all", Arity: -5, Flags: FlagWrite | FlagFast, FirstKey: 1, LastKey: 1, Step: 1, NextKey: allNextKey, ACL: []string{"@write", "@fast", "@ratelimit"}, Group: rl, Since: "0.3.0", Summary: "Several limits in one all-or-nothing decision: key ALG args... [COST n] [AND key ALG args... [COST n]]...", Peek: allPeek, Run: cmdAll},
		{Name: "rl.acquire", Arity: -4, Flags: FlagWrite | FlagFast, FirstKey: 1, LastKey: 1, Step: 1, ACL: []string{"@write", "@fast", "@ratelimit"}, Group: rl, Since: "0.4.0", Summary: "Takes a lease of a concurrency limit, with a fencing token: key limit lease [COST n].", Peek: limiterPeek, Run: limiter(engine.KindLease)},
		{Name: "rl.release", Arity: 3, Flags: FlagWrite | FlagFast, FirstKey: 1, LastKey: 1, Step: 1, ACL: []string{"@write", "@fast", "@ratelimit"}, Group: rl, Since: "0.4.0", Summary: "Ends a lease before its term: key token|ANY.", Run: cmdRelease},
		{Name: "rl.renew", Arity: 4, Flags: FlagWrite | FlagFast, FirstKey: 1, LastKey: 1, Step: 1, ACL: []string{"@write", "@fast", "@ratelimit"}, Group: rl, Since: "0.4.0", Summary: "Makes a lease end a term from now: key token lease.", Run: cmdRenew},
		{Name: "rl.leases", Arity: 2, Flags: FlagReadOnly | FlagFast, FirstKey: 1, LastKey: 1, Step: 1, ACL: []string{"@read", "@fast", "@ratelimit"}, Group: rl, Since: "0.4.0", Summary: "Lists a key's live leases: token, ms left, cost.", Run: cmdLeases},
		{Name: "rl.cancel", Arity: 3, Flags: FlagWrite | FlagFast, FirstKey: 1, LastKey: 1, Step: 1, ACL: []string{"@write", "@fast", "@ratelimit"}, Group: rl, Since: "0.5.0", Summary: "Gives back a reservation not yet acted on: key ticket.", Run: cmdCancel},
		{Name: "rl.top", Arity: -1, Clockless: true, Flags: FlagReadOnly | FlagLoading | FlagStale, ACL: []string{"@read", "@slow", "@ratelimit"}, Group: rl, Since: "0.2.0", Summary: "The keys rejected most over the last minute: RL.TOP [count].", Run: cmdTop},
		{Name: "cl.throttle", Arity: -1, Flags: FlagWrite | FlagModule, FirstKey: 1, LastKey: 1, Step: 1, ACL: []string{"@ratelimit"}, Group: rl, Since: "1.0.0", Summary: "GCRA rate limit, a drop-in for redis-cell: key max_burst count period [quantity].", Peek: throttlePeek, Run: cmdThrottle},
	}
	t := Table{}
	for _, c := range cmds {
		t[c.Name] = c
	}
	for i, c := range t.All() {
		c.Index = i
	}
	return t
}

// subTable names each subcommand "parent|sub" (Redis's full name, used in
// arity errors and COMMAND) and indexes it by its own name.
func subTable(parent string, subs []*Command) map[string]*Command {
	m := make(map[string]*Command, len(subs))
	for _, s := range subs {
		short := s.Name
		s.Name = parent + "|" + short
		s.Group, s.Since = "", ""
		m[short] = s
	}
	return m
}

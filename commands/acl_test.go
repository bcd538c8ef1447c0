package commands

import (
	"strings"
	"testing"
)

// redisCategories are the ACL categories of Redis 7.0.15's commands
// (src/commands.c, with the categories its flags imply:
// setImplicitACLCategories), and below them those of the commands Redis
// 7.0 lacks or has otherwise.
var redisCategories = map[string]string{
	"ping":                    "@fast @connection",
	"echo":                    "@fast @connection",
	"hello":                   "@fast @connection",
	"auth":                    "@fast @connection",
	"select":                  "@fast @connection",
	"quit":                    "@fast @connection",
	"reset":                   "@fast @connection",
	"client":                  "@slow",
	"client|id":               "@slow @connection",
	"client|setname":          "@slow @connection",
	"client|getname":          "@slow @connection",
	"client|list":             "@admin @slow @dangerous @connection",
	"client|info":             "@slow @connection",
	"client|kill":             "@admin @slow @dangerous @connection",
	"client|pause":            "@admin @slow @dangerous @connection",
	"client|unpause":          "@admin @slow @dangerous @connection",
	"client|no-evict":         "@admin @slow @dangerous @connection",
	"client|help":             "@slow @connection",
	"del":                     "@keyspace @write @slow",
	"unlink":                  "@keyspace @write @fast",
	"exists":                  "@keyspace @read @fast",
	"type":                    "@keyspace @read @fast",
	"ttl":                     "@keyspace @read @fast",
	"pttl":                    "@keyspace @read @fast",
	"get":                     "@read @string @fast",
	"set":                     "@write @string @slow",
	"scan":                    "@keyspace @read @slow",
	"keys":                    "@keyspace @read @slow @dangerous",
	"dbsize":                  "@keyspace @read @fast",
	"flushall":                "@keyspace @write @slow @dangerous",
	"flushdb":                 "@keyspace @write @slow @dangerous",
	"object":                  "@slow",
	"object|encoding":         "@keyspace @read @slow",
	"object|refcount":         "@keyspace @read @slow",
	"object|freq":             "@keyspace @read @slow",
	"object|help":             "@keyspace @slow",
	"memory":                  "@slow",
	"memory|usage":            "@read @slow",
	"info":                    "@slow @dangerous",
	"command":                 "@slow @connection",
	"command|count":           "@slow @connection",
	"command|info":            "@slow @connection",
	"command|docs":            "@slow @connection",
	"command|list":            "@slow @connection",
	"command|getkeys":         "@slow @connection",
	"config":                  "@slow",
	"config|get":              "@admin @slow @dangerous",
	"config|set":              "@admin @slow @dangerous",
	"config|rewrite":          "@admin @slow @dangerous",
	"config|resetstat":        "@admin @slow @dangerous",
	"time":                    "@fast",
	"save":                    "@admin @slow @dangerous",
	"bgsave":                  "@admin @slow @dangerous",
	"lastsave":                "@admin @fast @dangerous",
	"shutdown":                "@admin @slow @dangerous",
	"slowlog":                 "@slow",
	"slowlog|get":             "@admin @slow @dangerous",
	"slowlog|len":             "@admin @slow @dangerous",
	"slowlog|reset":           "@admin @slow @dangerous",
	"slowlog|help":            "@slow",
	"latency":                 "@slow",
	"latency|latest":          "@admin @slow @dangerous",
	"latency|history":         "@admin @slow @dangerous",
	"latency|reset":           "@admin @slow @dangerous",
	"latency|help":            "@slow",
	"replicaof":               "@admin @slow @dangerous",
	"slaveof":                 "@admin @slow @dangerous",
	"role":                    "@admin @fast @dangerous",
	"wait":                    "@slow @connection",
	"replconf":                "@admin @slow @dangerous",
	"subscribe":               "@pubsub @slow",
	"unsubscribe":             "@pubsub @slow",
	"psubscribe":              "@pubsub @slow",
	"punsubscribe":            "@pubsub @slow",
	"publish":                 "@pubsub @fast",
	"cluster":                 "@slow",
	"cluster|slots":           "@slow",
	"cluster|shards":          "@slow",
	"cluster|nodes":           "@slow",
	"cluster|info":            "@slow",
	"cluster|myid":            "@slow",
	"cluster|keyslot":         "@slow",
	"cluster|countkeysinslot": "@slow",
	"cluster|getkeysinslot":   "@slow",
	"cluster|help":            "@slow",
	"readonly":                "@fast @connection",
	"readwrite":               "@fast @connection",
	"asking":                  "@fast @connection",
	"multi":                   "@fast @transaction",
	"exec":                    "@slow @transaction",
	"discard":                 "@fast @transaction",
	"acl":                     "@slow",
	"acl|setuser":             "@admin @slow @dangerous",
	"acl|deluser":             "@admin @slow @dangerous",
	"acl|getuser":             "@admin @slow @dangerous",
	"acl|list":                "@admin @slow @dangerous",
	"acl|users":               "@admin @slow @dangerous",
	"acl|whoami":              "@slow",
	"acl|save":                "@admin @slow @dangerous",
	"acl|load":                "@admin @slow @dangerous",
	"acl|log":                 "@admin @slow @dangerous",
	"pubsub":                  "@slow",
	"pubsub|channels":         "@pubsub @slow",
	"pubsub|numsub":           "@pubsub @slow",
	"pubsub|numpat":           "@pubsub @slow",
	"pubsub|shardchannels":    "@pubsub @slow",
	"pubsub|shardnumsub":      "@pubsub @slow",
	"pubsub|help":             "@slow",
	"watch":                   "@fast @transaction",
	"client|unblock":          "@admin @slow @dangerous @connection",
	"client|getredir":         "@slow @connection",
	"client|trackinginfo":     "@slow @connection",
	"client|tracking":         "@slow @connection",
	"client|caching":          "@slow @connection",
	"client|reply":            "@slow @connection",
	"unwatch":                 "@fast @transaction",
	"acl|cat":                 "@slow",
	"acl|genpass":             "@slow",
	"acl|dryrun":              "@admin @slow @dangerous",
	"acl|help":                "@slow",
	"psync":                   "@admin @slow @dangerous",
	"failover":                "@admin @slow @dangerous",
	// Redis 7.2's.
	"client|setinfo":  "@slow @connection",
	"client|no-touch": "@slow @connection",
	// Redis's DEBUG is one command; rlserver's has subcommands.
	"debug":       "@admin @slow @dangerous",
	"debug|clock": "@admin @slow @dangerous",
	// rlserver's own, with the categories their flags imply, and
	// @ratelimit; CL.THROTTLE is a module command in redis-cell, which
	// Redis 7.0 gives no category.
	"cluster|handoff": "@admin @slow @dangerous",
	"rl.fixed":        "@write @fast @ratelimit",
	"rl.all":          "@write @fast @ratelimit",
	"rl.log":          "@write @fast @ratelimit",
	"rl.slide":        "@write @fast @ratelimit",
	"rl.bucket":       "@write @fast @ratelimit",
	"rl.top":          "@read @slow @ratelimit",
	"rl.acquire":      "@write @fast @ratelimit",
	"rl.release":      "@write @fast @ratelimit",
	"rl.cancel":       "@write @fast @ratelimit",
	"rl.renew":        "@write @fast @ratelimit",
	"rl.leases":       "@read @fast @ratelimit",
	"cl.throttle":     "@ratelimit",
}

// TestACLCategories: every command of the table has Redis's ACL
// categories (COMMAND reports them, the users' rules use them), in
// Redis's order, and each is one package acl knows.
func TestACLCategories(t *testing.T) {
	table := NewTable()
	cat := table.ACLCatalog() // panics on an unknown category
	for _, c := range table.All() {
		want, ok := redisCategories[c.Name]
		if !ok {
			t.Errorf("%s: no categories to compare with: add its own", c.Name)
			continue
		}
		if got := strings.Join(c.ACL, " "); got != want {
			t.Errorf("%s: categories %q, want %q", c.Name, got, want)
		}
		ac, _ := cat.Lookup(c.Name)
		if got := strings.Join(ac.Categories.Names(), " "); got != strings.Join(c.ACL, " ") {
			t.Errorf("%s: %q not in Redis's order (%q)", c.Name, strings.Join(c.ACL, " "), got)
		}
	}
}

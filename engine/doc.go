// Package engine owns the keyspace: keys spread over power-of-two shards,
// each guarded by its own mutex, holding compact per-algorithm state with an
// expiry deadline. Every limiter decision is one atomic step under its key's
// shard lock; there is no global lock on the request path.
//
// The files, by concern:
//
//   - algorithm.go: Kind and the table of algorithms. Each algorithm is one
//     file with a named state type, a pure decision over it and its record
//     body codec, described by one Algorithm: throttle.go (CL.THROTTLE's
//     keys; gcra.go decides), fixed.go, log.go, slide.go, bucket.go.
//     limit.go holds what the RL.* algorithms share and Store.Limit.
//   - engine.go: the Engine, its shards and the Store handle; store.go the
//     keyspace operations (delete, type, life, memory, flush); scan.go SCAN.
//   - shard.go: one shard's records (put, remove, grow, shrink); record.go
//     the record layout; table.go the key table; compact.go, expire.go,
//     mem.go, prefetch.go the background work and memory behind them.
//   - feed.go and records.go: the engine's effects as absolute Records,
//     read by each consumer (persistence, replication) through a Feed of
//     its own; Dump, Restore and Apply.
//
// The algorithms are pure functions of (params, state, now, cost) in integer
// nanoseconds; the shard code only looks keys up, calls them and stores the
// result. Time is always passed in: the engine holds no clock of its own.
// Redis's conventions (TYPE "string" for CL.THROTTLE keys, PTTL's -2 and -1)
// belong to the commands layer; the engine answers with Kind and Life.
//
// This package may import only clock, the standard library and
// golang.org/x/sys (mremap, madvise): never redcon, pebble or net.
package engine

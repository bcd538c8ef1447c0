// Package engine owns the keyspace: keys spread over power-of-two shards,
// each guarded by its own mutex, holding compact per-algorithm state with an
// expiry deadline. Every limiter decision is one atomic step under its key's
// shard lock; there is no global lock on the request path.
//
// The algorithms are pure functions of (params, state, now, cost) in integer
// nanoseconds; the shard code only looks keys up, calls them and stores the
// result. Time is always passed in: the engine holds no clock of its own,
// except in the background expiry loop (RunExpiry).
//
// This package may import only clock, the standard library and
// golang.org/x/sys (mremap, madvise): never redcon, pebble or net.
package engine

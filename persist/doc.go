// Package persist keeps the engine's state in Pebble so restarts and
// crashes lose no limits and never walk the clock back.
//
// The engine reports changes as absolute records ("key K holds state S"
// or "key K is gone"), encoded as it stored them; a Snapshotter writes
// the changes since the last snapshot as one segment of large chunks
// (store.go), with the clock's high-water mark, in one synced Pebble
// batch every --save-interval, and now and then every key instead, in
// place of every older segment (a fold). Records use one versioned codec
// (codec.go) in entries (entry.go), the same that replication streams.
//
// A store that cannot be opened, has an unknown format version or fails a
// checksum is refused with an error naming the path and the cause;
// nothing in it is deleted or overwritten.
//
// This package observes the engine only through engine.Record, a Feed of
// its own (engine.NewEncodedFeed: the changes since it last read,
// whatever other readers have taken, or every key), Dump and Restore; it
// never imports commands, node, resp or net. Only the node and the wiring
// import it.
package persist

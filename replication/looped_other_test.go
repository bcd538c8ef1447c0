//go:build !linux

package replication

// linkModes: only the link's goroutine reads the stream off Linux.
var linkModes = []linkMode{{name: "goroutine"}}

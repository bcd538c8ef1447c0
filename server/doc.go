// Package server assembles rlserver from its parts (clock, engine,
// persist, node, resp) and runs it: the one place that knows how they
// fit, used by cmd/rlserver and by tests that need a real server
// in-process. Process-wide tuning lives here too: the memory limit that
// bounds the whole process (memlimit.go).
package server

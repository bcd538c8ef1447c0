// Package clock owns server time: the single source of "now" for every
// limiter decision, expiry and TIME reply.
//
// Readings are Unix time in nanoseconds (int64). Two clocks exist: Real,
// which starts at max(wall clock, stored high-water mark), advances with the
// process's monotonic clock (so it never walks back within a process,
// whatever NTP or an operator does to the wall clock) and slews toward the
// wall clock at a bounded rate (1% by default) wherever the two differ; and
// Manual, which moves only when told (DEBUG CLOCK), for tests and the
// worst-case tool. A Timeline wraps either: while the node is a replica it
// follows the primary's readings, and once promoted it continues from them
// (docs/clock.md, property 3).
//
// This package must import only the standard library and internal/sat.
package clock

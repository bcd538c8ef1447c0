//go:build !(invariants || race)

package clock

// Invariants reports whether the clock checks its invariants at run time
// and panics on a violation. It is on in builds with the race detector
// (as go test -race, which CI runs) or the invariants tag, as pebble's
// invariants are; off, the checks compile away.
const Invariants = false

// Package gauge measures this machine's noise: the time a fixed
// CPU-bound loop takes now. Timed before and after a benchmark run on the
// CPU the measured server runs on, it shows a run the machine disturbed
// (another process, a slower clock, a stolen CPU): its gauge moves away
// from the sitting's others.
package gauge

import (
	"crypto/sha256"
	"time"
)

// Ms runs the loop (200,000 SHA-256 blocks, about 25 ms on an idle
// 2-core cloud machine) and returns how long it took, in ms.
func Ms() float64 {
	s := time.Now()
	b := make([]byte, 64)
	for range 200_000 {
		h := sha256.Sum256(b)
		copy(b, h[:])
	}
	return float64(time.Since(s).Microseconds()) / 1000
}

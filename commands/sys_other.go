//go:build !linux

package commands

import "time"

// totalMemory is unknown off Linux: INFO reports 0, as Redis does where it
// cannot tell.
func totalMemory() uint64 { return 0 }

// cpuTimes is unknown off Linux (INFO cpu reports 0).
func cpuTimes() (sys, user time.Duration) { return 0, 0 }

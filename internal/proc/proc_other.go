//go:build !linux

package proc

import "time"

// TotalMemory is unknown off Linux: INFO reports 0, as Redis does where it
// cannot tell.
func TotalMemory() uint64 { return 0 }

// CPUTimes is unknown off Linux (INFO cpu reports 0).
func CPUTimes() (sys, user time.Duration) { return 0, 0 }

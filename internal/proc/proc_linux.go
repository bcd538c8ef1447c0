package proc

import (
	"syscall"
	"time"
)

// TotalMemory is the machine's RAM (INFO memory's total_system_memory).
func TotalMemory() uint64 {
	var si syscall.Sysinfo_t
	if syscall.Sysinfo(&si) != nil {
		return 0
	}
	return uint64(si.Totalram) * uint64(si.Unit)
}

// CPUTimes is the process's system and user CPU time (INFO cpu).
func CPUTimes() (sys, user time.Duration) {
	var ru syscall.Rusage
	if syscall.Getrusage(syscall.RUSAGE_SELF, &ru) != nil {
		return 0, 0
	}
	return time.Duration(ru.Stime.Nano()), time.Duration(ru.Utime.Nano())
}

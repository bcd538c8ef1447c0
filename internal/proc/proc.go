// Package proc reads what the operating system knows of this process and
// machine: resident memory, CPU time, total memory. Each reading is 0
// where the platform cannot tell.
package proc

import (
	"os"
	"strconv"
	"strings"
)

// RSS is the process's resident set size in bytes, read from /proc (0
// where unavailable).
func RSS() int64 {
	b, err := os.ReadFile("/proc/self/statm")
	if err != nil {
		return 0
	}
	f := strings.Fields(string(b))
	if len(f) < 2 {
		return 0
	}
	pages, _ := strconv.ParseInt(f[1], 10, 64)
	return pages * int64(os.Getpagesize())
}

package testutils

import (
	"syscall"
	"time"
)

// ProcessCPU is the user and system time of this process so far
// (getrusage(2), RUSAGE_SELF): benchmarks report CPU per operation with it,
// a figure a shared machine disturbs less than wall time. 0 where the
// system cannot say.
func ProcessCPU() time.Duration {
	var ru syscall.Rusage
	if err := syscall.Getrusage(syscall.RUSAGE_SELF, &ru); err != nil {
		return 0
	}
	return time.Duration(ru.Utime.Nano() + ru.Stime.Nano())
}

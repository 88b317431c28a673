//go:build linux

package idle

import "syscall"

// osYield gives the core to another runnable thread of the host, of any
// process (sched_yield(2)); it returns at once when there is none.
func osYield() { syscall.RawSyscall(syscall.SYS_SCHED_YIELD, 0, 0, 0) }

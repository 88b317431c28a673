//go:build linux

package moe

import "syscall"

// osYield gives the core to another runnable thread, of any process
// (sched_yield(2)): ranks that are processes sharing cores wait this way
// (barrier.Pacing.OSYield).
func osYield() { syscall.RawSyscall(syscall.SYS_SCHED_YIELD, 0, 0, 0) }

//go:build !linux

package moe

// osYield does nothing where sched_yield is not available.
func osYield() {}

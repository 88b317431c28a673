//go:build !linux

package idle

// osYield does nothing: sched_yield(2) has no portable equivalent outside
// Linux, so a Pace there yields only by runtime.Gosched, where set.
func osYield() {}

//go:build !linux

package barrier

// osYield has no portable equivalent of sched_yield(2) outside Linux;
// Pacing.Wait's runtime.Gosched is all it does there.
func osYield() {}

package idle

import _ "unsafe" // go:linkname

// Yield gives the processor to the goroutines queued on this P, then goes
// on: runtime.goyield (Go's own name for it; exported to other packages by
// the runtime's go:linkname, and kept by its promise in go.dev/issue/67401).
// It is runtime.Gosched, except that the goroutine waits on its P's local
// run queue rather than the global one, and no other thread is woken to
// look for work.
//
// Why not runtime.Gosched: Gosched wakes an idle thread (wakep) on every
// call. Where ranks spin on few cores, that thread is scheduled on a
// peer's core and preempts it, or takes the waiting goroutine from the
// global queue to the peer's core, where the two spinning ranks share one
// CPU until the kernel balances them again (round trips of hundreds of
// µs). Where many ranks are goroutines of one process, their yields'
// wake-ups and the global queue's lock serialize them: a 16-rank
// dissemination barrier of goroutine ranks on a 64-core host took 886 µs
// yielding with Gosched and 2.2 µs with Yield (docs/scaling.md). Yield
// wakes no thread.
//
//go:linkname Yield runtime.goyield
func Yield()

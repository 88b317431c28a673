//go:build ofi && cgo && linux

package ofi

import (
	"sync/atomic"

	"golang.org/x/sys/unix"

	"github.com/rdmactor/rdmactor/internal/idle"
)

// schedPoint passes the calling goroutine through the Go scheduler once
// every schedEvery Poll and PollWait calls (yieldEvery).
func (p *Provider) schedPoint() { yieldEvery(&p.spins) }

// yieldEvery counts a call in n and, on every schedEvery-th, yields the
// processor to the goroutines queued on this P (idle.Yield, which wakes
// no thread).
//
// Why: a waiter that spins on Poll spends nearly all its time in cgo calls
// and never reschedules, so the runtime's sysmon sees one time slice of its
// P run past 10 ms (forcePreemptNS), cannot preempt a goroutine in C, and
// takes the P away instead (retake in runtime/proc.go, Go 1.26). The
// goroutine comes back on the other P, whose slice looks just as old, and
// is retaken again on sysmon's next tick: a storm of P hand-offs, thread
// wake-ups and context switches, each of which, where cores are few, takes
// the core of a spinning rank and lengthens its trip. A yield starts a new
// slice (scripts/bench_ofi.sh compares the ping-pong with raw libfabric).
func yieldEvery(n *atomic.Uint64) {
	if n.Add(1)%schedEvery == 0 {
		idle.Yield()
	}
}

// schedEvery is how many Poll and PollWait calls pass between two
// yields: about 0.1 ms of polling at the ~1 µs an empty fi_cq_read takes
// on tcp, and still well inside sysmon's 10 ms on a VM where each read's
// system calls take several µs (at 2048, 5 µs reads reached it). A yield
// that finds nothing else queued costs about 0.1 µs.
const schedEvery = 128

// schedPost counts Post's work (bytes, plus schedOpWork per WQE) and
// yields (idle.Yield) once schedWork of it has passed since the last yield.
// Caller: Post, one goroutine at a time per QP (rdma caller duty 1).
//
// Why: the waiters' yield (schedPoint) never runs in a producer that only
// posts, and a producer lives in cgo calls as much as a waiter does: a
// 64 KiB fi_writemsg on tcp copies into the socket for ~16 µs, so sysmon
// retakes a producer's P as it does a spinning waiter's, and its copies
// spread over threads. Work, not calls, is counted, since a post lasts
// from ~1 µs (8 B) to hundreds (1 MiB), and a clock read per post would
// cost a good part of a small one. Post's caller may hold the endpoint's
// post lock: a yield there holds it no longer than a preemption would,
// which the runtime may do at any point.
func (q *qp) schedPost(work int) {
	if q.postWork += work; q.postWork >= schedWork {
		q.postWork = 0
		idle.Yield()
	}
}

// schedWork is the posted work between two yields of a producer: 2 ms
// at 4 GB/s (tcp on loopback); 2 048 writes of 8 B count as 8 MiB.
// A NIC that takes a post in ~200 ns (verbs) reaches it more often; a
// yield that finds nothing else runnable on its P resumes at once.
const (
	schedWork   = 8 << 20
	schedOpWork = 4 << 10
)

// schedYield gives the core to another runnable thread (sched_yield(2)),
// unlike idle.Yield, which keeps it busy with this process's goroutines.
func schedYield() { _, _, _ = unix.Syscall(unix.SYS_SCHED_YIELD, 0, 0, 0) }

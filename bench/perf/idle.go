package perf

import (
	"fmt"
	"runtime"
	"time"

	"github.com/rdmactor/rdmactor/barrier"
	"github.com/rdmactor/rdmactor/gin"
)

// IdleModes are the values of the examples' -idle flag.
const IdleModes = "auto, spin, yield or gin"

// Idle turns an -idle mode into the gin.Config.Idle and the
// barrier.Pacing for a job of ranks ranks, goroutines of one process when
// local, else processes. Waits poll the signal and, after some polls, give
// the core away between polls: sched_yield for processes,
// runtime.Gosched for goroutines (barrier.Pacing). They never sleep: a
// parked Go timer wakes tens of microseconds late, and a waiter that
// keeps spinning starves the rank it waits for whenever that rank is not
// running (oversubscribed, or a loaded host). Open MPI does the same:
// poll, and sched_yield when idle if oversubscribed.
//
//   - spin: yield only after 16384 polls (tens of microseconds): lowest
//     latency for ranks that own a core.
//   - yield: yield after every poll: ranks that share cores.
//   - gin: gin's WaitSignal with gin's own default pacing (Config.Idle
//     left zero: gin.DefaultIdle, OversubscribedIdle where the ranks
//     outnumber the processors, yields that wake no thread for goroutine
//     ranks).
//   - auto: spin when the ranks fit the cores, yield otherwise: for
//     processes as oversubscribed says (gin.Comm.Oversubscribed, which
//     counts the processors of the host's ranks together, so ranks a
//     launcher binds to a core each still spin), for goroutines when
//     there are more ranks than GOMAXPROCS.
//
// spins > 0 overrides the polls before the first yield. The
// gin.IdleStrategy does not depend on oversubscribed: a caller may ask for
// it before the Comm exists and for the Pacing once it does.
func Idle(mode string, ranks int, oversubscribed, local bool, spins int) (gin.IdleStrategy, barrier.Pacing, error) {
	if mode == "auto" {
		mode = "spin"
		if local && ranks > runtime.GOMAXPROCS(0) || !local && oversubscribed {
			mode = "yield"
		}
	}
	p := barrier.Pacing{OSYield: !local, Gosched: local}
	switch mode {
	case "spin":
		p.Spins = 1 << 14
	case "yield":
	case "gin":
		return gin.IdleStrategy{}, barrier.Pacing{}, nil
	default:
		return gin.IdleStrategy{}, barrier.Pacing{}, fmt.Errorf("idle mode %q: want %s", mode, IdleModes)
	}
	if spins > 0 {
		p.Spins = spins
	}
	// gin's own waits (Flush, a full SQ) keep spinning before they park.
	return gin.IdleStrategy{Spins: 1 << 20, Yields: 1 << 10, MinSleep: time.Microsecond, MaxSleep: 100 * time.Microsecond}, p, nil
}

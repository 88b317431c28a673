package idle

import "runtime"

// paceCheckEvery is how many spinning calls of Pace.Idle pass between
// looks at the caller's context; every yielding call looks.
const paceCheckEvery = 1 << 10

// Pace paces a polling wait that never parks: for ranks that share cores,
// where a parked Go timer wakes tens of microseconds late and a spinning
// waiter starves the rank it waits for. Its first Spins calls of Idle
// return at once; every later call gives the core away. Make one per wait.
type Pace struct {
	// Spins is the number of calls before the first yield.
	Spins int
	// Gosched yields with runtime.Gosched: goroutine ranks of one process.
	Gosched bool
	// OSYield yields with sched_yield(2) (after Gosched, with both): ranks
	// that are processes. Nothing where the system lacks it.
	OSYield bool

	n int
}

// Idle pauses once after a poll that found nothing. It reports whether
// the caller should look at its context now: every 1024th spinning call
// and every yielding call.
func (p *Pace) Idle() (check bool) {
	i := p.n
	p.n++
	if i < p.Spins {
		return i%paceCheckEvery == paceCheckEvery-1
	}
	if p.Gosched {
		runtime.Gosched()
	}
	if p.OSYield {
		osYield()
	}
	return true
}

package barrier

import (
	"context"
	"fmt"

	"github.com/rdmactor/rdmactor/gin"
	"github.com/rdmactor/rdmactor/internal/idle"
)

// Pacing is how a wait of this package (and of package collective) passes
// the time until a signal arrives. The zero value waits with
// gin.Context.WaitSignal, paced by the Comm's gin.Config.Idle: spin, then
// runtime.Gosched, then sleep.
//
// That default suits ranks that own a core. Ranks that share cores need a
// wait that polls and gives the core away between polls, and which way
// depends on what the ranks are:
//
//   - processes (cmd/rdmarun with more ranks than cores): OSYield, as Open
//     MPI does with mpi_yield_when_idle (set by itself when
//     oversubscribed). runtime.Gosched would not help: it hands the core
//     only to goroutines of the same process, and with GOMAXPROCS > 1 it
//     wakes the Go scheduler's spinning threads, which take the core from
//     the other processes, several times slower per barrier than
//     sched_yield alone (examples/barrier, oversubscribed). A parked Go
//     timer sleeps tens of microseconds at least.
//   - goroutines of one process (gin.NewLocal with more ranks than
//     GOMAXPROCS): Gosched, since sched_yield does not reschedule
//     goroutines.
type Pacing struct {
	// OSYield makes a wait poll the signal (gin.Context.ReadSignal),
	// driving the provider between polls (gin.Comm.Progress), and, after
	// Spins polls, call sched_yield(2) between polls (nothing where the
	// system lacks it).
	OSYield bool
	// Gosched makes a wait poll and, after Spins polls, call
	// runtime.Gosched between polls (before sched_yield, with OSYield).
	Gosched bool
	// Spins is the number of polls before the first yield.
	Spins int
}

// Wait waits on x until the low bits bits of signal s reach least in
// rolling order (gin's comparison: a <= b iff ((b-a) & m) <= m>>1) and
// returns the value read. It ends with ctx's error (wrapped) when ctx ends
// first, and with gin's error when the Comm closes or loses a peer.
func (p Pacing) Wait(ctx context.Context, x *gin.Context, s gin.Signal, least uint64, bits int) (uint64, error) {
	if !p.OSYield && !p.Gosched {
		return x.WaitSignal(ctx, s, least, bits)
	}
	m := mask(bits)
	least &= m
	pace := p.Pace()
	for {
		v, err := x.ReadSignal(s, bits)
		if err != nil {
			return 0, err
		}
		if gin.RollingLE(least, v, m) {
			return v, nil
		}
		// Drive the provider between reads (gin.Comm.Progress; nothing on
		// shm): on ofi a signal from another host lands only when someone
		// reads the CQ, and a rank that only yields leaves that to its
		// progress goroutine, which naps or blocks while idle and must
		// then win a core from the yielding ranks (scripts/twohosts.sh
		// collectives times the barrier across hosts).
		if x.Comm().Progress() > 0 {
			continue
		}
		if !pace.Idle() {
			continue
		}
		if err := ctx.Err(); err != nil {
			return v, fmt.Errorf("wait signal %d for %d (at %d): %w", s, least, v, err)
		}
	}
}

// Pace is the idle.Pace of one polling wait with p (OSYield or Gosched
// set), for waits of other packages that poll their own signals.
func (p Pacing) Pace() idle.Pace {
	return idle.Pace{Spins: p.Spins, Gosched: p.Gosched, OSYield: p.OSYield}
}

// mask is the low-bits mask of a bits-wide comparison; bits outside 1..64
// give the 64-bit mask (gin rejects them in ReadSignal anyway).
func mask(bits int) uint64 {
	if bits <= 0 || bits >= 64 {
		return ^uint64(0)
	}
	return 1<<uint(bits) - 1
}

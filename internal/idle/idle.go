// Package idle holds the idle strategy every rdmactor wait loop uses: spin
// briefly, then yield the processor, then park with exponential sleeps (the
// Aeron BackoffIdleStrategy), so a waiter reacts in nanoseconds when work is
// near and costs almost no CPU when it is not. Where the wait is for a NIC
// whose progress the waiter can drive (a Driver), it polls the NIC while it
// spins and blocks in the NIC's wait object instead of parking.
//
// It may hold only wait-loop pacing; anything that knows about signals,
// rings or providers belongs to the caller (a Driver is two methods, not a
// provider).
package idle

import (
	"runtime"
	"time"
)

// Strategy sets the phases of a Backoff. The zero value is not useful; use
// Default or fill every field.
type Strategy struct {
	Spins    int           // busy iterations before yielding
	Yields   int           // runtime.Gosched calls before parking
	MinSleep time.Duration // first park, doubled each time up to MaxSleep
	MaxSleep time.Duration // longest park, and so the worst added wake-up latency
}

// Default spins 256 times (a few hundred ns), yields 64 times, then parks
// from 1 µs up to 1 ms.
var Default = Strategy{Spins: 256, Yields: 64, MinSleep: time.Microsecond, MaxSleep: time.Millisecond}

// Driver is progress a waiter can drive instead of sleeping: the method set
// of rdma.Poller (transport/rdma/poller.go), repeated here so that this
// package imports no provider. Poll handles what is ready without
// blocking; PollWait(d) may block up to d until something arrives. Both
// return how much they handled.
type Driver interface {
	Poll() int
	PollWait(d time.Duration) int
}

// Backoff is one wait in progress. Not safe for concurrent use; make one per
// wait (it is a small value, no allocation).
type Backoff struct {
	s     Strategy
	d     Driver
	n     int
	sleep time.Duration
}

// New starts a wait with strategy s.
func New(s Strategy) Backoff { return Backoff{s: s, sleep: s.MinSleep} }

// NewDriven starts a wait with strategy s that drives d: each of the first
// s.Spins calls of Idle polls d once (d.Poll) instead of spinning idly, and
// every later call blocks in d.PollWait(s.MaxSleep) instead of yielding
// and parking, so the waiter is woken by the NIC when data arrives, not by
// a Go timer (which resolves to about 1 ms on small VMs, docs/ofi.md). With
// a nil d it is New(s).
func NewDriven(s Strategy, d Driver) Backoff {
	b := New(s)
	b.d = d
	return b
}

// Idle pauses once, longer the more often it was called. It reports whether
// it parked (slept, or blocked in the Driver's PollWait), which callers use
// to check deadlines only off the hot spinning path: a caller's deadline is
// overstayed by at most one park (s.MaxSleep, and a Driver's rounding of it).
func (b *Backoff) Idle() (parked bool) {
	b.n++
	if b.d != nil {
		if b.n <= b.s.Spins {
			b.d.Poll()
			return false
		}
		b.d.PollWait(b.s.MaxSleep)
		return true
	}
	switch {
	case b.n <= b.s.Spins:
		return false
	case b.n <= b.s.Spins+b.s.Yields:
		runtime.Gosched()
		return false
	}
	time.Sleep(b.sleep)
	if b.sleep < b.s.MaxSleep {
		b.sleep *= 2
		if b.sleep > b.s.MaxSleep {
			b.sleep = b.s.MaxSleep
		}
	}
	return true
}

// Reset starts the phases over, after progress was made.
func (b *Backoff) Reset() { b.n, b.sleep = 0, b.s.MinSleep }

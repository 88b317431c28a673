// Package idle holds the idle strategy every rdmactor wait loop uses: spin
// briefly, then yield the processor, then park with exponential sleeps (the
// Aeron BackoffIdleStrategy), so a waiter reacts in nanoseconds when work is
// near and costs almost no CPU when it is not.
//
// It may hold only wait-loop pacing; anything that knows about signals,
// rings or providers belongs to the caller.
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

// Backoff is one wait in progress. Not safe for concurrent use; make one per
// wait (it is a small value, no allocation).
type Backoff struct {
	s     Strategy
	n     int
	sleep time.Duration
}

// New starts a wait with strategy s.
func New(s Strategy) Backoff { return Backoff{s: s, sleep: s.MinSleep} }

// Idle pauses once, longer the more often it was called. It reports whether
// it parked (slept), which callers use to check deadlines only off the hot
// spinning path.
func (b *Backoff) Idle() (parked bool) {
	b.n++
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

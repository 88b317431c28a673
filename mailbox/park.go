package mailbox

import (
	"runtime"
	"sync/atomic"
	"time"
)

// loopIdle paces the receive loop as Config.Idle says (spin, yield, then
// sleeps doubling from MinSleep to MaxSleep: idle.Backoff's phases), but
// parks in a select on a wake channel rather than in time.Sleep, so that a
// rank that just sent a request can wake it (Mailbox.Wake): the answer
// should not find the loop asleep.
type loopIdle struct {
	s     Idle
	n     int
	sleep time.Duration
	timer *time.Timer
	wake  chan struct{} // capacity 1: a wake-up never blocks the waker
	// parked is 1 while the loop is in its sleep phase (and so may be in
	// the select): only then do senders pay for a wake-up.
	parked atomic.Bool
}

func newLoopIdle(s Idle) *loopIdle {
	t := time.NewTimer(time.Hour)
	t.Stop()
	return &loopIdle{s: s, sleep: s.MinSleep, timer: t, wake: make(chan struct{}, 1)}
}

// idle pauses once, longer the more often it was called since the last
// reset, and reports whether it parked.
func (l *loopIdle) idle() (parked bool) {
	l.n++
	switch {
	case l.n <= l.s.Spins:
		return false
	case l.n <= l.s.Spins+l.s.Yields:
		runtime.Gosched()
		return false
	}
	l.parked.Store(true)
	l.timer.Reset(l.sleep)
	select {
	case <-l.timer.C:
		if l.sleep < l.s.MaxSleep {
			l.sleep = min(2*l.sleep, l.s.MaxSleep)
		}
	case <-l.wake:
		l.timer.Stop()
		l.reset() // a send of this rank: an answer is likely, be quick again
	}
	return true
}

// reset starts the phases over after progress.
func (l *loopIdle) reset() {
	l.n, l.sleep = 0, l.s.MinSleep
	l.parked.Store(false)
}

// poke wakes the loop if it is parked; it costs an atomic load otherwise.
func (l *loopIdle) poke() {
	if l.parked.Load() {
		select {
		case l.wake <- struct{}{}:
		default:
		}
	}
}

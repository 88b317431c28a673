package futex

import (
	"sync/atomic"
	"time"
)

// Bell is a doorbell: Seq moves on each ring that found a waiter, Waiters
// counts the goroutines between Arm and Disarm. The zero value is not
// usable; make one with New or At. A Bell is safe for concurrent use by
// any number of ringers and waiters, in any number of processes that map
// its words.
type Bell struct {
	seq     *atomic.Uint32
	waiters *atomic.Uint32
}

// New returns a Bell over two words of Go memory, for ringers and waiters
// of one process.
func New() Bell {
	w := new([16]atomic.Uint32) // seq and waiters, 32 bytes apart
	return Bell{seq: &w[0], waiters: &w[8]}
}

// At returns a Bell over seq and waiters, two 4-byte aligned words of a
// mapping that stays mapped while the Bell is used.
func At(seq, waiters *atomic.Uint32) Bell { return Bell{seq: seq, waiters: waiters} }

// Valid reports whether b was made by New or At.
func (b Bell) Valid() bool { return b.seq != nil }

// Ring wakes the waiters, if any: a load when there are none. The caller's
// change must be made (with an atomic store or add) before Ring.
func (b Bell) Ring() {
	if b.waiters.Load() != 0 {
		b.Kick()
	}
}

// Kick wakes every waiter whether or not the caller changed anything: for
// Close, cancellation and lost peers, whose waiters re-check their own
// conditions.
func (b Bell) Kick() {
	b.seq.Add(1)
	wake(b.seq)
}

// Arm announces a waiter and returns the ticket that Sleep compares
// against. The caller re-checks its condition after Arm and before Sleep,
// and calls Disarm once for each Arm.
func (b Bell) Arm() uint32 {
	b.waiters.Add(1)
	return b.seq.Load()
}

// Disarm withdraws one Arm.
func (b Bell) Disarm() { b.waiters.Add(^uint32(0)) }

// Sleep blocks until the bell rings after the Arm that returned ticket, or
// for up to d (d <= 0: returns at once). It may return early (a signal, a
// spurious wake-up): callers re-check their condition and deadline.
func (b Bell) Sleep(ticket uint32, d time.Duration) {
	if d <= 0 || b.seq.Load() != ticket {
		return
	}
	wait(b.seq, ticket, d)
}

// Ticket is the ring count now: the ticket of an armed waiter's next
// Sleep.
func (b Bell) Ticket() uint32 { return b.seq.Load() }

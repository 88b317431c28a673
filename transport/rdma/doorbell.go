package rdma

import "time"

// Doorbell lets the owner of a region block until a peer's WQE applies a
// signal to a word of that region, instead of spinning or sleeping on a
// timer. The provider rings it after the signal's atomic add; a ring that
// finds no armed waiter costs the ringer one load.
//
// A waiter arms, re-checks its condition, then sleeps on the ticket:
//
//	t := bell.Arm()
//	for !ready() {
//		bell.Sleep(t, d) // returns on a ring after t, on Kick, or after d
//		t = bell.Ticket()
//	}
//	bell.Disarm()
//
// Every method is safe for concurrent use, also by other processes that
// map the region (shm: futex(2) on a word of the mapping).
type Doorbell interface {
	// Arm announces a waiter and returns its first ticket. Pair each Arm
	// with one Disarm.
	Arm() uint32
	// Ticket is the ring count now, for the next Sleep of an armed waiter.
	Ticket() uint32
	// Sleep blocks until a ring after ticket, a Kick, or d has passed. It
	// may return early: callers re-check their condition and deadline.
	Sleep(ticket uint32, d time.Duration)
	// Disarm withdraws one Arm.
	Disarm()
	// Kick wakes every sleeper, rung or not: Close, cancellation and lost
	// peers use it so that waiters look at their state at once.
	Kick()
}

// Belled is implemented by a MemoryRegion whose provider rings a Doorbell
// each time a WQE applies a signal to a word of it (shm). gin waits on its
// signal region through it; on providers without it (or a Poller) waits
// drive the provider or sleep on timers.
type Belled interface {
	Doorbell() Doorbell
}

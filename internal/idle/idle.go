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
	"context"
	"runtime"
	"time"
)

// Strategy sets the phases of a Backoff. The zero value is not useful; use
// Default or fill every field.
type Strategy struct {
	Spins    int           // busy iterations before yielding
	Yields   int           // yields before parking (runtime.Gosched, or Yield with QuietYield)
	MinSleep time.Duration // first park, doubled each time up to MaxSleep
	MaxSleep time.Duration // longest park, and so the worst added wake-up latency
	// QuietYield yields with Yield instead of runtime.Gosched (not in a
	// driven wait): for ranks that are goroutines of one process, whose
	// Gosched calls wake the runtime's idle threads and queue on its
	// global run queue, so that many waiting ranks serialize one another
	// (docs/scaling.md). Processes measured no better with it.
	QuietYield bool
	// OSYields is a phase after the yields, before a block on a Bell or
	// in a Blocker (or the parks): that many calls that each, after a
	// poll that found nothing, yield to this P's goroutines (Yield) and
	// then the processor to any thread of the host (sched_yield(2)). The
	// waiter keeps its processor only while no other thread is runnable:
	// on a host with more ranks than processors an answer that comes
	// within tens of µs finds it running instead of paying a blocked
	// thread's wake-up, and the ranks it waits for still get the
	// processor. Linux only; elsewhere just Yield.
	OSYields int
}

// Default spins 256 times (a few hundred ns), yields 1024 times (100 to
// 200 µs when nothing else runs), then blocks on a Bell or Driver, or
// parks from 1 µs up to 1 ms.
var Default = Strategy{Spins: 256, Yields: 1024, MinSleep: time.Microsecond, MaxSleep: time.Millisecond}

// Driver is progress a waiter can drive instead of sleeping: the method set
// of rdma.Poller (transport/rdma/poller.go), repeated here so that this
// package imports no provider. Poll handles what is ready without
// blocking; PollWait(d) may block up to d until something arrives. Both
// return how much they handled.
type Driver interface {
	Poll() int
	PollWait(d time.Duration) int
}

// Bell is a doorbell a waiter blocks on until the change it waits for
// rings it: the method set of rdma.Doorbell (transport/rdma/doorbell.go),
// repeated so that this package imports no provider.
type Bell interface {
	Arm() uint32
	Ticket() uint32
	Sleep(ticket uint32, d time.Duration)
	Disarm()
	Kick()
}

// MaxBlock bounds one block on a Bell: a safety net, since everything
// that ends a wait rings or kicks it (a put, ctx's end, Close, a lost
// peer). Each look costs wake-ups, so they are rare.
const MaxBlock = 10 * time.Second

// MinBlockDriven and MaxBlockDriven bound one block in a Blocker's
// PollWait: the first block of a wait lasts MinBlockDriven, each next one
// twice as long, up to MaxBlockDriven. A provider's wait object can miss
// what only a read of its queue moves (tcp;ofi_rxm holds bytes it has
// taken off a socket until its CQ is read again); that happens right after
// traffic, so the short first blocks bound the delay it adds, and an idle
// rank soon blocks for seconds at a time.
const (
	MinBlockDriven = time.Millisecond
	MaxBlockDriven = 10 * time.Second
)

// checkEvery is how often the spin and yield phases report to the caller
// (as if parked), so that a cancelled context ends even a long spin.
const checkEvery = 256

// slowCheckEvery is checkEvery for calls that each make a system call or
// more: a driven wait's polls of a NIC (a fi_cq_read on tcp is several
// µs, far more on a loaded host) and the OSYields phase, whose every call
// may give the processor away for a scheduler's time slice.
const slowCheckEvery = 8

// Backoff is one wait in progress. Not safe for concurrent use; make one per
// wait (it is a small value, no allocation until it blocks on a Bell).
type Backoff struct {
	s     Strategy
	d     Driver
	n     int
	sleep time.Duration
	blk   time.Duration // next block in a Blocker's PollWait

	bell    Bell
	spin    func() int // polled in the spin and yield phases before the bell (SpinWith)
	blocker Blocker    // d, where it blocks (NewDrivenCtx)
	ctx     context.Context
	armed   bool
	ticket  uint32
	stop    func() bool // unregisters the kick on ctx's end
}

// New starts a wait with strategy s.
func New(s Strategy) Backoff { return Backoff{s: s, sleep: s.MinSleep} }

// NewDriven starts a wait with strategy s that drives d: each of the first
// s.Spins calls of Idle polls d once (d.Poll) instead of spinning idly, and
// every later call blocks in d.PollWait(s.MaxSleep) instead of yielding
// and parking, so the waiter is woken by the NIC when data arrives, not by
// a Go timer (which can fire up to a millisecond late on small VMs). With
// a nil d it is New(s).
func NewDriven(s Strategy, d Driver) Backoff {
	b := New(s)
	b.d = d
	return b
}

// Blocker is a Driver whose PollWait blocks until the awaited change
// arrives (the method set of rdma.BlockingPoller beyond Driver): a wait
// may then block up to MaxBlockDriven at a time, and Kick ends a block
// early.
type Blocker interface {
	Driver
	Blocks() bool
	Kick()
}

// NewDrivenCtx is NewDriven for a wait with a context: where d is a
// Blocker that blocks, the phase after the spins blocks in d.PollWait for
// from MinBlockDriven doubling up to MaxBlockDriven (or ctx's deadline),
// and ctx's cancellation kicks d. The
// caller must call Stop when the wait ends.
func NewDrivenCtx(ctx context.Context, s Strategy, d Driver) Backoff {
	b := NewDriven(s, d)
	if bl, ok := d.(Blocker); ok && bl.Blocks() {
		b.blocker, b.ctx = bl, ctx
	}
	return b
}

// NewBelled starts a wait with strategy s that, after the spin and yield
// phases, blocks on bell until it rings, instead of sleeping on timers: the
// put that satisfies the wait wakes it (futex(2) on shm). Blocks end at
// ctx's deadline, on ctx's cancellation (which kicks the bell) and after
// MaxBlock. The caller must call Stop when the wait ends. With a nil bell
// it is New(s).
func NewBelled(ctx context.Context, s Strategy, bell Bell) Backoff {
	b := New(s)
	b.bell, b.ctx = bell, ctx
	return b
}

// SpinWith makes a wait on a Bell call poll in each call of its spin and
// yield phases (a yield only after a poll that handled nothing): progress
// the waiter can drive while it is awake, though it sleeps on the Bell.
func (b *Backoff) SpinWith(poll func() int) { b.spin = poll }

// Idle pauses once, longer the more often it was called. It reports whether
// it parked (slept, blocked in the Driver's PollWait or on the Bell), or
// reached a multiple of 256 calls while spinning (of 8 where each call
// makes a system call: a driven poll, an OS yield), which callers use to
// check deadlines and cancellation only off the hot spinning path: a
// caller's deadline is overstayed by at most one park (s.MaxSleep, a
// Driver's rounding of it, or a Bell's block, which ends at ctx's
// deadline).
//
// With a Bell, the first call past the spin and yield phases only arms it
// and returns false: the caller re-checks its condition before the next
// call blocks, so a ring between the check and the block is not lost.
func (b *Backoff) Idle() (parked bool) {
	b.n++
	if b.d != nil {
		if b.n <= b.s.Spins {
			b.d.Poll()
			return b.n%slowCheckEvery == 0
		}
		if b.blocker != nil && b.n <= b.s.Spins+b.s.Yields {
			// Before a block that costs a wake-up, poll on as the yield
			// phase does elsewhere.
			if b.d.Poll() == 0 {
				runtime.Gosched()
			}
			return b.n%slowCheckEvery == 0
		}
		if b.blocker != nil && b.n <= b.s.Spins+b.s.Yields+b.s.OSYields {
			// The same before a block in the provider's wait object.
			if b.d.Poll() == 0 {
				yieldHost()
			}
			return b.n%slowCheckEvery == 0
		}
		if b.blocker == nil {
			b.d.PollWait(b.s.MaxSleep)
			return true
		}
		if b.stop == nil && b.ctx.Done() != nil {
			b.stop = context.AfterFunc(b.ctx, b.blocker.Kick)
		}
		if b.ctx.Err() != nil { // its kick may have come and gone
			return true
		}
		b.blk = max(b.blk, MinBlockDriven)
		t0 := time.Now()
		b.d.PollWait(b.blockFor(b.blk))
		if time.Since(t0) >= b.blk/2 { // it blocked: the next block may be longer
			b.blk = min(2*b.blk, MaxBlockDriven)
		}
		return true
	}
	switch {
	case b.n <= b.s.Spins:
		if b.spin != nil {
			b.spin()
		}
		return b.n%checkEvery == 0
	case b.n <= b.s.Spins+b.s.Yields:
		if b.spin == nil || b.spin() == 0 {
			b.yield()
		}
		return b.n%checkEvery == 0
	case b.n <= b.s.Spins+b.s.Yields+b.s.OSYields:
		if b.spin == nil || b.spin() == 0 {
			yieldHost()
		}
		return b.n%slowCheckEvery == 0
	}
	if b.bell != nil {
		return b.block()
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

// yieldHost is one call of the OSYields phase: this P's goroutines run,
// then any runnable thread of the host.
func yieldHost() {
	Yield()
	osYield()
}

// yield gives the processor away once, as the strategy says.
func (b *Backoff) yield() {
	if b.s.QuietYield {
		Yield()
		return
	}
	runtime.Gosched()
}

// block is Idle's phase on a Bell: arm (and return, for the caller's
// re-check), then sleep until a ring, ctx's end or MaxBlock.
func (b *Backoff) block() bool {
	if !b.armed {
		b.ticket, b.armed = b.bell.Arm(), true
		if b.ctx.Done() != nil && b.stop == nil {
			b.stop = context.AfterFunc(b.ctx, b.bell.Kick)
		}
		return false
	}
	b.bell.Sleep(b.ticket, b.blockFor(MaxBlock))
	b.ticket = b.bell.Ticket()
	return true
}

// blockFor is how long one block may last: most, or less to ctx's
// deadline.
func (b *Backoff) blockFor(most time.Duration) time.Duration {
	if dl, ok := b.ctx.Deadline(); ok {
		return min(most, time.Until(dl))
	}
	return most
}

// Reset starts the phases over, after progress was made. It disarms the
// Bell, so that puts ring no futex while the waiter spins again.
func (b *Backoff) Reset() {
	b.n, b.sleep, b.blk = 0, b.s.MinSleep, 0
	if b.armed {
		b.bell.Disarm()
		b.armed = false
	}
}

// Stop ends the wait: it disarms the Bell and drops ctx's kick. Waits
// without a Bell need not call it.
func (b *Backoff) Stop() {
	if b.armed {
		b.bell.Disarm()
		b.armed = false
	}
	if b.stop != nil {
		b.stop()
		b.stop = nil
	}
}

package rdma

import "time"

// Poller is implemented by providers whose progress a waiting goroutine can
// drive: manual-progress NICs whose completion queue must be read for data
// to move and for incoming signals to be applied (libfabric's
// FI_PROGRESS_MANUAL, fi_domain(3); ofi). It is optional: a Provider that
// is not a Poller (shm, whose puts complete at the doorbell) is waited on
// by spinning, yielding and parking on the word itself.
//
// gin and the endpoint package use it in every wait on a Poller provider
// (WaitSignal, WaitCounter, Flush, waits for SQ room, the endpoint actors'
// completion loops): they call Poll while they spin, then PollWait instead
// of parking on Go timers, and look at their deadline, cancellation and
// lost peers between calls. A waiter so costs no CPU once it blocks, and it
// is woken by the NIC's wait object when data arrives, not by a timer
// (fi_cq_sread(3)).
//
// Both methods are safe for concurrent use; one caller at a time reads the
// completion queue, and a call that finds another one reading returns 0 at
// once. Both return 0 at once after the provider's Close.
type Poller interface {
	// Poll reads what the NIC has completed without blocking (fi_cq_read(3)):
	// it drives manual progress, reports local completions to their QPs
	// (which QP.Progress then hands to the completion handler) and applies
	// incoming signals to local words. It returns how many completion
	// entries and signals it handled.
	Poll() int
	// PollWait is Poll that, when nothing was ready, blocks for up to d
	// until something arrives (fi_cq_sread(3) on the completion queue's wait
	// object) and handles it. Providers round d to their wait's unit (ofi:
	// up to a whole millisecond) and may return early, with 0, where they
	// cannot block (no wait object, operations in flight that need polling
	// to move): callers loop, re-checking their condition and deadline
	// between calls, and so must not pass a d longer than they may
	// overstay a cancellation. It returns how much it handled.
	PollWait(d time.Duration) int
}

// BlockingPoller is a Poller whose PollWait blocks in a wait object that an
// arriving write wakes (ofi with a completion queue wait object,
// fi_cq_sread(3)), so a waiter may pass it long durations and needs no
// periodic wake-up; Kick ends such a block early (a cancelled wait, Close).
// Blocks may be false for a provider that implements the methods but
// opened without a wait object.
type BlockingPoller interface {
	Poller
	Blocks() bool
	Kick()
}

// SpinPoller is progress a waiter may drive while it spins but must not
// block in: a provider whose waits block on a doorbell (rdma.Belled) while
// some of its signals land only when a completion queue is read (the auto
// provider's ofi peers). A waiter polls it during its spin and yield
// phases, so a signal that arrives then is applied by the waiter itself
// rather than by a progress thread that must first be woken. A Poller is
// waited on through Poller instead. Poll is safe for concurrent use and
// returns how much it handled.
type SpinPoller interface {
	SpinPoll() int
}

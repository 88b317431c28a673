package gin

import (
	"context"
	"fmt"
	"sync/atomic"

	"github.com/rdmactor/rdmactor/internal/idle"
	"github.com/rdmactor/rdmactor/internal/memword"
	"github.com/rdmactor/rdmactor/transport/rdma"
)

// signalWord enters the Comm and returns the value word of signal s on this
// rank and the mask for bits (1..64); the caller leaves when done.
func (x *Context) signalWord(s Signal, bits int) (*atomic.Uint64, uint64, error) {
	m, err := mask(bits, 64)
	if err != nil {
		return nil, 0, err
	}
	if int(s) >= x.c.cfg.Signals {
		return nil, 0, fmt.Errorf("signal %d of %d: %w", s, x.c.cfg.Signals, ErrUnknownSignal)
	}
	if err := x.c.enter(); err != nil {
		return nil, 0, err
	}
	return memword.Uint64(x.c.signals.Bytes(), 8*int(s)), m, nil
}

// ReadSignal returns the low bits bits (1..64) of signal s
// (ncclGin::readSignal, NCCL 2.28), with acquire ordering: data whose
// signal increment it observes is visible.
func (x *Context) ReadSignal(s Signal, bits int) (uint64, error) {
	w, m, err := x.signalWord(s, bits)
	if err != nil {
		return 0, err
	}
	defer x.c.leave()
	return w.Load() & m, nil
}

// WaitSignal waits until the low bits bits of signal s reach least in
// rolling order and returns the value read (ncclGin::waitSignal, NCCL
// 2.28). It spins, yields, then parks (Config.Idle); on a provider whose
// progress a waiter drives (rdma.Poller: ofi) it polls the NIC while it
// spins and then blocks in the NIC's wait object instead. It ends with ctx's
// error when ctx ends, and with ErrPeerLost or ErrClosed when those happen
// meanwhile: no wait outlives its deadline.
func (x *Context) WaitSignal(ctx context.Context, s Signal, least uint64, bits int) (uint64, error) {
	w, m, err := x.signalWord(s, bits)
	if err != nil {
		return 0, err
	}
	// Not wait and a deferred leave: the return from a wait is on a
	// ping-pong's critical path, where each frame's code is cold after the
	// kernel's send.
	v, err := x.c.waitDriving(ctx, w, least, m, "signal", int(s), x.c.driver(), x.c.kicked)
	x.c.leave()
	return v, err
}

// SignalWait is one member of a WaitSignals set: signal Signal reaching
// Least (in rolling order, in the low bits of the wait).
type SignalWait struct {
	Signal Signal
	Least  uint64
}

// WaitSignals waits until any member of set reaches its Least in the low
// bits bits (1..64) and returns the index in set of the first member found
// ready and the value read. It is WaitSignal over several signals at once,
// as a receive loop over many senders needs: it spins briefly, then blocks
// until a put or signal reaches any signal of this rank (shm: the signal
// region's doorbell, a futex; ofi: the completion queue's wait), and
// re-checks. Members are checked in order on every pass, so an earlier
// member wins when several are ready.
//
// It ends as WaitSignal does: ctx's error when ctx ends, ErrPeerLost or
// ErrClosed when those happen meanwhile. An empty set is ErrBadArgument,
// an unknown signal ErrUnknownSignal.
func (x *Context) WaitSignals(ctx context.Context, set []SignalWait, bits int) (int, uint64, error) {
	m, err := mask(bits, 64)
	if err != nil {
		return -1, 0, err
	}
	if len(set) == 0 {
		return -1, 0, fmt.Errorf("wait signals: empty set: %w", ErrBadArgument)
	}
	for _, sw := range set {
		if int(sw.Signal) >= x.c.cfg.Signals {
			return -1, 0, fmt.Errorf("wait signals: signal %d of %d: %w", sw.Signal, x.c.cfg.Signals, ErrUnknownSignal)
		}
	}
	if err := x.c.enter(); err != nil {
		return -1, 0, err
	}
	defer x.c.leave()
	words := x.c.signals.Bytes()
	ready := func() (int, uint64) {
		for i, sw := range set {
			if v := memword.Uint64(words, 8*int(sw.Signal)).Load() & m; RollingLE(sw.Least&m, v, m) {
				return i, v
			}
		}
		return -1, 0
	}
	if i, v := ready(); i >= 0 {
		return i, v, nil
	}
	if err := ctx.Err(); err != nil {
		return -1, 0, fmt.Errorf("wait signals (%d): %w", len(set), err)
	}
	b := x.c.backoff(ctx, x.c.driver(), x.c.kicked)
	defer b.Stop()
	for {
		if i, v := ready(); i >= 0 {
			return i, v, nil
		}
		if b.Idle() {
			if err := x.c.waitErr(ctx); err != nil {
				return -1, 0, fmt.Errorf("wait signals (%d): %w", len(set), err)
			}
		}
	}
}

// ResetSignal sets signal s to 0, clears its SignalInc/SignalAdd mode and
// its shadow (ncclGin::resetSignal, NCCL 2.28). It "may not race with
// concurrent modifications to the signal": call it when no peer can be
// signalling s (after a barrier, say).
func (x *Context) ResetSignal(s Signal) error {
	w, _, err := x.signalWord(s, 64)
	if err != nil {
		return err
	}
	defer x.c.leave()
	w.Store(0)
	memword.Uint64(x.c.signals.Bytes(), x.c.modeOff(s)).Store(0)
	x.c.shadows[s].Store(0)
	return nil
}

// wait is a wait on a word of one of this rank's windows (VA signals):
// until least <= word (rolling, mask m), ctx ends, the Comm closes or a
// peer is lost. bell is the window's doorbell, or nil.
func (c *Comm) wait(ctx context.Context, w *atomic.Uint64, least, m uint64, what string, id int, bell rdma.Doorbell) (uint64, error) {
	var kb *kickedBell
	if bell != nil {
		kb = &kickedBell{bell, c}
	}
	return c.waitDriving(ctx, w, least, m, what, id, c.driver(), kb)
}

// Progress drives the provider once where its progress is manual (ofi:
// one fi_cq_read, fi_cq(3), which lands incoming signals and reports
// completions; auto across hosts: the same read of ofi's queue) and
// returns how much it handled; on providers that need no driving (shm) it
// returns 0. Loops that poll signals with ReadSignal instead of waiting
// call it between reads, as gin's own waits do.
func (c *Comm) Progress() int {
	switch {
	case c.poller != nil:
		return c.poller.Poll()
	case c.spin != nil:
		return c.spin.SpinPoll()
	}
	return 0
}

// driver is what a wait on a signal word drives: the provider if it is a
// Poller, else nil.
func (c *Comm) driver() idle.Driver {
	if c.poller == nil {
		return nil
	}
	return c.poller
}

// backoff paces one wait: it drives d where the provider is a Poller (a
// signal that only lands when somebody reads the CQ, tcp;ofi_rxm, is landed
// by its waiter, which then blocks in PollWait), else blocks on bell, the
// doorbell that the awaited word's puts ring (shm), else parks on timers
// (counters, which no put rings). Deadlines and ctx are looked at when
// Idle reports true, so the spinning path stays a load and a compare.
func (c *Comm) backoff(ctx context.Context, d idle.Driver, bell *kickedBell) idle.Backoff {
	if d != nil {
		return idle.NewDrivenCtx(ctx, c.cfg.Idle, d)
	}
	if bell != nil {
		b := idle.NewBelled(ctx, c.cfg.Idle, bell)
		if c.spin != nil {
			b.SpinWith(c.spin.SpinPoll)
		}
		return b
	}
	return idle.New(c.cfg.Idle)
}

// waitDriving is wait driving d (nil: none) while it waits, blocking on
// bell (nil: none) where there is no d.
func (c *Comm) waitDriving(ctx context.Context, w *atomic.Uint64, least, m uint64, what string, id int, d idle.Driver, bell *kickedBell) (uint64, error) {
	least &= m
	if v := w.Load() & m; RollingLE(least, v, m) {
		return v, nil
	}
	if err := ctx.Err(); err != nil {
		v := w.Load() & m
		return v, fmt.Errorf("wait %s %d for %d (at %d): %w", what, id, least, v, err)
	}
	b := c.backoff(ctx, d, bell)
	seen := w.Load() & m
	for {
		v := w.Load() & m
		if RollingLE(least, v, m) {
			b.Stop()
			return v, nil
		}
		if v != seen {
			// Progress short of least (a stream of puts, one signal
			// each): spin again, disarmed, rather than stay armed and
			// make every later put ring a futex wake for a wait it does
			// not end.
			seen = v
			b.Reset()
		}
		if b.Idle() {
			if err := c.waitErr(ctx); err != nil {
				b.Stop()
				v := w.Load() & m
				return v, fmt.Errorf("wait %s %d for %d (at %d): %w", what, id, least, v, err)
			}
		}
	}
}

// waitErr is why a wait must end now: the Comm closed or lost a peer, or
// ctx ended.
func (c *Comm) waitErr(ctx context.Context) error {
	if err := c.check(); err != nil {
		return err
	}
	return ctx.Err()
}

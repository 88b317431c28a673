package gin

import (
	"context"
	"fmt"
	"sync/atomic"

	"github.com/rdmactor/rdmactor/endpoint"
	"github.com/rdmactor/rdmactor/transport/rdma"
)

// Context is an ordering domain of a Comm with its own connections
// (ncclGin with a context index, NCCL 2.28). Signals promise the data of
// earlier puts only within one context.
//
// A Context is safe for concurrent use; ordering between goroutines is
// whatever order their calls take effect in.
type Context struct {
	c      *Comm
	index  int
	groups []atomic.Pointer[endpoint.Group] // by peer slot (Comm.slotOf)
}

// Comm is the context's communicator.
func (x *Context) Comm() *Comm { return x.c }

// Index is the context's index, 0 <= Index < Comm.ContextCount().
func (x *Context) Index() int { return x.index }

// group returns the endpoints to world rank r (peer slot slot), cached per
// context so the hot path takes no lock.
func (x *Context) group(r, slot int) (*endpoint.Group, error) {
	if g := x.groups[slot].Load(); g != nil {
		return g, nil
	}
	g, err := x.c.eps.Group(x.index, r)
	if err != nil {
		return nil, err
	}
	x.groups[slot].Store(g)
	return g, nil
}

// check returns ErrClosed after Close and the lost-peer error once a rank
// was lost, else nil.
func (c *Comm) check() error {
	if c.closed.Load() {
		return ErrClosed
	}
	if e := c.lost.Load(); e != nil {
		return e
	}
	return nil
}

// Put writes bytes bytes from src at srcOff to the peer's part of dst at
// dstOff (ncclGin::put, nccl_device/gin.h, NCCL 2.28). peer is a rank of
// team; it may be this rank. remote runs at the peer once the data is
// settled; local runs here once src may be reused.
//
// With a strong-signal provider (shm), a signal visible at the peer implies
// the data of this put and of every earlier put of this context to that
// peer. Put returns once the put is queued, not delivered: use a signal to
// learn delivery and Flush to reuse sources.
//
// Errors: ErrClosed; ErrPeerOutOfRange; ErrNotPeer for a rank outside
// Config.Peers; ErrOutOfBounds (nothing written);
// ErrUnknownSignal, ErrUnknownCounter; ErrBadArgument for a VA signal on a
// window without StrictOrdering; ErrMixedSignalOps; ErrPeerLost;
// ErrRingFull when the SQ stayed full for Config.PostTimeout.
func (x *Context) Put(team Team, peer int, dst *Window, dstOff int, src *Window, srcOff int, bytes int,
	remote RemoteAction, local LocalAction, opts ...Option) error {
	p, ctr, err := x.dataCheck(team, peer, dst, dstOff, src, srcOff, bytes, local, "put destination", "put source")
	if err != nil {
		return err
	}
	w := rdma.WQE{Op: rdma.OpWrite, Local: src.mr, LocalOff: srcOff, Remote: dst.remotes[p.slot], RemoteOff: dstOff, Len: bytes}
	return x.send(p, &w, remote, ctr, 0, 0, opts)
}

// dataCheck is the checks of a data transfer: the route to peer, both
// ranges (named dstWhat and srcWhat in errors) and the counter. It returns
// the peer and the counter word (nil without CounterInc).
func (x *Context) dataCheck(team Team, peer int, dst *Window, dstOff int, src *Window, srcOff int, bytes int,
	local LocalAction, dstWhat, srcWhat string) (target, *atomic.Uint64, error) {
	p, err := x.route(team, peer)
	if err != nil {
		return target{}, nil, err
	}
	if err := x.c.own(dst, dstWhat, dstOff, bytes); err != nil {
		return target{}, nil, err
	}
	if err := x.c.own(src, srcWhat, srcOff, bytes); err != nil {
		return target{}, nil, err
	}
	if bytes > x.c.caps.MaxPutSize { // providers trust gin's checks (rdma.CheckWQE)
		return target{}, nil, &rdma.UnsupportedError{Provider: x.c.prov.Name(),
			Feature: fmt.Sprintf("a %s of %d bytes (Capabilities.MaxPutSize %d)", dstWhat, bytes, x.c.caps.MaxPutSize)}
	}
	ctr, err := x.c.counterOf(local)
	return p, ctr, err
}

// PutValue writes the low size bytes (1, 2, 4 or 8) of value, little-endian,
// to the peer's part of dst at dstOff (ncclGin::putValue, NCCL 2.28). The
// value is staged in the posting endpoint's slot pool, so nothing of the
// caller's is referenced after return. Errors as Put, and ErrBadArgument
// for another size.
func (x *Context) PutValue(team Team, peer int, dst *Window, dstOff int, value uint64, size int,
	remote RemoteAction, opts ...Option) error {
	if size != 1 && size != 2 && size != 4 && size != 8 {
		return fmt.Errorf("put value of %d bytes: want 1, 2, 4 or 8: %w", size, ErrBadArgument)
	}
	p, err := x.route(team, peer)
	if err != nil {
		return err
	}
	if err := x.c.own(dst, "put value destination", dstOff, size); err != nil {
		return err
	}
	w := rdma.WQE{Op: rdma.OpWrite, Remote: dst.remotes[p.slot], RemoteOff: dstOff}
	return x.send(p, &w, remote, nil, value, size, opts)
}

// Signal applies remote at the peer with no data (ncclGin::signal, NCCL
// 2.28). Like a put's signal, it implies every earlier put of this context
// to that peer. remote must not be None. Errors as Put.
func (x *Context) Signal(team Team, peer int, remote RemoteAction, opts ...Option) error {
	if remote.kind == remoteNone {
		return fmt.Errorf("signal with no remote action: %w", ErrBadArgument)
	}
	p, err := x.route(team, peer)
	if err != nil {
		return err
	}
	w := rdma.WQE{Op: rdma.OpSignal}
	return x.send(p, &w, remote, nil, 0, 0, opts)
}

// target is where a post goes: a world rank and its peer slot.
type target struct{ rank, slot int }

// route is the common front of every post: the Comm is usable and team
// peer maps to a world rank in the peer set.
func (x *Context) route(team Team, peer int) (target, error) {
	if err := x.c.check(); err != nil {
		return target{}, err
	}
	r, err := team.worldRank(x.c.rank, x.c.size, peer)
	if err != nil {
		return target{}, err
	}
	slot, err := x.c.slotOf(r)
	if err != nil {
		return target{}, err
	}
	if e := x.c.lostPeer[r].Load(); e != nil {
		return target{}, e
	}
	return target{r, slot}, nil
}

// send fills w's signal from remote and posts w to p on the endpoint the
// signal routes to; size > 0 posts value as a PutValue.
func (x *Context) send(p target, w *rdma.WQE, remote RemoteAction, ctr *atomic.Uint64, value uint64, size int, opts []Option) error {
	c := x.c
	sig, err := c.signalOf(remote, p.slot, &w.Signal)
	if err != nil {
		return err
	}
	g, err := x.group(p.rank, p.slot)
	if err != nil {
		return err
	}
	if size > 0 {
		return g.PostValue(sig, w, value, size, aggregated(opts))
	}
	return g.Post(sig, w, ctr, aggregated(opts))
}

// Flush hands every aggregated put of this context to the NIC and waits
// until every put this context issued before the call is locally complete:
// its source may be reused. It makes no claim about the peer
// (ncclGin::flush, NCCL 2.28: "Makes no claims regarding the completion
// status on the remote peer(s)"). It returns the first error a queued put
// met since the last Flush, or ctx's error if it ends first.
func (x *Context) Flush(ctx context.Context) error {
	if err := x.c.check(); err != nil {
		return err
	}
	var first error
	for i := range x.groups {
		g := x.groups[i].Load()
		if g == nil {
			continue
		}
		if err := g.Flush(ctx); err != nil && first == nil {
			first = err
		}
	}
	return first
}

// FlushHandle is a flush in progress (FlushAsync): Wait finishes it.
type FlushHandle struct {
	c      *Context
	points []endpoint.FlushPoint
	err    error
}

// FlushAsync starts a Flush and returns at once (ncclGin::flushAsync,
// NCCL 2.30): the handle's Wait returns once every put, put value and
// signal this context issued before the call is locally complete, as
// Flush would, and Done says whether that is so already. Posts issued
// after the call are not covered. Like Flush it says nothing of remote
// visibility. After Close, Wait returns ErrClosed.
func (x *Context) FlushAsync() *FlushHandle {
	h := &FlushHandle{c: x}
	if h.err = x.c.check(); h.err != nil {
		return h
	}
	for i := range x.groups {
		if g := x.groups[i].Load(); g != nil {
			h.points = append(h.points, g.FlushAsync())
		}
	}
	return h
}

// Wait waits until the handle's posts are locally complete, ctx ends (its
// error) or the Comm closes (ErrClosed); it returns the first post error
// recorded, as Flush does. It may be called more than once.
func (h *FlushHandle) Wait(ctx context.Context) error {
	if h.err != nil {
		return h.err
	}
	if err := h.c.c.check(); err != nil {
		return err
	}
	var first error
	for _, p := range h.points {
		if err := p.Wait(ctx); err != nil && first == nil {
			first = err
		}
	}
	return first
}

// Done reports, without waiting, whether the handle's posts are locally
// complete.
func (h *FlushHandle) Done() bool {
	if h.err != nil {
		return true
	}
	for _, p := range h.points {
		if !p.Done() {
			return false
		}
	}
	return true
}

// signalOf fills s for remote action a towards the peer of slot slot and
// returns the signal index that routes the post (-1: the data endpoint).
func (c *Comm) signalOf(a RemoteAction, slot int, s *rdma.Signal) (int, error) {
	switch a.kind {
	case remoteNone:
		return -1, nil
	case remoteInc, remoteAdd:
		if int(a.signal) >= c.cfg.Signals {
			return 0, fmt.Errorf("signal %d of %d: %w", a.signal, c.cfg.Signals, ErrUnknownSignal)
		}
		mode := rdma.SignalInc
		if a.kind == remoteAdd {
			mode = rdma.SignalAdd
		}
		*s = c.indexed(mode, a, slot)
		return int(a.signal), nil
	default: // VA signal
		if err := a.window.vaWord("VA signal", a.offset); err != nil {
			return 0, err
		}
		if a.window.c != c {
			return 0, fmt.Errorf("VA signal: window of another comm: %w", ErrBadArgument)
		}
		*s = rdma.Signal{Mode: rdma.SignalVA, Region: a.window.remotes[slot], Off: a.offset, Value: a.value, ModeOff: -1}
		return -1, nil
	}
}

// indexed is the rdma.Signal of indexed remote action a (SignalInc or
// SignalAdd, as mode) towards the peer of slot slot: the peer's signal
// word and its mode word.
func (c *Comm) indexed(mode rdma.SignalMode, a RemoteAction, slot int) rdma.Signal {
	return rdma.Signal{Mode: mode, Region: c.signals.remotes[slot], Off: 8 * int(a.signal), Value: a.value, ModeOff: c.modeOff(a.signal)}
}

// counterOf returns the counter word a local action ticks, or nil.
func (c *Comm) counterOf(a LocalAction) (*atomic.Uint64, error) {
	if !a.inc {
		return nil, nil
	}
	if int(a.counter) >= len(c.counters) {
		return nil, fmt.Errorf("counter %d of %d: %w", a.counter, len(c.counters), ErrUnknownCounter)
	}
	return &c.counters[a.counter], nil
}

// own checks that w is a window of c and [off, off+n) lies in it.
func (c *Comm) own(w *Window, what string, off, n int) error {
	if err := w.bounds(what, off, n); err != nil {
		return err
	}
	if w.c != c {
		return fmt.Errorf("%s: window of another comm: %w", what, ErrBadArgument)
	}
	return nil
}

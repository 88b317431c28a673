package endpoint

import (
	"context"
	"fmt"
	"sync/atomic"
	"time"

	"github.com/asynkron/protoactor-go/actor"
	"github.com/rdmactor/rdmactor/internal/idle"
	"github.com/rdmactor/rdmactor/transport/rdma"
)

// Endpoint is one SQ on a (possibly shared) QP to one peer: the data
// endpoint of a (context, peer), or the SCEndpoint of one signal index.
// Posting is lock-free (see sq); the endpoint's actor is woken only to
// drive progress for non-inline providers and to fail on a QP fault.
//
// An Endpoint is safe for concurrent use.
type Endpoint struct {
	m      *Manager
	group  *Group // set once when the group adopts the endpoint
	peer   int
	signal int // signal index of an SCEndpoint; -1 for the data endpoint
	sq     *sq
	qp     *sharedQP
	route  uint16

	slotMR  rdma.MemoryRegion // PutValue staging: depth slots at slotOff
	slotOff int

	pid         atomic.Pointer[actor.PID]    // set once the actor runs; read by fault reports
	kicked      atomic.Bool                  // a progress kick is queued or running
	firstErr    atomic.Pointer[errBox]       // first WQE error since the last Flush
	faultReport atomic.Pointer[rdma.QPError] // fault already sent to the actor
}

type errBox struct{ err error }

// Peer is the world rank this endpoint posts to.
func (e *Endpoint) Peer() int { return e.peer }

// Signal is the signal index of an SCEndpoint, or -1 for a data endpoint.
func (e *Endpoint) Signal() int { return e.signal }

// PID is the endpoint actor's PID.
func (e *Endpoint) PID() *actor.PID { return e.pid.Load() }

func (e *Endpoint) routeName() string {
	if e.signal < 0 {
		return "data"
	}
	return fmt.Sprintf("signal %d", e.signal)
}

// reserve takes one SQ entry, waiting for room up to the post timeout. While
// it waits it rings its own doorbell (aggregated entries may be what fills
// the ring) and drives progress: it reports the QP's completions and, on a
// Poller provider, reads the NIC's CQ itself (idle.NewDriven), so a
// streaming producer is paced by the NIC, not by a progress thread's
// wake-ups or Go timers.
func (e *Endpoint) reserve() (uint64, error) {
	if f := e.qp.fault(); f != nil {
		return 0, f
	}
	if seq, ok := e.sq.tryReserve(1); ok {
		return seq, nil
	}
	// The post timeout runs from the first park: a streaming producer
	// waits here once per post, mostly within the spin phase, and a clock
	// read per post costs more than the spin phase adds to the timeout.
	var start time.Time
	b := idle.NewDriven(e.m.cfg.Idle, e.m.poller)
	for {
		e.group.doorbell()
		e.qp.progress()
		if seq, ok := e.sq.tryReserve(1); ok {
			return seq, nil
		}
		if f := e.qp.fault(); f != nil {
			return 0, f
		}
		if !b.Idle() {
			continue
		}
		if e.m.closed.Load() {
			return 0, fmt.Errorf("post to rank %d (%s): %w", e.peer, e.routeName(), ErrClosed)
		}
		if start.IsZero() {
			start = time.Now()
		} else if waited := time.Since(start); waited > e.m.cfg.PostTimeout {
			return 0, &RingFullError{Peer: e.peer, Route: e.routeName(), Depth: int(e.sq.depth()), Waited: waited}
		}
	}
}

// post queues w (its WrID is set here) with local action counter (nil for
// none) and publishes it. It does not ring the doorbell.
func (e *Endpoint) post(w *rdma.WQE, counter *atomic.Uint64) error {
	seq, err := e.reserve()
	if err != nil {
		return err
	}
	e.fill(seq, w, counter)
	e.sq.publish(seq, &e.group.tickets)
	return nil
}

// fill writes w, with its WrID, and local action counter into reserved
// entry seq.
func (e *Endpoint) fill(seq uint64, w *rdma.WQE, counter *atomic.Uint64) {
	slot, ctr := e.sq.slot(seq)
	*slot = *w
	slot.WrID = wrID(e.route, seq)
	*ctr = counter
}

// postValue stages the low size bytes of v in the entry's PutValue slot and
// queues w with that slot as its source, so the caller's variable is free at
// return (ncclGin::putValue; the PutValue slot pool of the aws-ofi-nccl
// EFA-GDA backend).
func (e *Endpoint) postValue(w *rdma.WQE, v uint64, size int) error {
	seq, err := e.reserve()
	if err != nil {
		return err
	}
	off := e.slotOff + int(seq&e.sq.mask)*slotBytes
	// The slot region is released by Manager.Close: pin it for the copy.
	// A reserved entry must be published all the same (later producers
	// publish after it), so after Close it goes out as a no-op.
	if !e.m.slotPins.Pin() {
		slot, ctr := e.sq.slot(seq)
		*slot = rdma.WQE{Op: rdma.OpNop, WrID: wrID(e.route, seq)}
		*ctr = nil
		e.sq.publish(seq, &e.group.tickets)
		return fmt.Errorf("put value to rank %d: %w", e.peer, ErrClosed)
	}
	stage(e.slotMR.Bytes()[off:off+slotBytes], v, size)
	e.m.slotPins.Unpin()
	slot, ctr := e.sq.slot(seq)
	*slot = *w
	slot.WrID = wrID(e.route, seq)
	slot.Local, slot.LocalOff, slot.Len = e.slotMR, off, size
	*ctr = nil
	e.sq.publish(seq, &e.group.tickets)
	return nil
}

// complete retires entry seq (48-bit) with err. Called in post order per
// endpoint by the shared QP.
func (e *Endpoint) complete(seq uint64, err error) {
	_, ctr := e.sq.slot(seq)
	if err != nil {
		e.firstErr.CompareAndSwap(nil, &errBox{err})
	} else if c := *ctr; c != nil {
		c.Add(1)
	}
	e.sq.completed.Add(1)
}

// faulted is called once per QP fault: the actor fails with it, so the
// supervisor sees it: faults surface through supervision.
func (e *Endpoint) faulted(qe *rdma.QPError) {
	pid := e.pid.Load()
	if pid == nil {
		return // newEndpoint reports the QP's fault once the actor exists
	}
	if e.faultReport.CompareAndSwap(nil, qe) {
		e.m.system.Root.Send(pid, qpFault{qe})
	}
}

// adopted is called once e's group lists it: a QP that failed before e
// existed reports its fault to e now, and not earlier, so that the
// supervisor's record names the endpoint (recordFault finds it through
// the groups).
func (e *Endpoint) adopted() {
	if f := e.qp.err.Load(); f != nil {
		e.faulted(f)
	}
}

// kick wakes the actor to drive progress (non-inline providers). At most
// one kick is queued at a time: a capacity-one doorbell, as NATS' ipqueue.
func (e *Endpoint) kick() {
	if e.kicked.CompareAndSwap(false, true) {
		e.m.system.Root.Send(e.pid.Load(), progressKick{})
	}
}

// flush rings the doorbell and waits until every entry reserved before the
// call completed (as Flush in the aws-ofi-nccl EFA-GDA backend: snapshot
// submitted, wait for the completion counter), driving a Poller provider
// while it waits. It returns the first WQE error since the previous flush.
func (e *Endpoint) flush(ctx context.Context) error {
	return e.flushTo(ctx, e.sq.reserved.Load())
}

// flushTo is flush for the entries reserved before target.
func (e *Endpoint) flushTo(ctx context.Context, target uint64) error {
	b := idle.NewDriven(e.m.cfg.Idle, e.m.poller)
	for e.sq.completed.Load() < target {
		e.group.doorbell()
		if n, _ := e.qp.progress(); n > 0 {
			b.Reset()
			continue
		}
		if b.Idle() {
			if f := e.qp.fault(); f != nil {
				return f
			}
			if e.m.closed.Load() {
				return fmt.Errorf("flush endpoint to rank %d (%s): %w", e.peer, e.routeName(), ErrClosed)
			}
			if err := ctx.Err(); err != nil {
				return fmt.Errorf("flush endpoint to rank %d (%s): %d of %d entries completed: %w",
					e.peer, e.routeName(), e.sq.completed.Load(), target, err)
			}
		}
	}
	if box := e.firstErr.Swap(nil); box != nil {
		return box.err
	}
	return nil
}

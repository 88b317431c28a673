package endpoint

import (
	"context"
	"fmt"
	"sync"
	"sync/atomic"

	"github.com/rdmactor/rdmactor/transport/rdma"
)

// Group is the set of endpoints of one (context, peer): the data endpoint
// and one SCEndpoint per signal index in use. It routes posts (a WQE with an
// indexed signal rides that signal's SCEndpoint, one without rides the data
// endpoint; seed 000) and keeps the strong-signal promise across them: a
// signalled WQE is handed to the NIC only after every earlier WQE of the
// group.
//
// A Group is safe for concurrent use.
type Group struct {
	m    *Manager
	ctx  int
	peer int

	mu  sync.Mutex                  // guards creation of endpoints
	sc  []atomic.Pointer[Endpoint]  // by signal index
	all atomic.Pointer[[]*Endpoint] // data endpoint first, then SCEndpoints by creation
}

// Peer is the world rank of the group's peer.
func (g *Group) Peer() int { return g.peer }

// Context is the gin context index of the group.
func (g *Group) Context() int { return g.ctx }

// Endpoint returns the endpoint for signal index sig (an SCEndpoint), or the
// data endpoint for sig < 0, creating it on first use.
func (g *Group) Endpoint(sig int) (*Endpoint, error) {
	if sig < 0 {
		return (*g.all.Load())[0], nil
	}
	if sig >= len(g.sc) {
		return nil, fmt.Errorf("signal %d: only %d signals", sig, len(g.sc))
	}
	if e := g.sc[sig].Load(); e != nil {
		return e, nil
	}
	g.mu.Lock()
	defer g.mu.Unlock()
	if e := g.sc[sig].Load(); e != nil {
		return e, nil
	}
	e, err := g.m.newEndpoint(g.ctx, g.peer, sig)
	if err != nil {
		return nil, err
	}
	next := append(append([]*Endpoint(nil), *g.all.Load()...), e)
	g.all.Store(&next)
	g.sc[sig].Store(e)
	return e, nil
}

// Post queues w on the endpoint for sig (see Endpoint) with local action
// counter (nil for none). Unless aggregate, it then rings the doorbell of
// every endpoint of the group, that endpoint's last, so earlier aggregated
// WQEs reach the NIC before w (DESIGN: Aggregate defers the doorbell until a
// later non-aggregated post or Flush).
func (g *Group) Post(sig int, w *rdma.WQE, counter *atomic.Uint64, aggregate bool) error {
	e, err := g.Endpoint(sig)
	if err != nil {
		return err
	}
	if err := e.post(w, counter); err != nil {
		return err
	}
	if aggregate {
		return nil
	}
	return g.ring(e)
}

// PostValue is Post for a value of size bytes (1, 2, 4 or 8) staged in the
// endpoint's slot pool; w's Local fields are set by the endpoint.
func (g *Group) PostValue(sig int, w *rdma.WQE, v uint64, size int, aggregate bool) error {
	e, err := g.Endpoint(sig)
	if err != nil {
		return err
	}
	if err := e.postValue(w, v, size); err != nil {
		return err
	}
	if aggregate {
		return nil
	}
	return g.ring(e)
}

// ring hands the group's published entries to the NIC, last's last. Every
// endpoint of a group sits on the same QP (context c uses QP c%m), and a QP
// executes in post order, so posting earlier endpoints first is all a
// signal on last needs to follow the group's earlier data.
func (g *Group) ring(last *Endpoint) error {
	var first error
	for _, e := range *g.all.Load() {
		if e == last || !e.sq.pending() {
			continue
		}
		if err := e.doorbell(); err != nil && first == nil {
			first = err
		}
	}
	if err := last.doorbell(); err != nil && first == nil {
		first = err
	}
	return first
}

// Flush rings every endpoint of the group and waits until all their entries
// issued before the call completed locally (sources reusable). It says
// nothing of remote visibility (ncclGin::flush, NCCL 2.28). It returns the
// first WQE error recorded since the previous Flush, which may be one a
// Post already returned.
func (g *Group) Flush(ctx context.Context) error {
	var first error
	for _, e := range *g.all.Load() {
		if err := e.flush(ctx); err != nil && first == nil {
			first = err
		}
	}
	return first
}

// InFlight is the number of entries of the group reserved and not yet
// completed.
func (g *Group) InFlight() uint64 {
	var n uint64
	for _, e := range *g.all.Load() {
		n += e.sq.inFlight()
	}
	return n
}

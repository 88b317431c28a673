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
// endpoint, as in the aws-ofi-nccl EFA-GDA backend) and keeps the
// strong-signal promise across them: a signalled WQE is handed to the NIC
// only after every earlier WQE of the group.
//
// A Group is safe for concurrent use.
type Group struct {
	m    *Manager
	ctx  int
	peer int

	mu  sync.Mutex                  // guards creation of endpoints
	sc  []atomic.Pointer[Endpoint]  // by signal index
	all atomic.Pointer[[]*Endpoint] // data endpoint first, then SCEndpoints by creation

	tickets atomic.Uint64 // publish order across the group's endpoints
	posted  atomic.Uint64 // entries with a ticket handed to the QP
	posting atomic.Bool   // doorbell ownership: one poster at a time
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
	e.group = g
	next := append(append([]*Endpoint(nil), *g.all.Load()...), e)
	g.all.Store(&next)
	g.sc[sig].Store(e)
	e.adopted()
	return e, nil
}

// Post queues w on the endpoint for sig (see Endpoint) with local action
// counter (nil for none). Unless aggregate, it then rings the doorbell of
// every endpoint of the group, that endpoint's last, so earlier aggregated
// WQEs reach the NIC before w (Aggregate defers the doorbell until a
// later non-aggregated post or Flush).
//
// When the group has nothing published and unposted, the doorbell is free
// and the endpoint's ring has room, w goes to the QP at once (direct),
// with no ticket and no merge: nothing published before it waits.
//
// Why: on a ping-pong the post sits between the peer's signal and the
// reply, and the queued path's ticket and merge are a share of it that a
// post with nothing queued before it need not pay.
func (g *Group) Post(sig int, w *rdma.WQE, counter *atomic.Uint64, aggregate bool) error {
	e := g.cached(sig)
	if e == nil {
		var err error
		if e, err = g.Endpoint(sig); err != nil {
			return err
		}
	}
	if !aggregate && e.qp.fault() == nil && g.posting.CompareAndSwap(false, true) {
		if !g.pending() {
			if seq, ok := e.sq.tryReserve(1); ok {
				e.fill(seq, w, counter)
				if e.sq.posted.Load() == seq && e.sq.ready.Load() == seq {
					// Every earlier entry of e is posted: seq goes alone
					// (postClaimed's first case, without its frame).
					e.sq.ready.Store(seq + 1)
					err := e.qp.postOne(e, seq)
					e.sq.posted.Store(seq + 1)
					return g.release(err)
				}
				return g.postClaimed(e, seq)
			}
		}
		g.posting.Store(false)
	}
	if err := e.post(w, counter); err != nil {
		return err
	}
	if aggregate {
		return nil
	}
	return g.doorbell()
}

// cached is the endpoint for sig if it exists (Endpoint without creation).
func (g *Group) cached(sig int) *Endpoint {
	if sig < 0 {
		return (*g.all.Load())[0]
	}
	if sig < len(g.sc) {
		return g.sc[sig].Load()
	}
	return nil
}

// postClaimed posts entry seq of e, filled, which Post reserved with the
// doorbell held and the group's published entries all posted, when an
// earlier entry of e is not posted yet (it was reserved between Post's
// scan and its reservation): seq is published and merged with it, as the
// queued path would. It lets the doorbell go (release).
func (g *Group) postClaimed(e *Endpoint, seq uint64) error {
	e.sq.publish(seq, &g.tickets)
	return g.release(g.postMerged())
}

// release lets the doorbell go after a direct post that returned err, and
// rings it for entries published meanwhile. It returns err, or else the
// doorbell's error.
func (g *Group) release(err error) error {
	g.posting.Store(false)
	if e := g.doorbell(); err == nil {
		err = e
	}
	return err
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
	return g.doorbell()
}

// doorbell hands every published entry of the group's endpoints to the
// NIC, merged in publish (ticket) order: an entry is posted only after every
// entry published before it on any endpoint of the group. Every endpoint of
// a group sits on one QP (context c uses QP c%m), which executes in post
// order, so a signal never overtakes data published before it, however the
// caller's posts were aggregated and whoever rings.
//
// One goroutine posts at a time; one that finds the doorbell taken leaves
// its entries to the holder, which re-checks after letting go (sequentially
// consistent atomics make one of the two see the other's store).
func (g *Group) doorbell() error {
	var first error
	for g.pending() {
		if !g.posting.CompareAndSwap(false, true) {
			return first
		}
		err := g.postMerged()
		g.posting.Store(false)
		if err != nil && first == nil {
			first = err
		}
	}
	all := *g.all.Load()
	if all[0].qp.inline { // the endpoints of a group share one provider
		return first
	}
	for _, e := range all {
		if e.sq.inFlight() > 0 {
			e.kick()
		}
	}
	return first
}

// pending reports whether an endpoint of the group holds published
// entries not yet posted. Every published entry took a ticket before it
// became ready, so when as many entries were posted as took a ticket none
// waits, and the endpoints need no scan: a put then costs the same however
// many endpoints (signals in use) the group has.
func (g *Group) pending() bool {
	// posted first: it never passes the tickets taken before it is read.
	if g.posted.Load() == g.tickets.Load() {
		return false
	}
	for _, e := range *g.all.Load() {
		if e.sq.pending() {
			return true
		}
	}
	return false
}

// cursor is one endpoint's unposted range during a merged post.
type cursor struct {
	e       *Endpoint
	at, end uint64
}

// postMerged posts the entries published when it starts. Caller holds the
// doorbell.
//
// The endpoints' ready indices cannot be read at one instant, so the
// snapshot is bounded by a ticket read first: only entries with a ticket at
// most bound are posted. An entry published before an included one, by the
// same goroutine or any it synchronized with, finished its ready store
// before that one took its ticket, so before bound was read, so it is seen
// and included too. Later entries wait for the next round.
func (g *Group) postMerged() error {
	bound := g.tickets.Load()
	var buf [4]cursor
	cs := buf[:0]
	for _, e := range *g.all.Load() {
		from, to := e.sq.posted.Load(), e.sq.ready.Load()
		for to > from && e.sq.ticket(to-1) > bound { // tickets grow along an SQ
			to--
		}
		if from < to {
			cs = append(cs, cursor{e, from, to})
		}
	}
	var first error
	for len(cs) > 0 {
		// The endpoint whose next entry is oldest posts a run of entries
		// older than every other endpoint's next one.
		i, limit := 0, ^uint64(0)
		for j := 1; j < len(cs); j++ {
			if cs[j].e.sq.ticket(cs[j].at) < cs[i].e.sq.ticket(cs[i].at) {
				i = j
			}
		}
		for j := range cs {
			if t := cs[j].e.sq.ticket(cs[j].at); j != i && t < limit {
				limit = t
			}
		}
		c := &cs[i]
		run := c.at + 1
		for run < c.end && c.e.sq.ticket(run) < limit {
			run++
		}
		if err := c.e.qp.post(c.e, c.at, run); err != nil && first == nil {
			first = err
		}
		c.e.sq.posted.Store(run)
		g.posted.Add(run - c.at)
		if c.at = run; c.at == c.end {
			cs = append(cs[:i], cs[i+1:]...)
		}
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

// FlushPoint is what FlushAsync snapshots: each endpoint of a group and how
// many of its entries were reserved at the call.
type FlushPoint struct {
	eps     []*Endpoint
	targets []uint64
}

// FlushAsync rings every endpoint of the group and returns the point that
// Wait completes: every entry issued before the call completed locally
// (ncclGin::flushAsync, NCCL 2.30). Entries issued later are not waited
// for.
func (g *Group) FlushAsync() FlushPoint {
	eps := *g.all.Load()
	p := FlushPoint{eps: eps, targets: make([]uint64, len(eps))}
	for i, e := range eps {
		p.targets[i] = e.sq.reserved.Load()
	}
	g.doorbell()
	return p
}

// Wait waits until the point's entries completed, as Flush does, and
// returns the first WQE error since the previous flush of each endpoint.
func (p FlushPoint) Wait(ctx context.Context) error {
	var first error
	for i, e := range p.eps {
		if err := e.flushTo(ctx, p.targets[i]); err != nil && first == nil {
			first = err
		}
	}
	return first
}

// Done reports, without waiting, whether the point's entries completed.
func (p FlushPoint) Done() bool {
	for i, e := range p.eps {
		if e.sq.completed.Load() < p.targets[i] {
			return false
		}
	}
	return true
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

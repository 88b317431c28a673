package endpoint

import (
	"errors"
	"fmt"
	"sync"
	"sync/atomic"

	"github.com/rdmactor/rdmactor/transport/rdma"
)

// wr_id layout (as in the N:m QP-sharing change to AMD's ANP NCCL plugin):
// [route:16 | seq:48]. The route names the endpoint on its shared QP; seq is
// the endpoint's SQ sequence number.
const (
	routeShift = 48
	seqMask    = 1<<routeShift - 1
	maxRoutes  = 1 << 16
)

func wrID(route uint16, seq uint64) uint64 { return uint64(route)<<routeShift | seq&seqMask }

// sharedQP is one provider QP that several endpoints (contexts, signal
// endpoints) post on: N:m sharing as in AMD's ANP NCCL plugin. Its lifetime
// is refcounted by the endpoints that hold it; completions are routed to the
// endpoint named in the wr_id.
type sharedQP struct {
	peer   int
	slot   int // index among the peer's m QPs
	qp     rdma.QP
	inline bool

	postMu   sync.Mutex // serializes Post and Progress on qp (rdma caller duty 1)
	routes   atomic.Pointer[[]*Endpoint]
	err      atomic.Pointer[rdma.QPError] // sticky fault
	refs     int                          // guarded by qpPool.mu
	qpClosed atomic.Bool                  // set once, under postMu; read anywhere
}

// complete is the provider's CompletionHandler for this QP.
func (s *sharedQP) complete(id uint64, err error) {
	routes := *s.routes.Load()
	r := int(id >> routeShift)
	if r >= len(routes) || routes[r] == nil {
		return // the endpoint left; nothing waits on it any more
	}
	if err != nil {
		s.fail(err)
	}
	routes[r].complete(id&seqMask, err)
}

// fail makes cause the QP's sticky fault (the first one wins) and tells
// every endpoint on it, so their actors fail and reach the supervisor.
func (s *sharedQP) fail(cause error) *rdma.QPError {
	var qe *rdma.QPError
	if !errors.As(cause, &qe) {
		qe = &rdma.QPError{Peer: s.peer, Err: cause}
	}
	if s.err.CompareAndSwap(nil, qe) {
		for _, ep := range *s.routes.Load() {
			if ep != nil {
				ep.faulted(qe)
			}
		}
	}
	return s.err.Load()
}

// fault returns the sticky fault or nil.
func (s *sharedQP) fault() error {
	if e := s.err.Load(); e != nil {
		return e
	}
	return nil
}

// post hands ep's published entries [from, to) to the QP. Entries the QP
// does not accept are completed here with the reason, so nothing waits for
// them; the first such reason is returned.
func (s *sharedQP) post(ep *Endpoint, from, to uint64) error {
	a, b := ep.sq.span(from, to)
	s.postMu.Lock()
	defer s.postMu.Unlock()
	err := s.postSlice(ep, a)
	if e := s.postSlice(ep, b); err == nil {
		err = e
	}
	return err
}

// postOne is post for the one entry seq (Group.Post's direct post).
func (s *sharedQP) postOne(ep *Endpoint, seq uint64) error {
	i := seq & ep.sq.mask
	s.postMu.Lock()
	defer s.postMu.Unlock()
	return s.postSlice(ep, ep.sq.wqes[i:i+1])
}

// postSlice hands ws to the QP, completing with their reasons the WQEs it
// refuses, and returns the first such reason.
func (s *sharedQP) postSlice(ep *Endpoint, ws []rdma.WQE) error {
	if len(ws) == 0 {
		return nil
	}
	if f := s.fault(); f != nil {
		for i := range ws {
			ep.complete(ws[i].WrID&seqMask, f)
		}
		return f
	}
	if err := s.qp.Post(ws); err != nil {
		return s.postRest(ep, ws, err)
	}
	return nil
}

// postRest handles err, the provider's refusal of ws (a *rdma.WQEError
// naming the first WQE not posted), and posts the WQEs after that one. It
// returns the first error of a WQE.
func (s *sharedQP) postRest(ep *Endpoint, ws []rdma.WQE, err error) error {
	var we *rdma.WQEError
	if !errors.As(err, &we) || we.Index < 0 || we.Index >= len(ws) {
		// A provider outside the contract: treat as a QP fault at ws[0].
		we = &rdma.WQEError{Index: 0, Err: &rdma.QPError{Peer: s.peer, Err: err}}
	}
	var qe *rdma.QPError
	if errors.As(we.Err, &qe) {
		s.fail(qe)
		return s.postSlice(ep, ws[we.Index:]) // completes the rest with the fault
	}
	ep.complete(ws[we.Index].WrID&seqMask, we.Err)
	_ = s.postSlice(ep, ws[we.Index+1:]) // later WQEs' reasons reach their completions; the first is returned
	return we.Err
}

// progress drives the provider's completions (manual progress). It returns
// 0 at once while another goroutine posts on the QP or drives it: that one
// reports what has completed (a provider's Post reports what it finds
// complete, and every caller of progress loops), and waiting for its lock
// would only put this goroutine to sleep and wake it again (a 64 KiB write
// holds the lock for tens of µs on tcp).
func (s *sharedQP) progress() (int, error) {
	if s.inline || !s.postMu.TryLock() {
		return 0, nil
	}
	defer s.postMu.Unlock()
	n, err := s.qp.Progress()
	if err != nil {
		s.fail(err)
	}
	return n, err
}

// addRoute registers ep on the QP and returns its route number.
func (s *sharedQP) addRoute(ep *Endpoint) (uint16, error) {
	old := *s.routes.Load()
	for i, e := range old {
		if e == nil { // reuse a freed route
			next := append([]*Endpoint(nil), old...)
			next[i] = ep
			s.routes.Store(&next)
			return uint16(i), nil
		}
	}
	if len(old) == maxRoutes {
		return 0, fmt.Errorf("qp to rank %d: all %d routes in use", s.peer, maxRoutes)
	}
	next := append(append([]*Endpoint(nil), old...), ep)
	s.routes.Store(&next)
	return uint16(len(old)), nil
}

func (s *sharedQP) dropRoute(r uint16) {
	old := *s.routes.Load()
	next := append([]*Endpoint(nil), old...)
	next[r] = nil
	s.routes.Store(&next)
}

// qpPool holds the m QPs per peer that contexts share.
type qpPool struct {
	prov rdma.Provider
	m    int
	mu   sync.Mutex // guards qps and every sharedQP's refs and routes writes
	qps  map[[2]int]*sharedQP
}

// acquire returns QP number ctx%m to peer with ep routed on it, connecting
// it on first use.
func (p *qpPool) acquire(peer, ctx int, ep *Endpoint) (*sharedQP, uint16, error) {
	p.mu.Lock()
	defer p.mu.Unlock()
	key := [2]int{peer, ctx % p.m}
	s := p.qps[key]
	if s == nil {
		s = &sharedQP{peer: peer, slot: key[1], inline: p.prov.Capabilities().Inline}
		empty := []*Endpoint{}
		s.routes.Store(&empty)
		qp, err := p.prov.Connect(peer, s.complete)
		if err != nil {
			return nil, 0, fmt.Errorf("connect qp %d to rank %d: %w", key[1], peer, err)
		}
		s.qp = qp
		p.qps[key] = s
	}
	r, err := s.addRoute(ep)
	if err != nil {
		return nil, 0, err
	}
	s.refs++
	return s, r, nil
}

// release drops ep's route and reference; the last reference closes the QP.
func (p *qpPool) release(s *sharedQP, route uint16) error {
	p.mu.Lock()
	defer p.mu.Unlock()
	s.dropRoute(route)
	s.refs--
	if s.refs > 0 || s.qpClosed.Load() {
		return nil
	}
	// A failed QP stays in the pool, closed, so that endpoints created
	// later for the same peer and slot meet its fault instead of silently
	// reconnecting.
	if s.fault() == nil {
		delete(p.qps, [2]int{s.peer, s.slot})
	}
	return s.close()
}

// close closes the provider QP once.
func (s *sharedQP) close() error {
	s.postMu.Lock()
	defer s.postMu.Unlock()
	if s.qpClosed.Load() {
		return nil
	}
	s.qpClosed.Store(true)
	return s.qp.Close()
}

// peerQPs returns the QPs connected to peer.
func (p *qpPool) peerQPs(peer int) []*sharedQP {
	p.mu.Lock()
	defer p.mu.Unlock()
	return withFirst(p.qps, peer)
}

package endpoint

import (
	"errors"
	"sync"

	"github.com/rdmactor/rdmactor/transport/rdma"
)

// fakeProvider is a NIC model for endpoint tests: writes go to in-memory
// regions; inline mode completes at Post, async mode queues completions for
// Progress (like a manual-progress libfabric provider). It records every
// WQE posted, in post order per QP.
type fakeProvider struct {
	inline    bool
	mu        sync.Mutex
	qps       []*fakeQP
	closed    int
	rejectLen int // Post rejects WQEs with this Len (validation failure); 0: none
}

type fakeRegion struct{ b []byte }

func (r *fakeRegion) Bytes() []byte      { return r.b }
func (r *fakeRegion) Descriptor() []byte { return nil }
func (r *fakeRegion) Close() error       { return nil }
func (r *fakeRegion) Peer() int          { return 0 }
func (r *fakeRegion) Size() int          { return len(r.b) }

func (p *fakeProvider) Name() string { return "fake" }
func (p *fakeProvider) Capabilities() rdma.Capabilities {
	return rdma.Capabilities{StrongSignals: true, MaxSignals: 1 << 10, MaxPutSize: 1 << 30, Inline: p.inline}
}
func (p *fakeProvider) RegisterMemory(size int, _ rdma.RegionFlags) (rdma.MemoryRegion, error) {
	return &fakeRegion{b: make([]byte, size)}, nil
}
func (p *fakeProvider) Import(int, []byte) (rdma.RemoteRegion, error) {
	return nil, rdma.ErrNotSupported
}
func (p *fakeProvider) Close() error { return nil }

func (p *fakeProvider) Connect(peer int, cq rdma.CompletionHandler) (rdma.QP, error) {
	p.mu.Lock()
	defer p.mu.Unlock()
	q := &fakeQP{p: p, peer: peer, cq: cq}
	p.qps = append(p.qps, q)
	return q, nil
}

type fakeQP struct {
	p      *fakeProvider
	peer   int
	cq     rdma.CompletionHandler
	mu     sync.Mutex
	log    []rdma.WQE // every accepted WQE, in order
	queued []uint64   // async: wr_ids waiting for Progress
	broken error      // Post and Progress fail with it
	closed bool
	holds  bool // async: Progress completes nothing while set
}

func (q *fakeQP) Peer() int { return q.peer }

func (q *fakeQP) Post(ws []rdma.WQE) error {
	q.mu.Lock()
	defer q.mu.Unlock()
	for i, w := range ws {
		if q.closed {
			return &rdma.WQEError{Index: i, Err: rdma.ErrClosed}
		}
		if q.broken != nil {
			return &rdma.WQEError{Index: i, Err: &rdma.QPError{Peer: q.peer, Err: q.broken}}
		}
		if q.p.rejectLen != 0 && w.Len == q.p.rejectLen {
			return &rdma.WQEError{Index: i, Err: rdma.ErrOutOfBounds}
		}
		if w.Op == rdma.OpWrite && w.Local != nil && w.Len > 0 {
			// keep a copy of the source, as a NIC reading it would
			w.Local = &fakeRegion{b: append([]byte(nil), w.Local.Bytes()[w.LocalOff:w.LocalOff+w.Len]...)}
			w.LocalOff = 0
		}
		q.log = append(q.log, w)
		if q.p.inline {
			q.cq(w.WrID, nil)
		} else {
			q.queued = append(q.queued, w.WrID)
		}
	}
	return nil
}

func (q *fakeQP) Progress() (int, error) {
	q.mu.Lock()
	defer q.mu.Unlock()
	if q.broken != nil {
		return 0, q.broken
	}
	if q.holds {
		return 0, nil
	}
	n := len(q.queued)
	for _, id := range q.queued {
		q.cq(id, nil)
	}
	q.queued = q.queued[:0]
	return n, nil
}

func (q *fakeQP) Close() error {
	q.mu.Lock()
	defer q.mu.Unlock()
	q.closed = true
	q.p.mu.Lock()
	q.p.closed++
	q.p.mu.Unlock()
	return nil
}

func (q *fakeQP) posted() []rdma.WQE {
	q.mu.Lock()
	defer q.mu.Unlock()
	return append([]rdma.WQE(nil), q.log...)
}

func (q *fakeQP) setHold(h bool) { q.mu.Lock(); q.holds = h; q.mu.Unlock() }
func (q *fakeQP) breakWith(err error) {
	q.mu.Lock()
	q.broken = err
	q.mu.Unlock()
}

var errLinkDown = errors.New("link down")

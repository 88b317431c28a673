//go:build ofi && cgo && linux

package ofi

import (
	"sync"
	"sync/atomic"
	"time"
)

// warmupLimit is how long a peer's connection warm-up is retried while
// posts of it return -FI_EAGAIN; past it the first put connects instead.
const warmupLimit = 30 * time.Second

// warmups are the peers whose connection warm-up write could not be posted
// yet: tcp;ofi_rxm returns -FI_EAGAIN while it sets a connection up, and
// the set-up moves only while both ranks read their CQs. A blocked
// fi_cq_sread is not woken by a connection request, so while any warm-up
// waits the provider polls instead of blocking, and waits block long only
// once every connection is up.
type warmups struct {
	n     atomic.Int32 // len(peers), read without mu
	mu    sync.Mutex
	peers []warmup
}

type warmup struct {
	peer  int
	ps    *peerState
	until time.Time
}

// connect posts a zero-byte write to a newly learned peer so that the
// connection (tens of ms on tcp;ofi_rxm) is set up now, not at the first
// put. Its completion is only waited for by the progress goroutine. A
// post refused with -FI_EAGAIN is retried by retryWarmups.
func (p *Provider) connect(peer int, ps *peerState) {
	if p.postWarmup(peer, ps) {
		return
	}
	p.warm.mu.Lock()
	p.warm.peers = append(p.warm.peers, warmup{peer: peer, ps: ps, until: time.Now().Add(warmupLimit)})
	p.warm.n.Store(int32(len(p.warm.peers)))
	p.warm.mu.Unlock()
	p.active()
}

// postWarmup posts the warm-up write to peer; it reports false when the
// provider asked to try again (-FI_EAGAIN), true when it was posted or
// failed otherwise (the first put then reports the failure).
func (p *Provider) postWarmup(peer int, ps *peerState) bool {
	c := p.ctxs.get()
	c.set(ctxInternal, 0, 0)
	op := &internalOp{}
	p.internal.Store(c, op)
	p.inflight.Add(1)
	r := p.f.write(p.ctrl.ptr(0), 0, p.ctrl.mr.desc, ps.addr, p.mrm.targetAddr(ps.ctrlBase, 0), ps.ctrlKey, c, 0, fiCompletion)
	if r == 0 {
		p.active()
		return true
	}
	p.inflight.Add(-1)
	p.internal.Delete(c)
	p.ctxs.put(c)
	if r == -codeAgain {
		return false
	}
	if p.env.debug {
		p.debugf("connect to rank %d: %v", peer, newFabricError("fi_writemsg", r))
	}
	return true
}

// retryWarmups posts the warm-ups that waited, dropping those posted,
// failed or past warmupLimit. It costs one atomic load when none wait.
func (p *Provider) retryWarmups() {
	if p.warm.n.Load() == 0 || !p.warm.mu.TryLock() {
		return
	}
	defer p.warm.mu.Unlock()
	now := time.Now()
	left := p.warm.peers[:0]
	for _, w := range p.warm.peers {
		if !p.postWarmup(w.peer, w.ps) && now.Before(w.until) {
			left = append(left, w)
		} else if p.env.debug && !now.Before(w.until) {
			p.debugf("connect to rank %d: still refused after %v; the first put connects", w.peer, warmupLimit)
		}
	}
	p.warm.peers = left
	p.warm.n.Store(int32(len(left)))
}

// warming reports whether a warm-up waits to be posted.
func (p *Provider) warming() bool { return p.warm.n.Load() > 0 }

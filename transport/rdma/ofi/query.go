//go:build ofi && cgo && linux

package ofi

import (
	"fmt"
	"sync/atomic"
	"time"

	"github.com/rdmactor/rdmactor/transport/rdma"
)

// Mode queries (cqdata strategy). gin's rule that a signal sees only
// SignalInc or only SignalAdd between resets (ncclGin_SignalInc,
// nccl_device/gin.h, NCCL 2.28) is checked where the signal lives, by the
// target's progress goroutine when it applies an add, and a violation
// there can only be counted (Stats.SignalErrors), not returned. So the
// initiator checks first: it records the mode its posts claimed on each of
// the peer's signals, and when a post's mode differs from that record (or
// the signal is new to it) it asks the target:
//
//  1. it posts a QUERY message (zero-byte writes with CQ data, after every
//     earlier post to that peer, so the target answers after applying
//     them: one sender's words are applied in order);
//  2. the target's progress goroutine stores token<<8 | mode word in its
//     control region's result word for the sender;
//  3. the initiator reads that word back with fi_read until it carries the
//     token (bounded by the post timeout).
//
// A mode the target holds that is not the one wanted fails the post with
// rdma.ErrMixedSignalOps, synchronously, and nothing of it is written. A
// target reset (ResetSignal stores 0 in the mode word) is seen by the next
// query. What remains asynchronous is two ranks claiming one signal with
// different modes at the same time: the second add to arrive is dropped
// and counted at the target.
//
// The result word is stored with one 8-byte aligned store and read with
// one 8-byte aligned RMA read; tcp and sockets copy such a word whole.

// queryResultErr is the mode reported for a region or word the target does
// not have.
const queryResultErr = 0xff

// internalOp is a provider-internal operation the progress goroutine
// completes (a query read, a connection warm-up).
type internalOp struct {
	done atomic.Int32 // 1 ok, 2 failed
	err  error        // set before done
}

// queryMode asks peer for the mode word modeWord of region sig.
func (q *qp) queryMode(ps *peerState, sig *remoteRegion, modeWord uint64) (uint64, error) {
	p := q.p
	ps.queryMu.Lock()
	defer ps.queryMu.Unlock()
	token := p.tokens.Add(1) & maxPayload
	if token == 0 {
		token = p.tokens.Add(1) & maxPayload
	}
	words, err := encodeSig(nil, sigMsg{op: opQuery, region: sig.id, modeWord: modeWord, explicit: true, value: token}, p.cfg.Rank)
	if err != nil {
		return 0, fmt.Errorf("%w: %w", err, rdma.ErrNotSupported)
	}
	for i, w := range words {
		if err := q.writeWord(ps, w, i < len(words)-1); err != nil {
			return 0, err
		}
	}
	p.active()

	landOff := 8 * (p.cfg.Size + q.peer)
	land := p.ctrl.word(landOff)
	start := time.Now()
	pause := 10 * time.Microsecond
	for {
		op := &internalOp{}
		c := p.ctxs.get()
		c.set(ctxInternal, 0, 0)
		p.internal.Store(c, op)
		p.inflight.Add(1)
		r := p.f.read(p.ctrl.ptr(landOff), 8, p.ctrl.mr.desc, ps.addr, p.mrm.targetAddr(ps.ctrlBase, 8*p.cfg.Rank), ps.ctrlKey, c, fiCompletion)
		if r != 0 {
			p.inflight.Add(-1)
			p.internal.Delete(c)
			p.ctxs.put(c)
			if r != -codeAgain {
				return 0, &rdma.QPError{Peer: q.peer, Err: newFabricError("fi_readmsg (mode query)", r)}
			}
		} else {
			p.wakeup()
			for spins := 0; op.done.Load() == 0; spins++ {
				// The read completes only while somebody reads the CQ:
				// this thread does (rdma.Poller), as any wait on the
				// provider, else the progress goroutine.
				if p.Poll() == 0 && spins > 256 {
					time.Sleep(5 * time.Microsecond)
				}
				if err := q.queryAborted(start); err != nil {
					return 0, err // the context stays registered; its late completion is dropped
				}
			}
			if op.done.Load() == 2 {
				return 0, &rdma.QPError{Peer: q.peer, Err: fmt.Errorf("mode query read: %w", op.err)}
			}
			if v := land.Load(); v>>8 == token {
				switch m := v & 0xff; m {
				case rdma.ModeUnset, rdma.ModeInc, rdma.ModeAdd:
					return m, nil
				default:
					return 0, fmt.Errorf("mode query: rank %d has no word %d in region %d: %w", q.peer, modeWord, sig.id, rdma.ErrOutOfBounds)
				}
			}
		}
		if err := q.queryAborted(start); err != nil {
			return 0, err
		}
		time.Sleep(pause)
		pause = min(2*pause, time.Millisecond)
	}
}

// queryAborted ends a query past the post timeout, on close or on a fault.
func (q *qp) queryAborted(start time.Time) error {
	p := q.p
	if p.pins.Closed() || q.closed.Load() {
		return fmt.Errorf("ofi: mode query: %w", rdma.ErrClosed)
	}
	if f := q.fault.Load(); f != nil {
		return f
	}
	if time.Since(start) > p.env.postTimeout {
		return &rdma.QPError{Peer: q.peer, Err: fmt.Errorf("ofi: mode query to rank %d unanswered after %v", q.peer, p.env.postTimeout)}
	}
	return nil
}

// answerQuery stores the mode word a query asked for (progress goroutine).
func (p *Provider) answerQuery(m *sigMsg, sender int) {
	if sender < 0 || sender >= p.cfg.Size {
		p.signalError(fmt.Errorf("mode query from rank %d of %d", sender, p.cfg.Size))
		return
	}
	res := uint64(queryResultErr)
	if r := p.region(m.region); r != nil && r.pins.Pin() {
		if m.modeWord < uint64(r.size/8) {
			res = r.word(int(8 * m.modeWord)).Load()
			if res > rdma.ModeAdd {
				res = queryResultErr // not a mode word
			}
		}
		r.pins.Unpin()
	}
	p.ctrl.word(8 * sender).Store(m.value<<8 | res)
}

// connect posts a zero-byte write to a newly learned peer so that the
// connection (tens of ms on tcp;ofi_rxm) is set up now, not at the first
// put. Its completion is only waited for by the progress goroutine.
func (p *Provider) connect(peer int, ps *peerState) {
	c := p.ctxs.get()
	c.set(ctxInternal, 0, 0)
	op := &internalOp{}
	p.internal.Store(c, op)
	p.inflight.Add(1)
	r := p.f.write(p.ctrl.ptr(0), 0, p.ctrl.mr.desc, ps.addr, p.mrm.targetAddr(ps.ctrlBase, 0), ps.ctrlKey, c, 0, fiCompletion)
	if r != 0 { // -FI_EAGAIN included: the first put will connect
		p.inflight.Add(-1)
		p.internal.Delete(c)
		p.ctxs.put(c)
		if p.env.debug && r != -codeAgain {
			p.debugf("connect to rank %d: %v", peer, newFabricError("fi_writemsg", r))
		}
		return
	}
	p.active()
}

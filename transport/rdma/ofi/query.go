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
// query, or claimed afresh by the next add.
//
// The record can be stale: after a reset another rank (or the target
// itself) may claim the other mode, and an add this rank posts on its
// record then meets a word it cannot claim. The target does not drop that
// silently: every INC and ADD names its sender, and the target counts the
// mismatch in its control region and writes the count into the sender's
// (reportMixed). The sender's next Post to that peer sees the count move
// and returns rdma.ErrMixedSignalOps, writing nothing, and forgets its
// records of that peer, so later posts ask again. Two word loads a Post.
//
// The result word is stored with one 8-byte aligned store and read with
// one 8-byte aligned RMA read; tcp and sockets copy such a word whole.

// The control region: Size words in each part, by rank.
const (
	ctrlQuery   = iota // mode query results, by sender
	ctrlLand           // landing words of this rank's queries, by target
	ctrlMixOut         // mode mismatches this rank dropped, by sender (reportMixed's source)
	ctrlMixIn          // mismatches each target reported to this rank (written by it)
	ctrlMixSeen        // of those, how many a Post has returned
	ctrlParts
)

// ctrlSize is the control region's size in a job of size ranks.
func ctrlSize(size int) int { return 8 * ctrlParts * size }

// ctrlOff is the byte offset of rank's word in part of the control region.
func (p *Provider) ctrlOff(part, rank int) int { return 8 * (part*p.cfg.Size + rank) }

// reportMixed tells sender that an add of its was dropped for a mode
// mismatch (progress goroutine): the count of such drops goes into its
// control region, which its next Post to this rank checks.
func (p *Provider) reportMixed(sender int) {
	if sender < 0 || sender >= p.cfg.Size {
		return
	}
	n := p.ctrl.word(p.ctrlOff(ctrlMixOut, sender)).Add(1)
	if sender == p.cfg.Rank { // loopback: no write needed
		p.ctrl.word(p.ctrlOff(ctrlMixIn, sender)).Store(n)
		return
	}
	ps := &p.peers[sender]
	if !ps.known.Load() {
		return // no address to write to: counted as a signal error only
	}
	// Posted from another goroutine: -FI_EAGAIN is retried, which the
	// progress goroutine, the one that frees the queue, must not wait for.
	go p.sendMixed(sender, ps)
}

// sendMixed writes this rank's count of sender's dropped adds into
// sender's control region. The count only grows, so a late write of an
// older count is harmless: the sender reports only a count above the
// one it has seen.
func (p *Provider) sendMixed(sender int, ps *peerState) {
	if !p.pins.Pin() {
		return
	}
	defer p.pins.Unpin()
	src, dst := p.ctrlOff(ctrlMixOut, sender), p.ctrlOff(ctrlMixIn, p.cfg.Rank)
	start := time.Now()
	for {
		c := p.ctxs.get()
		c.set(ctxInternal, 0, 0)
		p.inflight.Add(1)
		r := p.f.write(p.ctrl.ptr(src), 8, p.ctrl.mr.desc, ps.addr, p.mrm.targetAddr(ps.ctrlBase, dst), ps.ctrlKey, c, 0, fiCompletion)
		if r == 0 {
			p.active()
			p.wakeup()
			return
		}
		p.inflight.Add(-1)
		p.ctxs.put(c)
		if r != -codeAgain || time.Since(start) > p.env.postTimeout || p.pins.Closed() {
			p.signalError(fmt.Errorf("mode mismatch report to rank %d: %w", sender, newFabricError("fi_writemsg", r)))
			return
		}
		p.active()
		p.wakeup()
		time.Sleep(20 * time.Microsecond)
	}
}

// mixReported is Post's check for a mode mismatch report from its peer
// (reportMixed): an error wrapping rdma.ErrMixedSignalOps the first time
// a Post sees the count move, and then this rank's mode records of the
// peer are forgotten, so its next adds ask the peer again (inlinable).
func (q *qp) mixReported() error {
	p := q.p
	in := p.ctrl.word(p.ctrlOff(ctrlMixIn, q.peer)).Load()
	if seen := p.ctrl.word(p.ctrlOff(ctrlMixSeen, q.peer)); in > seen.Load() {
		return q.takeMixed(seen, in)
	}
	return nil
}

// takeMixed is mixReported's report, once.
func (q *qp) takeMixed(seen *atomic.Uint64, in uint64) error {
	old := seen.Load()
	if in <= old || !seen.CompareAndSwap(old, in) {
		return nil // another Post took it
	}
	ps := &q.p.peers[q.peer]
	ps.modeMu.Lock()
	clear(ps.modes)
	ps.modeGen.Add(1)
	ps.modeMu.Unlock()
	return fmt.Errorf("rank %d dropped %d signal add(s) of this rank whose mode its signal's mode word did not hold: %w", q.peer, in-old, rdma.ErrMixedSignalOps)
}

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

	landOff := p.ctrlOff(ctrlLand, q.peer)
	land := p.ctrl.word(landOff)
	start := time.Now()
	pause := 10 * time.Microsecond
	for {
		op := &internalOp{}
		c := p.ctxs.get()
		c.set(ctxInternal, 0, 0)
		p.internal.Store(c, op)
		p.inflight.Add(1)
		r := p.f.read(p.ctrl.ptr(landOff), 8, p.ctrl.mr.desc, ps.addr, p.mrm.targetAddr(ps.ctrlBase, p.ctrlOff(ctrlQuery, p.cfg.Rank)), ps.ctrlKey, c, fiCompletion)
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
	p.ctrl.word(p.ctrlOff(ctrlQuery, sender)).Store(m.value<<8 | res)
}

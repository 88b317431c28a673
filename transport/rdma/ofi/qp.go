//go:build ofi && cgo && linux

package ofi

import (
	"errors"
	"fmt"
	"math/bits"
	"sync"
	"sync/atomic"
	"time"
	"unsafe"

	"github.com/rdmactor/rdmactor/internal/memword"
	"github.com/rdmactor/rdmactor/transport/rdma"
)

// qp is an ofi queue pair: a channel to one peer over the provider's main
// endpoint (every QP of a provider shares it, so operations to one peer are
// ordered across QPs too). Completions are read by the progress goroutine,
// which marks the QP's operation records; Progress reports the completed
// prefix in post order.
type qp struct {
	p      *Provider
	id     uint64
	peer   int
	cq     rdma.CompletionHandler
	closed atomic.Bool
	fault  atomic.Pointer[rdma.QPError]
	aux    *ctx // context of operations posted without FI_COMPLETION (errors only)

	mu     sync.Mutex // guards ring, head, tail
	ring   []opRec    // power-of-two ring of records, by seq
	head   uint64     // oldest record not yet reported
	tail   uint64     // next seq
	report []opRec    // Progress scratch (Progress is serialized by the caller)
	imm    []uint64   // Post scratch (Post is serialized by the caller)
	// lastMode is the last mode claim Post checked (claimMode; Post only).
	lastMode claimed
	// postWork is the work Post did since it last yielded (schedPost).
	postWork int
}

var _ rdma.QP = (*qp)(nil)

// opRec is one posted WQE waiting to be reported.
type opRec struct {
	wrID  uint64
	state uint8
	err   error
}

const (
	opPending uint8 = iota
	opDone
	opCancelled // not accepted by Post: not reported
)

// Reserved op sequence numbers: auxSeq marks the QP's shared aux context
// (injected operations: no completion on success, an error names it);
// untrackedSeq an operation with its own context and FI_COMPLETION that no
// WQE waits for (extra CQ data words, query words), whose context goes
// back to the pool when it completes.
const (
	auxSeq       = ^uint64(0)
	untrackedSeq = ^uint64(0) - 1
)

// Connect opens a QP to peer (this rank for loopback). Nothing is sent
// until the first Post; the peer's address comes from the first of its
// descriptors imported. It returns an error for an invalid peer or a nil
// cq, and rdma.ErrClosed after Close.
func (p *Provider) Connect(peer int, cq rdma.CompletionHandler) (rdma.QP, error) {
	if peer < 0 || peer >= p.cfg.Size {
		return nil, fmt.Errorf("ofi: connect: peer %d of size %d: invalid", peer, p.cfg.Size)
	}
	if cq == nil {
		return nil, errors.New("ofi: connect: nil completion handler")
	}
	q := &qp{p: p, peer: peer, cq: cq, ring: make([]opRec, 64)}
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.closed {
		return nil, fmt.Errorf("ofi: connect: %w", rdma.ErrClosed)
	}
	qs := *p.qps.Load()
	q.id = uint64(len(qs))
	for i := 1; i < len(qs); i++ { // reuse a closed QP's id
		if qs[i] == nil {
			q.id = uint64(i)
			break
		}
	}
	q.aux = p.ctxs.get()
	q.aux.set(ctxOp, q.id, auxSeq)
	next := make([]*qp, max(len(qs), int(q.id)+1))
	copy(next, qs)
	next[q.id] = q
	p.qps.Store(&next)
	return rdma.Checked(q, p.caps.MaxPutSize), nil
}

// Peer is the world rank this QP writes to.
func (q *qp) Peer() int { return q.peer }

// Close closes the QP: later Posts return rdma.ErrClosed; completions not
// yet reported are dropped. A second Close returns rdma.ErrClosed.
func (q *qp) Close() error {
	if q.closed.Swap(true) {
		return fmt.Errorf("ofi: close qp: %w", rdma.ErrClosed)
	}
	p := q.p
	p.mu.Lock()
	defer p.mu.Unlock()
	if qs := *p.qps.Load(); q.id < uint64(len(qs)) && qs[q.id] == q {
		next := append([]*qp(nil), qs...)
		next[q.id] = nil
		p.qps.Store(&next)
	}
	// q.aux stays with the QP's id: a late error completion names it, and
	// the progress goroutine finds no QP for it and drops it. It is freed
	// with the provider.
	return nil
}

// push records a new operation and returns its seq.
func (q *qp) push(wrID uint64) uint64 {
	q.mu.Lock()
	if q.tail-q.head == uint64(len(q.ring)) {
		next := make([]opRec, 2*len(q.ring))
		m := uint64(len(next) - 1)
		for s := q.head; s < q.tail; s++ {
			next[s&m] = q.ring[s&uint64(len(q.ring)-1)]
		}
		q.ring = next
	}
	seq := q.tail
	q.ring[seq&uint64(len(q.ring)-1)] = opRec{wrID: wrID}
	q.tail++
	q.mu.Unlock()
	return seq
}

// done records operation wrID as complete at post (injected, staged, an
// OpNop). With no earlier operation unreported it reports it at once,
// without a record; else its record waits for those, in post order.
//
// Why: a record lock, taken to push and again to finish, would put two
// more mutexes on an 8 B put between the peer's signal and the reply, the
// ping-pong's critical path. Only Post and Progress move head and tail,
// and their caller serializes them, so they read the two without a lock.
func (q *qp) done(wrID uint64) {
	if q.head == q.tail {
		q.cq(wrID, nil)
		return
	}
	q.finish(q.push(wrID), opDone, nil)
}

// finish sets the state of operation seq (the progress goroutine, or Post
// for operations complete at post).
func (q *qp) finish(seq uint64, state uint8, err error) {
	q.mu.Lock()
	if seq >= q.head && seq < q.tail {
		r := &q.ring[seq&uint64(len(q.ring)-1)]
		r.state, r.err = state, err
	}
	q.mu.Unlock()
}

// setFault makes err the QP's sticky fault (the first one wins) and
// returns the fault.
func (q *qp) setFault(err error) *rdma.QPError {
	var qe *rdma.QPError
	if !errors.As(err, &qe) {
		qe = &rdma.QPError{Peer: q.peer, Err: err}
	}
	q.fault.CompareAndSwap(nil, qe)
	return q.fault.Load()
}

// Progress reports the operations completed since the last call, in post
// order, to the QP's handler, and returns how many. It does no libfabric
// progress itself: the provider's progress goroutine does, or a waiter
// through Poll and PollWait (rdma.Poller; the endpoint's waits call them
// between Progress calls), so it is cheap and never blocks. Once the QP
// has failed it also returns the *rdma.QPError (with the provider's
// message: fi_cq_readerr, fi_cq_strerror). It returns rdma.ErrClosed after
// Close.
func (q *qp) Progress() (int, error) {
	if q.closed.Load() {
		return 0, fmt.Errorf("ofi: progress: %w", rdma.ErrClosed)
	}
	n := q.reportDone()
	if f := q.fault.Load(); f != nil {
		return n, f
	}
	return n, nil
}

// reportDone hands the completed prefix of the records to the handler, in
// post order. Post and Progress call it (the caller serializes them).
func (q *qp) reportDone() int {
	if q.head == q.tail { // see done
		return 0
	}
	q.mu.Lock()
	rep := q.report[:0]
	mask := uint64(len(q.ring) - 1)
	for q.head < q.tail {
		r := &q.ring[q.head&mask]
		if r.state == opPending {
			break
		}
		if r.state == opDone {
			rep = append(rep, *r)
		}
		*r = opRec{}
		q.head++
	}
	q.mu.Unlock()
	for i := range rep {
		q.cq(rep[i].wrID, rep[i].err)
		rep[i] = opRec{}
	}
	q.report = rep[:0]
	return len(rep)
}

// Post hands wqes to the endpoint in order: one fi_writemsg per WQE (plus
// zero-byte ones carrying extra signal words where a signal does not fit
// one immediate word), FI_MORE on all but the last. Everything about a WQE
// is checked before anything of it is posted: what needs this provider's
// state (region types and owners, that they are open, the signal strategy
// and the signal mode). Ranges, words and sizes are the caller's to
// validate (gin does; rdma.CheckWQE, and rdma.Checked in front of this QP
// in checking builds); the target checks the signal words a write names
// against its own regions. A WQE that fails a check writes nothing and
// gets no completion, and Post returns a *rdma.WQEError with its index
// (those before it were posted and will complete). These errors leave the
// QP usable; a libfabric failure (or -FI_EAGAIN past the post timeout)
// makes it a *rdma.QPError and the QP failed, as are all later Posts.
//
// Errors: rdma.ErrMixedSignalOps when the target signal's
// mode (checked through this rank's record of what it claimed, and on a
// change through a query to the target, see query.go) is the other one;
// *rdma.UnsupportedError for what the signal strategy cannot do (counter:
// SignalAdd, VA signals); rdma.ErrClosed after Close of the QP, provider
// or a region named; a plain error for regions of another provider or
// peer.
func (q *qp) Post(wqes []rdma.WQE) error {
	p := q.p
	if !p.pins.Pin() {
		return &rdma.WQEError{Index: 0, Err: fmt.Errorf("ofi: post to rank %d: %w", q.peer, rdma.ErrClosed)}
	}
	defer p.pins.Unpin()
	if q.closed.Load() {
		return &rdma.WQEError{Index: 0, Err: fmt.Errorf("ofi: post to rank %d: %w", q.peer, rdma.ErrClosed)}
	}
	if f := q.fault.Load(); f != nil {
		return &rdma.WQEError{Index: 0, Err: f}
	}
	if err := q.mixReported(); err != nil {
		return &rdma.WQEError{Index: 0, Err: fmt.Errorf("ofi: post to rank %d: %w", q.peer, err)}
	}
	ps := &p.peers[q.peer]
	if !ps.known.Load() {
		return &rdma.WQEError{Index: 0, Err: fmt.Errorf("ofi: post to rank %d: its address is unknown: import one of its regions first", q.peer)}
	}
	defer p.active()
	work := 0
	for i := range wqes {
		w := &wqes[i]
		work += w.Len + schedOpWork
		if err := q.post1(w, ps, i == len(wqes)-1); err != nil {
			var qe *rdma.QPError
			if errors.As(err, &qe) {
				return &rdma.WQEError{Index: i, Err: q.setFault(err)}
			}
			return &rdma.WQEError{Index: i, Err: fmt.Errorf("ofi: post to rank %d: wr_id %#x: %w", q.peer, w.WrID, err)}
		}
	}
	if p.qk.progressAtPost {
		p.push()
	}
	// Writes complete at post (injected, staged, OpNop) are reported now,
	// so the endpoint need not wake its actor for them.
	q.reportDone()
	q.schedPost(work)
	return nil
}

// plan is one WQE ready to post.
type plan struct {
	local  *Region
	lo     int
	remote *remoteRegion
	dest   uint64 // fi_addr of the target endpoint
	raddr  uint64
	rkey   uint64
	n      int
	imm    []uint64 // CQ data words; the last rides the WQE's own write
}

// post1 validates and posts one WQE.
func (q *qp) post1(w *rdma.WQE, ps *peerState, last bool) error {
	p := q.p
	var pl plan
	switch w.Op {
	case rdma.OpNop:
		q.done(w.WrID)
		return nil
	case rdma.OpWrite, rdma.OpRead:
		var err error
		if pl.local, err = q.localRegion(w.Local); err != nil {
			return err
		}
		if pl.remote, err = q.remoteRegion(w.Remote, "remote"); err != nil {
			return err
		}
		pl.lo, pl.n = w.LocalOff, w.Len
		pl.raddr, pl.rkey = pl.remote.addr(w.RemoteOff), pl.remote.key
		if w.Op == rdma.OpRead {
			pl.dest = ps.addr
			return q.submitRead(w.WrID, &pl, last)
		}
	case rdma.OpSignal:
		// A signal alone is a zero-byte write into the peer's control region.
		pl.local = p.ctrl
		pl.raddr, pl.rkey = p.mrm.targetAddr(ps.ctrlBase, 0), ps.ctrlKey
	default:
		return fmt.Errorf("opcode %d: %w", w.Op, rdma.ErrNotSupported)
	}
	pl.dest = ps.addr
	if w.Signal.Mode != rdma.SignalNone {
		var err error
		switch p.strat {
		case cqdata:
			err = q.planImm(w, ps, &pl)
		case counter:
			err = q.planCounter(w, ps, &pl)
		}
		if err != nil {
			return err
		}
	}
	return q.submit(w.WrID, &pl, ps, last)
}

// planImm validates w's signal and encodes it as CQ data words (cqdata).
func (q *qp) planImm(w *rdma.WQE, ps *peerState, pl *plan) error {
	s := &w.Signal
	sig, err := q.remoteRegion(s.Region, "signal")
	if err != nil {
		return err
	}
	m := sigMsg{region: sig.id, word: uint64(s.Off / 8), value: s.Value}
	checkMode := false
	switch s.Mode {
	case rdma.SignalInc:
		m.op, m.value = opInc, 1
		checkMode = s.ModeOff >= 0
	case rdma.SignalAdd:
		m.op = opAdd
		checkMode = s.ModeOff >= 0
	case rdma.SignalVA:
		m.op = opVA
	default:
		return fmt.Errorf("signal mode %d: %w", s.Mode, rdma.ErrNotSupported)
	}
	if s.ModeOff < 0 && m.op != opVA {
		m.op = opVA // no mode word to check: a plain add
	}
	if checkMode {
		m.modeWord = uint64(s.ModeOff / 8)
		m.explicit = s.ModeOff != rdma.PairedModeOff(sig.size, s.Off)
		want := rdma.ModeInc
		if m.op == opAdd {
			want = rdma.ModeAdd
		}
		if !q.claimed(ps, sig, m.modeWord, want) {
			if err := q.claimMode(ps, sig, m.modeWord, want); err != nil {
				return err
			}
		}
	}
	if word, ok := inlineWord(m, q.p.cfg.Rank); ok {
		q.imm = append(q.imm[:0], word)
	} else {
		var err error
		if q.imm, err = encodeSig(q.imm[:0], m, q.p.cfg.Rank); err != nil {
			return fmt.Errorf("%w: %w", err, rdma.ErrNotSupported)
		}
	}
	pl.imm = q.imm
	return nil
}

// claimMode checks a SignalInc/SignalAdd against the mode this rank
// claimed on the target's signal; on a change (or first use) it asks the
// target (query.go). It returns rdma.ErrMixedSignalOps when the target
// signal holds the other mode.
//
// The QP remembers the last claim it checked (lastMode): a stream of
// signals to one word then skips the peer's lock and map, which cost
// ~60 ns a post on the latency path (perf, tcp ping-pong). The memory is
// good while the peer's modes are unchanged (modeGen), so a claim another
// QP changed is looked up again, as without it.
func (q *qp) claimMode(ps *peerState, sig *remoteRegion, modeWord, want uint64) error {
	if q.claimed(ps, sig, modeWord, want) {
		return nil
	}
	k := modeKey{sig.id, modeWord}
	ps.modeMu.Lock()
	have, gen := ps.modes[k], ps.modeGen.Load()
	ps.modeMu.Unlock()
	if have == want {
		q.lastMode = claimed{key: k, mode: want, gen: gen}
		return nil
	}
	got, err := q.queryMode(ps, sig, modeWord)
	if err != nil {
		return err
	}
	ps.modeMu.Lock()
	defer ps.modeMu.Unlock()
	gen = ps.modeGen.Add(1)
	if got != rdma.ModeUnset && got != want {
		ps.modes[k] = got
		return fmt.Errorf("mode word at offset %d of rank %d's region holds %d, wqe wants %d: %w", 8*modeWord, q.peer, got, want, rdma.ErrMixedSignalOps)
	}
	ps.modes[k] = want
	q.lastMode = claimed{key: k, mode: want, gen: gen}
	return nil
}

// claimed reports whether want is the QP's last checked claim on the
// mode word, still good (claimMode's fast path, inlinable).
func (q *qp) claimed(ps *peerState, sig *remoteRegion, modeWord, want uint64) bool {
	c := &q.lastMode
	return c.key == modeKey{sig.id, modeWord} && c.mode == want && c.gen == ps.modeGen.Load()
}

// claimed is a QP's memory of its last checked mode claim (claimMode).
// The zero value matches no claim: its mode is rdma.ModeUnset.
type claimed struct {
	key  modeKey
	mode uint64 // rdma.ModeInc or rdma.ModeAdd
	gen  uint64 // peerState.modeGen when checked
}

// submit posts a validated plan: the extra CQ data words as zero-byte
// writes into the peer's control region, then the WQE's write with the
// last word. Small writes are injected (complete at post, no completion
// entry); others carry FI_COMPLETION and a context the progress goroutine
// routes back to this QP.
func (q *qp) submit(wrID uint64, pl *plan, ps *peerState, last bool) error {
	p := q.p
	injectOK := !p.qk.noInject && (len(pl.imm) == 0 || !p.qk.cqDataNeedsCompletion)
	for _, word := range pl.imm[:max(len(pl.imm)-1, 0)] {
		if err := q.writeWord(ps, word, true); err != nil {
			return err
		}
	}
	var flags, data uint64
	if len(pl.imm) > 0 {
		flags, data = fiRemoteCQData, pl.imm[len(pl.imm)-1]
	}
	if !last {
		flags |= fiMore
	}
	if pl.n <= stageSlot && !injectOK {
		if ok, err := q.submitStaged(wrID, pl, data, flags); ok || err != nil {
			return err
		}
	}
	if pl.n <= p.it.injectSize && injectOK {
		if err := q.write(pl.local.ptr(pl.lo), pl.n, pl.local.mr.desc, pl.dest, pl.raddr, pl.rkey, q.aux, data, flags|fiInject); err != nil {
			return err
		}
		q.done(wrID)
		return nil
	}
	seq := q.push(wrID)
	c := p.ctxs.get()
	c.set(ctxOp, q.id, seq)
	p.inflight.Add(1)
	if err := q.write(pl.local.ptr(pl.lo), pl.n, pl.local.mr.desc, pl.dest, pl.raddr, pl.rkey, c, data, flags|fiCompletion); err != nil {
		p.inflight.Add(-1)
		p.ctxs.put(c)
		q.finish(seq, opCancelled, nil)
		return err
	}
	p.wakeup() // a large write moves only while the provider is polled
	return nil
}

// submitRead posts a validated read. It completes through the CQ once its
// bytes have landed (never at post: fi_read has no inject).
func (q *qp) submitRead(wrID uint64, pl *plan, last bool) error {
	p := q.p
	flags := fiCompletion
	if !last {
		flags |= fiMore
	}
	seq := q.push(wrID)
	c := p.ctxs.get()
	c.set(ctxOp, q.id, seq)
	p.inflight.Add(1)
	if err := q.read(pl.local.ptr(pl.lo), pl.n, pl.local.mr.desc, pl.dest, pl.raddr, pl.rkey, c, flags); err != nil {
		p.inflight.Add(-1)
		p.ctxs.put(c)
		q.finish(seq, opCancelled, nil)
		return err
	}
	p.wakeup() // the read moves only while the provider is polled
	return nil
}

// submitStaged posts a small write from a copy of its source in the
// provider's staging region (or, for zero bytes, from nowhere) and reports
// the WQE complete at once: its source is consumed, as with FI_INJECT, but
// the write keeps a context and FI_COMPLETION (where injection is unsafe
// or loses CQ data, quirks). The staging slot is freed when the write
// completes; a failure faults the QP. It reports false, with no error, when
// no slot is free (the caller posts the write from its source instead).
func (q *qp) submitStaged(wrID uint64, pl *plan, data, flags uint64) (bool, error) {
	p := q.p
	var c *ctx
	buf, desc, slot := pl.local.ptr(pl.lo), pl.local.mr.desc, -1
	if pl.n > 0 {
		if slot = p.stage.get(); slot < 0 {
			return false, nil
		}
		off := slot * stageSlot
		copy(p.stage.r.mem[off:off+pl.n], pl.local.mem[pl.lo:pl.lo+pl.n])
		buf, desc, c = p.stage.r.ptr(off), p.stage.r.mr.desc, p.stage.ctxs[slot]
	} else {
		c = p.ctxs.get()
	}
	c.set(ctxStaged, q.id, uint64(slot+1))
	p.inflight.Add(1)
	if err := q.write(buf, pl.n, desc, pl.dest, pl.raddr, pl.rkey, c, data, flags|fiCompletion); err != nil {
		p.inflight.Add(-1)
		p.stage.release(c, slot)
		return true, err
	}
	q.done(wrID)
	return true, nil
}

// Staging: stageSlots slots of stageSlot bytes, in one registered region
// per provider.
const (
	stageSlot  = 4096
	stageSlots = 64
)

// stagePool's bitmap holds every slot in one word.
const _ = uint(64 - stageSlots)

// stagePool hands out staging slots (Post takes, the progress goroutine
// gives back), each with its own context for the write that uses it.
//
// Why a bitmap and fixed contexts: a staged write is the whole of an 8 B
// put on tcp, and its post sits between the peer's signal and the reply
// on a ping-pong's critical path. A slot is one compare-and-swap on one
// word, with no mutex, and its context comes with it.
type stagePool struct {
	r    *Region
	pool *ctxPool
	free atomic.Uint64    // bit i set: slot i is free
	ctxs [stageSlots]*ctx // slot i's context (C memory, from pool)
}

func (s *stagePool) init(r *Region, pool *ctxPool) {
	s.r, s.pool = r, pool
	for i := range s.ctxs {
		s.ctxs[i] = pool.get()
	}
	s.free.Store(^uint64(0) >> (64 - stageSlots))
}

// get takes a free slot, or returns -1.
func (s *stagePool) get() int {
	for {
		f := s.free.Load()
		if f == 0 {
			return -1
		}
		i := bits.TrailingZeros64(f)
		if s.free.CompareAndSwap(f, f&^(1<<i)) {
			return i
		}
	}
}

// release frees slot (-1: none) and gives back c, the context of the
// staged write that used it: a slot's own context stays with the slot, a
// zero-byte write's goes back to the provider's pool.
func (s *stagePool) release(c *ctx, slot int) {
	if slot < 0 {
		s.pool.put(c)
		return
	}
	s.free.Or(1 << slot)
}

// writeWord posts one zero-byte write carrying word as CQ data into the
// peer's control region, no WQE waiting for it: injected where the
// provider allows, else with its own context and FI_COMPLETION (quirks:
// sockets delivers CQ data only for writes posted with FI_COMPLETION, rxm
// cannot fail an injected write).
func (q *qp) writeWord(ps *peerState, word uint64, more bool) error {
	p := q.p
	flags := fiRemoteCQData
	if more {
		flags |= fiMore
	}
	addr := p.mrm.targetAddr(ps.ctrlBase, 0)
	if !p.qk.cqDataNeedsCompletion && !p.qk.noInject {
		return q.write(p.ctrl.ptr(0), 0, p.ctrl.mr.desc, ps.addr, addr, ps.ctrlKey, q.aux, word, flags|fiInject)
	}
	c := p.ctxs.get()
	c.set(ctxOp, q.id, untrackedSeq)
	p.inflight.Add(1)
	if err := q.write(p.ctrl.ptr(0), 0, p.ctrl.mr.desc, ps.addr, addr, ps.ctrlKey, c, word, flags|fiCompletion); err != nil {
		p.inflight.Add(-1)
		p.ctxs.put(c)
		return err
	}
	return nil
}

// write posts one fi_writemsg, retrying -FI_EAGAIN (the provider's queue is
// full, or the connection is being set up) until the post timeout. A
// failure is a *rdma.QPError naming the libfabric code.
func (q *qp) write(buf unsafe.Pointer, n int, desc uintptr, dest, raddr, rkey uint64, c *ctx, data, flags uint64) error {
	if r := q.p.f.write(buf, n, desc, dest, raddr, rkey, c, data, flags); r != 0 {
		return q.again(r, false, buf, n, desc, dest, raddr, rkey, c, data, flags)
	}
	return nil
}

// read posts fi_readmsg into buf, retrying as write does.
func (q *qp) read(buf unsafe.Pointer, n int, desc uintptr, src, raddr, rkey uint64, c *ctx, flags uint64) error {
	if r := q.p.f.read(buf, n, desc, src, raddr, rkey, c, flags); r != 0 {
		return q.again(r, true, buf, n, desc, src, raddr, rkey, c, 0, flags)
	}
	return nil
}

// again retries an RMA (fi_readmsg with read, else fi_writemsg) that
// returned r (not 0) while it returns -FI_EAGAIN.
func (q *qp) again(r int, read bool, buf unsafe.Pointer, n int, desc uintptr, dest, raddr, rkey uint64, c *ctx, data, flags uint64) error {
	call := "fi_writemsg"
	if read {
		call = "fi_readmsg"
	}
	p := q.p
	var start time.Time
	for i := 0; r == -codeAgain; i++ {
		// The provider frees its queue only while polled: poll here (as
		// any wait on the provider), and wake the progress goroutine in
		// case another thread holds the CQ.
		switch {
		case i == 0:
			start = time.Now()
			p.active()
			p.wakeup()
		case i < 128:
			p.Poll()
		default:
			p.Poll()
			time.Sleep(20 * time.Microsecond)
			if time.Since(start) > p.env.postTimeout {
				return &rdma.QPError{Peer: q.peer, Err: fmt.Errorf("ofi: post: still -FI_EAGAIN after %v (peer not draining?): %w",
					p.env.postTimeout, newFabricError(call, r))}
			}
		}
		if p.pins.Closed() || q.closed.Load() {
			return fmt.Errorf("ofi: post: %w", rdma.ErrClosed)
		}
		if f := q.fault.Load(); f != nil {
			return f
		}
		if read {
			r = p.f.read(buf, n, desc, dest, raddr, rkey, c, flags)
		} else {
			r = p.f.write(buf, n, desc, dest, raddr, rkey, c, data, flags)
		}
	}
	if r != 0 {
		return &rdma.QPError{Peer: q.peer, Err: newFabricError(call, r)}
	}
	return nil
}

// localRegion returns r as a live Region of this provider.
func (q *qp) localRegion(r rdma.MemoryRegion) (*Region, error) {
	lr, ok := r.(*Region)
	if !ok || lr == nil {
		return nil, fmt.Errorf("local region %T: not an ofi region", r)
	}
	if lr.p != q.p {
		return nil, fmt.Errorf("local region of rank %d: registered by another provider", lr.p.cfg.Rank)
	}
	if lr.pins.Closed() {
		return nil, fmt.Errorf("local region: %w", rdma.ErrClosed)
	}
	return lr, nil
}

// remoteRegion returns r as a live import of this provider from the QP's peer.
func (q *qp) remoteRegion(r rdma.RemoteRegion, what string) (*remoteRegion, error) {
	rr, ok := r.(*remoteRegion)
	if !ok || rr == nil {
		return nil, fmt.Errorf("%s region %T: not an ofi import", what, r)
	}
	if rr.p != q.p {
		return nil, fmt.Errorf("%s region: imported by another provider", what)
	}
	if rr.peer != q.peer {
		return nil, fmt.Errorf("%s region of rank %d on a qp to rank %d", what, rr.peer, q.peer)
	}
	if rr.closed.Load() {
		return nil, fmt.Errorf("%s region of rank %d: %w", what, rr.peer, rdma.ErrClosed)
	}
	return rr, nil
}

// word returns the atomic view of the 64-bit word at byte off of r.
func (r *Region) word(off int) *atomic.Uint64 { return memword.Uint64(r.mem, off) }

//go:build ofi && cgo && linux

package ofi

import (
	"fmt"
	"os"
	"runtime"
	"time"

	"golang.org/x/sys/unix"

	"github.com/rdmactor/rdmactor/transport/rdma"
)

// The progress goroutine. Each Provider runs one, locked to its OS thread
// (libfabric providers keep per-thread state in their progress paths, and
// a manual-progress provider is driven from one place). It is the only
// reader of the completion queue and the counters (besides Poll, under
// the same lock):
//
//   - it drives manual progress (fi_cq_read progresses the endpoint: on
//     tcp;ofi_rxm the target must poll for writes to land at all, and the
//     initiator must keep polling after its last post);
//   - it routes each local completion to its QP's record (qp.finish), and
//     turns error entries (fi_cq_readerr, with fi_cq_strerror's message)
//     into the QP's fault;
//   - as the target, it applies the signal adds of the cqdata strategy
//     (remote CQ data) and of the counter strategy (counter deltas) to the
//     local signal words with atomic adds, after the data they signal is
//     placed; and it answers mode queries.
//
// Pacing: it polls while operations are in flight or right after a post
// (a manual-progress provider moves data only when polled), and for a
// short spin after its last activity (EnvSpin); then it blocks in
// fi_cq_sread on the CQ's wait object, which the kernel wakes when data
// arrives and a post wakes with fi_cq_signal, or, where the CQ has no wait
// object (sockets), naps with nanosleep. On a loaded 2-core VM blocking
// beat spinning by 10x in latency (docs/ofi.md): a spinning progress
// thread takes the core the peer's reply needs.

func (p *Provider) run() {
	runtime.LockOSThread()
	defer runtime.UnlockOSThread()
	defer close(p.done)
	// Naps are nanosleeps of this thread with a 1 ns timer slack: Go's
	// timers (time.Sleep, and so idle.Backoff's parks) resolve to about
	// 1 ms on the VMs this was measured on, nanosleep to 25 µs.
	_ = unix.Prctl(unix.PR_SET_TIMERSLACK, 1, 0, 0, 0)
	ents := make([]cqEntry, cqEntryBatch)
	lastAct := p.activity.Load()
	var idleSince time.Time
	nap := napMin
	for empty := 0; !p.stopping.Load(); {
		if p.waiters.Load() > 0 || p.polledSince(pollerQuiet) {
			// A waiter drives progress (PollWait): stand back until it
			// has been quiet for a while.
			napFor(pollerQuiet / 4)
			continue
		}
		p.pollMu.Lock() // a waiter in PollWait may hold it: it progresses meanwhile
		if p.waiters.Load() > 0 || p.polledSince(pollerQuiet) {
			p.pollMu.Unlock()
			continue
		}
		got := p.poll(ents)
		p.pollMu.Unlock()
		if got > 0 {
			empty, nap = 0, napMin
			continue
		}
		if a := p.activity.Load(); a != lastAct || p.inflight.Load() > 0 {
			lastAct, empty, nap = a, 0, napMin // busy: a manual-progress provider needs polling
			continue
		}
		if empty++; empty == 1 {
			idleSince = time.Now()
		}
		if empty < spinPolls || time.Since(idleSince) < p.env.spin {
			continue
		}
		// Counter signals tick without a CQ entry: no blocking for them.
		if p.f.waitable && p.strat != counter {
			p.block(ents, lastAct)
			empty = 0
			continue
		}
		napFor(nap)
		nap = min(2*nap, p.env.idleMax)
	}
}

// block waits in fi_cq_sread until a completion arrives, a post wakes it
// (active, fi_cq_signal) or blockMS passes, and handles what it read.
func (p *Provider) block(ents []cqEntry, lastAct uint64) {
	p.blocked.Store(true)
	defer p.blocked.Store(false)
	// Dekker with active: a post bumps activity, then looks at blocked.
	if p.activity.Load() != lastAct || p.inflight.Load() > 0 || p.stopping.Load() {
		return
	}
	p.pollMu.Lock()
	defer p.pollMu.Unlock()
	switch n := p.f.waitCQ(ents, blockMS); {
	case n > 0:
		for i := range ents[:n] {
			p.handle(&ents[i])
		}
	case n == -codeAvail:
		if e, ok := p.f.readErr(); ok {
			p.handleErr(&e)
		}
	}
	if p.strat == counter {
		p.pollCounters()
	}
}

// active records a post (or another reason to poll). It does not wake a
// progress goroutine blocked in fi_cq_sread: a small write's completion
// (or the socket turning writable) wakes it; submit wakes it for writes
// that need polling to move.
func (p *Provider) active() {
	p.activity.Add(1)
}

// wakeup ends a blocking fi_cq_sread of the progress goroutine.
func (p *Provider) wakeup() {
	if p.blocked.Load() {
		p.f.signalCQ()
	}
}

func napFor(d time.Duration) {
	ts := unix.NsecToTimespec(int64(d))
	_ = unix.Nanosleep(&ts, nil)
}

// Pacing of the progress goroutine: after its last activity (a completion,
// a signal, a post) it polls spinPolls times and for EnvSpin at least,
// then blocks in fi_cq_sread (blockMS at a time) where the CQ has a wait
// object, or naps from napMin up to EnvIdleMax where it has not.
const (
	spinPolls = 64
	blockMS   = 100
	napMin    = 10 * time.Microsecond
)

// Poll drives the provider once from the caller's goroutine: it reads a
// batch of completions, applies the signals among them, and returns how
// many it handled (0 at once if another Poll or the progress goroutine is
// polling). It is the provider half of a proposed contract change
// (docs/ofi.md): a waiter that spins anyway (gin's WaitSignal) polls the
// provider, the progress goroutine stands back while it does, and one
// thread per rank spins instead of two. Safe for concurrent use.
func (p *Provider) Poll() int {
	if p.stopping.Load() || !p.pollMu.TryLock() {
		return 0
	}
	defer p.pollMu.Unlock()
	p.lastPoll.Store(time.Now().UnixNano())
	if p.pollEnts == nil {
		p.pollEnts = make([]cqEntry, cqEntryBatch)
	}
	return p.poll(p.pollEnts)
}

// PollWait is Poll that, when nothing is ready and the CQ has a wait
// object, blocks in fi_cq_sread for up to d (rounded up to 1 ms, the call's
// unit) until a completion or signal arrives. A waiter that calls it
// instead of spinning costs no CPU and is woken by the kernel when data
// comes in, like a blocking fi_cq_sread loop (the raw anchor's -sread).
// It returns 0 at once where another poll runs.
func (p *Provider) PollWait(d time.Duration) int {
	if p.stopping.Load() {
		return 0
	}
	// Take the CQ from the progress goroutine, waking it if it blocks.
	p.waiters.Add(1)
	p.wakeup()
	p.pollMu.Lock()
	p.waiters.Add(-1)
	defer p.pollMu.Unlock()
	p.lastPoll.Store(time.Now().UnixNano())
	if p.pollEnts == nil {
		p.pollEnts = make([]cqEntry, cqEntryBatch)
	}
	if n := p.poll(p.pollEnts); n > 0 || !p.f.waitable || p.inflight.Load() > 0 {
		return n // sends in flight need polling, not sleeping
	}
	ms := max(1, int((d+time.Millisecond-1)/time.Millisecond))
	n := p.f.waitCQ(p.pollEnts, ms)
	p.lastPoll.Store(time.Now().UnixNano())
	switch {
	case n > 0:
		for i := range p.pollEnts[:n] {
			p.handle(&p.pollEnts[i])
		}
		return n
	case n == -codeAvail:
		if e, ok := p.f.readErr(); ok {
			p.handleErr(&e)
			return 1
		}
	}
	return 0
}

// polledSince reports whether Poll ran within the last d.
func (p *Provider) polledSince(d time.Duration) bool {
	t := p.lastPoll.Load()
	return t != 0 && time.Now().UnixNano()-t < int64(d)
}

// pollerQuiet is how long after a Poll the progress goroutine stays back.
const pollerQuiet = time.Millisecond

// poll reads one batch of completions and the counters; it returns how
// much it handled.
func (p *Provider) poll(ents []cqEntry) int {
	got := 0
	switch n := p.f.pollCQ(ents); {
	case n > 0:
		for i := range ents[:n] {
			p.handle(&ents[i])
		}
		got = n
	case n == -codeAvail:
		if e, ok := p.f.readErr(); ok {
			p.handleErr(&e)
			got = 1
		}
	case n == -codeAgain:
	default:
		p.signalError(newFabricError("fi_cq_read", n))
	}
	if p.strat == counter {
		got += p.pollCounters()
	}
	return got
}

// handle routes one successful CQ entry.
func (p *Provider) handle(e *cqEntry) {
	// Incoming remote CQ data carries FI_REMOTE_WRITE; a local completion
	// of a writedata may echo FI_REMOTE_CQ_DATA too (sockets does).
	if e.flags&fiRemoteWrite != 0 {
		if e.flags&fiRemoteCQData != 0 {
			p.onCQData(e.data)
		}
		return
	}
	if e.ctx == nil {
		return
	}
	kind, owner, seq := e.ctx.fields()
	switch kind {
	case ctxOp:
		if seq == auxSeq {
			return // success of an injected operation: not reported
		}
		if q := p.qpByID(owner); q != nil && seq != untrackedSeq {
			q.finish(seq, opDone, nil)
		}
		p.inflight.Add(-1)
		p.ctxs.put(e.ctx)
	case ctxInternal:
		if v, ok := p.internal.LoadAndDelete(e.ctx); ok {
			v.(*internalOp).done.Store(1)
		}
		p.inflight.Add(-1)
		p.ctxs.put(e.ctx)
	case ctxStaged:
		p.stage.put(int(seq) - 1)
		p.inflight.Add(-1)
		p.ctxs.put(e.ctx)
	}
}

// handleErr turns a CQ error entry into its QP's fault (or an internal
// operation's failure, or a target-side signal error).
func (p *Provider) handleErr(e *cqErr) {
	ferr := &FabricError{Op: "completion", Code: e.code, ProvErr: e.provErr, Msg: e.msg}
	if e.flags&fiRemoteWrite != 0 || e.ctx == nil {
		p.signalError(fmt.Errorf("remote write: %w", ferr))
		return
	}
	kind, owner, seq := e.ctx.fields()
	switch kind {
	case ctxOp:
		if q := p.qpByID(owner); q != nil {
			qe := q.setFault(&rdma.QPError{Peer: q.peer, Err: ferr})
			if seq != auxSeq && seq != untrackedSeq {
				q.finish(seq, opDone, qe)
			}
		}
		if seq != auxSeq {
			p.inflight.Add(-1)
			p.ctxs.put(e.ctx)
		}
	case ctxInternal:
		if v, ok := p.internal.LoadAndDelete(e.ctx); ok {
			op := v.(*internalOp)
			op.err = ferr
			op.done.Store(2)
		}
		p.inflight.Add(-1)
		p.ctxs.put(e.ctx)
	case ctxStaged: // its WQE was reported complete: the QP fails instead
		if q := p.qpByID(owner); q != nil {
			q.setFault(&rdma.QPError{Peer: q.peer, Err: ferr})
		}
		p.stage.put(int(seq) - 1)
		p.inflight.Add(-1)
		p.ctxs.put(e.ctx)
	}
}

// onCQData decodes one remote CQ data word and applies what it completes.
func (p *Provider) onCQData(data uint64) {
	m, sender, ok, err := p.dec.decode(data)
	if err != nil {
		p.signalError(err)
		return
	}
	if !ok {
		return
	}
	if m.op == opQuery {
		p.answerQuery(&m, sender)
		return
	}
	if err := p.apply(&m); err != nil {
		p.signalError(fmt.Errorf("signal %v of %d to word %d of region %d: %w", m.op, m.value, m.word, m.region, err))
	}
}

// apply adds m.value to the signal word, after checking and claiming its
// mode word for opInc/opAdd (the rule of package shm: 0 unset, 1 SignalInc,
// 2 SignalAdd; the first op after a reset claims it).
func (p *Provider) apply(m *sigMsg) error {
	r := p.region(m.region)
	if r == nil || !r.pins.pin() {
		return fmt.Errorf("no such region (closed?): %w", rdma.ErrClosed)
	}
	defer r.pins.unpin()
	words := uint64(r.size / 8)
	if m.word >= words {
		return fmt.Errorf("region of %d bytes: %w", r.size, rdma.ErrOutOfBounds)
	}
	if m.op != opVA {
		mw := m.modeWord
		if !m.explicit {
			mw = uint64(rdma.PairedModeOff(r.size, int(8*m.word)) / 8)
		}
		if mw >= words || mw == m.word {
			return fmt.Errorf("mode word %d in a region of %d bytes: %w", mw, r.size, rdma.ErrOutOfBounds)
		}
		want := rdma.ModeInc
		if m.op == opAdd {
			want = rdma.ModeAdd
		}
		if err := rdma.ClaimMode(r.word(int(8*mw)), want); err != nil {
			return fmt.Errorf("add dropped: %w", err)
		}
	}
	r.word(int(8 * m.word)).Add(m.value)
	p.stats.SignalsApplied.Add(1)
	return nil
}

// signalError counts and records a target-side failure that no initiator
// can be told of.
func (p *Provider) signalError(err error) {
	p.stats.SignalErrors.Add(1)
	p.stats.lastErr.Store(&err)
	if p.env.debug {
		p.debugf("target side: %v", err)
	}
}

func (p *Provider) debugf(format string, args ...any) {
	fmt.Fprintf(os.Stderr, "ofi: rank %d: "+format+"\n", append([]any{p.cfg.Rank}, args...)...)
}

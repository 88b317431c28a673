//go:build ofi && cgo && linux

package ofi

import (
	"errors"
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
// reader of the completion queue and the counters besides Poll and
// PollWait (one reader at a time, under pollMu):
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
// Waiters come first: Poll and PollWait (rdma.Poller) let gin's and the
// endpoint's waits read the CQ themselves, and while they do the
// goroutine stands back (a Go sleep of pollerQuiet, doubling up to
// pollerQuietMax while polls keep coming); so it does, pollerQuiet at a
// time, while posts drive the provider (push).
//
// Pacing: it polls while operations are in flight or right after a post
// (a manual-progress provider moves data only when polled), and for a
// short spin after its last activity (EnvSpin); then, where the CQ has no
// wait object (the default, EnvWait), it naps with nanosleep for a
// sixteenth of its idle time up to EnvIdleMax, or, with one, blocks in
// fi_cq_sread, which the kernel wakes when data arrives and a post wakes
// with fi_cq_signal. On a loaded host with few cores an idle progress
// thread that spins takes the core the peer's reply needs (docs/ofi.md).

func (p *Provider) run() {
	lockForNaps()
	defer runtime.UnlockOSThread()
	defer close(p.done)
	ents := make([]cqEntry, cqEntryBatch)
	lastAct := p.activity.Load()
	var idleSince time.Time
	polls, pushes := p.polls.Load(), p.pushes.Load()
	quiet := pollerQuiet
	blk := minBlockMS
	for empty := 0; !p.stopping.Load(); {
		if p.waiters.Load() > 0 || p.polls.Load() != polls {
			// A waiter drives progress (Poll, PollWait): stand back until
			// it has been quiet for a while. A Go sleep, not a nap: the
			// goroutine parks and gives its P back, whereas a thread in a
			// nanosleep syscall keeps it, so the runtime's sysmon would
			// retake it on every nap (a futex wake-up of another thread,
			// and sysmon itself waking every 20 µs), which costs the
			// waiter on a host with few cores more than the nap saves.
			// The sleeps double while the waiters stay: each wake-up is a
			// context switch that, where cores are few, delays the
			// spinning waiter or its peer (standBack keeps it to one).
			polls = p.polls.Load()
			if p.standBack(quiet) {
				quiet = pollerQuiet // Resume: the caller polls no more
				continue
			}
			quiet = min(2*quiet, pollerQuietMax)
			continue
		}
		quiet = pollerQuiet
		if n := p.pushes.Load(); n != pushes {
			pushes = n // posts drive progress (push): stand back
			p.standBack(pollerQuiet)
			continue
		}
		p.pollMu.Lock() // a waiter in PollWait may hold it: it progresses meanwhile
		if p.waiters.Load() > 0 || p.polls.Load() != polls || p.pushes.Load() != pushes {
			p.pollMu.Unlock()
			continue
		}
		p.retryWarmups()
		got := p.poll(ents)
		p.pollMu.Unlock()
		if got > 0 {
			empty, blk = 0, minBlockMS
			continue
		}
		if a := p.activity.Load(); a != lastAct || p.inflight.Load() > 0 || p.warming() {
			lastAct, empty, blk = a, 0, minBlockMS // busy: a manual-progress provider needs polling
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
			if p.block(ents, lastAct, blk) == 0 {
				blk = min(2*blk, maxBlockMS) // quiet: block longer next time
			}
			empty = 0
			continue
		}
		napFor(idleNap(time.Since(idleSince), p.env.idleMax))
	}
}

// lockForNaps locks the goroutine to its thread and gives the thread a
// 1 ns timer slack: the progress goroutine's naps are nanosleeps of its
// thread, because Go's timers (time.Sleep, and so idle.Backoff's parks)
// can resolve to about 1 ms on small VMs, nanosleep with that slack to
// tens of µs.
func lockForNaps() {
	runtime.LockOSThread()
	_ = unix.Prctl(unix.PR_SET_TIMERSLACK, 1, 0, 0, 0)
}

// standBack sleeps d (a Go sleep) with the goroutine unlocked from its
// thread, and locks it again after (lockForNaps: it may be another
// thread).
//
// Why: a locked goroutine's timer wakes whichever thread polls the
// timers, which must hand the goroutine to its own thread (runtime
// startlockedm: a futex wake-up of that thread, and a park of the first).
// Unlocked, the thread that takes the timer runs it, which saves the
// ranks those context switches while the waiters poll.
//
// It returns early, reporting true, on Resume.
func (p *Provider) standBack(d time.Duration) (resumed bool) {
	runtime.UnlockOSThread()
	t := time.NewTimer(d)
	select {
	case <-t.C:
	case <-p.resume:
		t.Stop()
		resumed = true
	}
	lockForNaps()
	return resumed
}

// Resume makes the progress goroutine read the CQ again at once if it
// stands back for the Poll calls of a caller that now blocks elsewhere:
// the "auto" provider's endpoints drive ofi with Poll, and its waiters
// block on a shm doorbell that only this goroutine's signal adds ring.
// Safe for concurrent use; cheap when it does not stand back.
func (p *Provider) Resume() {
	select {
	case p.resume <- struct{}{}:
	default:
	}
}

// idleNap is how long a poller that found nothing for idle naps before it
// polls again, where the CQ has no wait object: a sixteenth of the idle
// time, from napMin up to most. So a message that ends a quiet period is
// seen at most 1/16 (6 %) of that period late, or most, whichever is less,
// and a process waiting for nothing wakes about 1/most times a second.
func idleNap(idle, most time.Duration) time.Duration {
	return min(max(idle/16, napMin), most)
}

// block waits in fi_cq_sread until a completion arrives, a post wakes it
// (fi_cq_signal, see wakeup) or ms milliseconds pass, and handles what it
// read; it returns how much, or -1 when it did not block.
func (p *Provider) block(ents []cqEntry, lastAct uint64, ms int) int {
	p.pollMu.Lock()
	defer p.pollMu.Unlock()
	// A post since the goroutine last looked: poll instead. (A post of a
	// write that needs polling, later, wakes the CQ: blockCQ's Dekker.)
	if p.activity.Load() != lastAct {
		return -1
	}
	n := p.blockCQ(ents, ms)
	if p.strat == counter {
		p.pollCounters()
	}
	return n
}

// busy records that something happened (a completion, a signal, data
// moved, a post): PollWait naps only once nothing has for waiterSpin. It
// counts, and PollWait, which reads the clock anyway, stamps the time it
// first sees a new count (at most one PollWait late, and a PollWait that
// naps sleeps a sixteenth of the quiet time): a clock read per post and
// per completion batch would cost tens of ns each on the critical path.
func (p *Provider) busy() {
	p.events.Add(1)
}

// sinceBusy is how long before now PollWait's caller first saw the last
// activity. Caller holds pollMu.
func (p *Provider) sinceBusy(now time.Time) time.Duration {
	if e := p.events.Load(); e != p.seenEv || p.busyAt.IsZero() {
		p.seenEv, p.busyAt = e, now
	}
	return now.Sub(p.busyAt)
}

// Where the CQ has no wait object, a waiter's PollWait yields the core and
// polls on for waiterSpin after the provider's last activity, then naps
// (idleNap). A read of the CQ that took longer than busyPoll is slow: an
// empty fi_cq_read takes about 1 µs on tcp and sockets, one that places
// part of a 64 KiB write several (slowReads says when slow reads count).
const (
	waiterSpin = time.Millisecond
	busyPoll   = 4 * time.Microsecond
)

// slowReads tells PollWait whether its slow CQ reads show data moving.
//
// A slow read counts once another one came within the streamReads reads
// before it. A single slow read is as likely the first read after a nap,
// ofi_rxm's connection manager (every 10 ms) or a preemption: counting
// those, a waiter for nothing kept a third of a core busy. The target of a
// tcp 64 KiB stream, though, reads slow then fast: a read that places data
// (~6 µs), one that takes the rest (~2.5 µs), then empty ones until the
// next write lands, 4-20 reads later. Counting only two slow reads in a
// row, such a target saw no activity for a millisecond now and then and
// napped mid-stream. A window of 8 reads covers the gap between writes;
// scripts/bench_ofi.sh shows the stream against the raw C loop.
type slowReads struct {
	reads uint64 // PollWait reads so far
	last  uint64 // the read that was last slow; 0 for none
}

// streamReads is how many reads after a slow one another slow one
// confirms it.
const streamReads = 8

// read records a read, slow if it took longer than busyPoll. It reports
// whether the read shows data moving, and whether the waiter should read
// again at once because a slow read awaits its confirmation. (The first
// read after a nap is slow too: it is confirmed only if data moves.)
func (s *slowReads) read(slow bool) (moving, confirming bool) {
	s.reads++
	recent := s.last != 0 && s.reads-s.last <= streamReads
	if slow {
		s.last = s.reads
	}
	return slow && recent, s.last != 0 && s.reads-s.last < streamReads
}

// active records a post (or another reason to poll). It does not wake a
// progress goroutine blocked in fi_cq_sread: a small write's completion
// (or the socket turning writable) wakes it; submit wakes it for writes
// that need polling to move.
func (p *Provider) active() {
	p.activity.Add(1)
	p.busy()
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
// then blocks in fi_cq_sread where the CQ has a wait object, or naps from
// napMin up to EnvIdleMax where it has not. Its blocks start at minBlockMS
// and double while they end with nothing read, up to maxBlockMS: each end
// costs a rank several thread wake-ups and a spin of polls, and a wait fd
// misses only what moves right after traffic (bytes tcp;ofi_rxm took off
// a socket), so the first blocks are short and an idle rank's are long.
const (
	spinPolls  = 64
	minBlockMS = 1
	maxBlockMS = 10000
	napMin     = 10 * time.Microsecond
)

var _ rdma.BlockingPoller = (*Provider)(nil)

// Blocks reports whether PollWait blocks until a write arrives
// (rdma.BlockingPoller): the CQ has a wait object and signals arrive as CQ
// entries (cqdata), not as counter ticks.
func (p *Provider) Blocks() bool { return p.f.waitable && p.strat != counter }

// Kick ends a PollWait blocked in fi_cq_sread (fi_cq_signal), so that its
// caller looks at its context and state at once. Safe for concurrent use,
// and a no-op after Close.
func (p *Provider) Kick() {
	p.kicks.Add(1)
	if p.pins.Pin() {
		p.f.signalCQ()
		p.pins.Unpin()
	}
}

// Poll drives the provider once from the caller's goroutine (rdma.Poller):
// it reads a batch of completions (fi_cq_read(3), which on a
// manual-progress provider also moves data), applies the signals among
// them, and returns how many it handled; 0 at once if another Poll or the
// progress goroutine is reading the CQ. A waiter that polls makes the
// progress goroutine stand back for pollerQuiet, so one thread per rank
// reads the CQ, not two. Safe for concurrent use.
func (p *Provider) Poll() int {
	// Pinned: Close frees the CQ, and waits for pins first.
	if p.stopping.Load() || !p.pins.Pin() {
		return 0
	}
	n := p.pollOnce()
	p.pins.Unpin()
	return n
}

// pollOnce is Poll's read, with the provider pinned.
func (p *Provider) pollOnce() int {
	p.schedPoint()
	if !p.pollMu.TryLock() {
		if p.blocked.Load() {
			// The CQ's holder sleeps on its wait object: wake it, and
			// make the progress goroutine stand back, so that this
			// spinning waiter reads the CQ itself from now on.
			p.polls.Add(1)
			p.wakeup()
		}
		return 0
	}
	p.polls.Add(1)
	return p.readHeld()
}

// readHeld reads one batch of the CQ with pollMu held, then releases it;
// it returns how much it handled.
func (p *Provider) readHeld() int {
	n := p.poll(p.pollBuf())
	if n > 0 {
		p.busy()
	}
	p.pollMu.Unlock()
	return n
}

// push drives the provider once after a post (quirks.progressAtPost), so
// the write leaves now rather than at the next poll; it skips the pass
// when another reader holds the CQ (that one progresses). The progress
// goroutine stands back while posts come, as it does for waiters, but
// for pollerQuiet at a time, without the waiters' doubling: the rest of a
// write that one pass does not send moves about a millisecond after the
// rank's last post if nobody waits (every wait drives the provider).
//
// Why it stands back: polling beside a producer whose posts drive the
// provider, it fought the producer for the CQ (pollMu, and the provider's
// own locks) and parked its locked thread on the mutex, a futex dance per
// pass, which slowed the stream.
func (p *Provider) push() {
	p.pushes.Add(1)
	p.tryPoll()
}

// tryPoll reads the CQ once unless another reader holds it and returns
// how much it handled (Poll's read, for a post).
func (p *Provider) tryPoll() int {
	if !p.pollMu.TryLock() {
		return 0
	}
	return p.readHeld()
}

// PollWait is Poll that, when nothing was ready, waits for up to d
// (rdma.Poller): where the CQ has a wait object (RDMACTOR_OFI_WAIT=fd) it
// blocks in fi_cq_sread(3) for d rounded up to whole milliseconds (the
// call's unit), woken by the kernel when data arrives, by a post that
// needs polling, or by another PollWait caller. Where it has none (the
// default, and sockets), or signals tick counters rather than the CQ, it
// returns at once for streamReads reads after a slow one (one that may
// have moved a stream's data, slowReads), yields the processor
// (sched_yield(2)) and returns while the provider was active in the last
// waiterSpin, and otherwise naps idleNap(idle, d): a waiter there polls
// on, as a manual-progress target must for a stream's data to move, and
// costs little once nothing happens. It returns at once, after one poll,
// while writes of this rank are in flight: a manual-progress provider
// moves them only while polled. Unlike Poll it waits for the CQ when the
// progress goroutine holds it (waking it from fi_cq_sread). Safe for
// concurrent use.
func (p *Provider) PollWait(d time.Duration) int {
	if p.stopping.Load() || !p.pins.Pin() {
		return 0
	}
	n := p.pollWait(d)
	p.pins.Unpin()
	return n
}

// pollWait is PollWait with the provider pinned.
func (p *Provider) pollWait(d time.Duration) int {
	p.schedPoint()
	// Take the CQ from whoever reads it, waking them if they block.
	p.waiters.Add(1)
	p.wakeup()
	p.pollMu.Lock()
	p.waiters.Add(-1)
	p.polls.Add(1)
	p.pollWaits.Add(1)
	ents := p.pollBuf()
	p.retryWarmups()
	t0 := time.Now()
	n := p.poll(ents)
	now := time.Now()
	moving, confirming := p.slow.read(now.Sub(t0) > busyPoll)
	if n > 0 || moving {
		p.busy()
	}
	idle := p.sinceBusy(now)
	if n > 0 || p.inflight.Load() > 0 || p.warming() || p.stopping.Load() {
		p.pollMu.Unlock()
		return n
	}
	if !p.f.waitable || p.strat == counter {
		// No wait object to block in: poll on, and once nothing has
		// happened for a while, nap. The writes of a stream leave no CQ
		// entry at the target, yet move only while it reads its CQ
		// (sockets, tcp;ofi_rxm): slow reads moved data, and count as
		// activity (slowReads), so the target of a stream keeps polling
		// (even short naps starve a stream on sockets).
		//
		// While a slow read waits for its confirmation the waiter
		// neither naps nor yields: it reads on at once, as raw
		// libfabric's loop does (yields there cost a stream's target a
		// good part of its CPU).
		p.pollMu.Unlock()
		switch {
		case confirming:
		case idle < waiterSpin:
			schedYield()
		default:
			napFor(idleNap(idle, d))
		}
		return 0
	}
	defer p.pollMu.Unlock()
	ms := max(1, int((d+time.Millisecond-1)/time.Millisecond))
	n = p.blockCQ(ents, ms)
	p.polls.Add(1)
	return n
}

// pollBuf is the CQ buffer of Poll and PollWait. Caller holds pollMu.
func (p *Provider) pollBuf() []cqEntry {
	if p.pollEnts == nil {
		p.pollEnts = make([]cqEntry, cqEntryBatch)
	}
	return p.pollEnts
}

// blockCQ blocks in fi_cq_sread for up to ms milliseconds, unless a post
// or a PollWait caller came meanwhile, and handles what it read; it
// returns how much. Caller holds pollMu.
func (p *Provider) blockCQ(ents []cqEntry, ms int) int {
	kicks := p.kicks.Load()
	p.blocked.Store(true)
	defer p.blocked.Store(false)
	// Dekker with wakeup: a post bumps inflight (or a PollWait waiters),
	// then looks at blocked; this stores blocked, then looks at them. The
	// wait looks again after fi_trywait, which swallows a wake-up signal
	// that came before it.
	quiet := func() bool {
		return p.inflight.Load() == 0 && !p.warming() && p.waiters.Load() == 0 && !p.stopping.Load() && p.kicks.Load() == kicks
	}
	if !quiet() {
		return 0
	}
	switch n := p.f.waitCQ(ents, ms, quiet); {
	case n > 0:
		for i := range ents[:n] {
			p.handle(&ents[i])
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

// pollerQuiet is how long the progress goroutine stays back once it saw a
// Poll or PollWait: until none came for that long. While they keep coming
// it sleeps longer, doubling up to pollerQuietMax, which is so the longest
// a write posted just as its waiters leave can sit unprogressed (tcp hands
// a write's bytes to the socket inside fi_writemsg as far as they fit; the
// rest, and a target's placement, move when the CQ is read).
const (
	pollerQuiet    = time.Millisecond
	pollerQuietMax = 16 * time.Millisecond
)

// poll reads one batch of completions and the counters; it returns how
// much it handled.
func (p *Provider) poll(ents []cqEntry) int {
	got := 0
	if p.f.waiter != nil {
		p.f.waiter.read()
	}
	switch n := p.f.pollCQ(ents); {
	case n > 0:
		for i := range ents[:n] {
			e := &ents[i]
			// A peer's signal of an inline kind is applied here, not
			// through handle and onCQData: two frames fewer on a
			// ping-pong's critical path, cold there.
			if e.flags&(fiRemoteWrite|fiRemoteCQData) == fiRemoteWrite|fiRemoteCQData && isInline(e.data) {
				m := decodeInline(e.data)
				if err := p.apply(&m); err != nil {
					p.applyError(&m, err)
				}
				continue
			}
			p.handle(e)
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
		p.inflight.Add(-1)
		p.stage.release(e.ctx, int(seq)-1)
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
		p.inflight.Add(-1)
		p.stage.release(e.ctx, int(seq)-1)
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
		p.applyError(&m, err)
	}
}

// applyError records that m could not be applied; a mode mismatch goes
// back to its sender too (reportMixed).
func (p *Provider) applyError(m *sigMsg, err error) {
	p.signalError(fmt.Errorf("signal %v of %d to word %d of region %d: %w", m.op, m.value, m.word, m.region, err))
	if m.op != opVA && errors.Is(err, rdma.ErrMixedSignalOps) {
		p.reportMixed(m.sender)
	}
}

// apply adds m.value to the signal word, after checking and claiming its
// mode word for opInc/opAdd (the rule of package shm: 0 unset, 1 SignalInc,
// 2 SignalAdd; the first op after a reset claims it).
func (p *Provider) apply(m *sigMsg) error {
	r := p.region(m.region)
	if r == nil || !r.pins.Pin() {
		return fmt.Errorf("no such region (closed?): %w", rdma.ErrClosed)
	}
	defer r.pins.Unpin()
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
	if r.onSignal != nil {
		r.onSignal() // after the add, as shm rings its doorbell
	}
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

package mailbox

import (
	"context"
	"errors"
	"fmt"
	"runtime"
	"time"

	"github.com/rdmactor/rdmactor/gin"
)

// Send puts a frame of kind with body into peer's inbox ring for this
// rank. body is copied into the staging window before Send returns: the
// caller may reuse it at once. Frames Send accepts arrive in order, each
// once, unless the Comm fails or the receiver closes the pair; a frame
// Send rejects was not written.
//
// A frame that finds the pair idle is put at once, with its signal (the
// latency path). Frames that come in a burst (several sends in a row, each
// within Config.BatchGap of the pair's previous put) or while another
// goroutine is putting to the same peer are staged and put together,
// several frames per put, by that goroutine or by the mailbox's writer
// goroutine: a burst then costs one put per batch, not per frame. Send returns once its frame is staged; an
// error of a later batched put is sticky and returned by the next Send.
//
// When the ring lacks room, Send waits for the receiver's credit (a gin
// signal wait: spin briefly, then block until the credit return arrives)
// for up to Config.SendTimeout, then returns a
// *RingFullError (ErrRingFull). It holds no lock while it waits: other
// goroutines may send to other peers, and to the same peer in whatever
// order their calls take effect.
//
// Errors: ErrBadKind (kind 0), gin.ErrPeerOutOfRange, ErrFrameTooLarge
// (16 + len(body) over Config.MaxFrame), *RingFullError, ErrPairClosed,
// ErrClosed, and the Put's errors (gin.ErrPeerLost once a rank is lost,
// gin.ErrClosed).
func (m *Mailbox) Send(peer int, kind Kind, body []byte) error {
	return m.send(peer, kind, body, m.cfg.SendTimeout)
}

// TrySend is Send without the wait: a full ring is a *RingFullError at
// once. The receive loop's own replies use it, so that it never blocks on
// a peer that blocks on it.
func (m *Mailbox) TrySend(peer int, kind Kind, body []byte) error {
	return m.send(peer, kind, body, 0)
}

func (m *Mailbox) send(peer int, kind Kind, body []byte, timeout time.Duration) error {
	if err := m.sendCheck(peer, kind); err != nil {
		return err
	}
	if err := m.sizeCheck(peer, body); err != nil {
		return err
	}
	return m.sendStaged(peer, kind, body, timeout)
}

// sendCheck is Send's check of kind and peer.
func (m *Mailbox) sendCheck(peer int, kind Kind) error {
	if kind == kindPad {
		return ErrBadKind
	}
	if peer < 0 || peer >= m.lay.Size {
		return fmt.Errorf("mailbox: send to rank %d of %d: %w", peer, m.lay.Size, gin.ErrPeerOutOfRange)
	}
	if err := m.comm.PeerErr(peer); err != nil { // a lost rank (gin.FailPeer): at once
		return fmt.Errorf("mailbox: send to rank %d: %w", peer, err)
	}
	// A sender that stages frames faster than the poster puts them gives
	// the poster its processor now and then: where the writer shares the
	// sender's processor (GOMAXPROCS 1) it would otherwise run only once
	// the sender blocks for credit, and the receiver would sit idle while
	// the sender fills the ring.
	if p := &m.out[peer]; p.yield.Load() && p.yield.Swap(false) {
		runtime.Gosched()
	}
	return nil
}

// sizeCheck is Send's check of the frame size.
func (m *Mailbox) sizeCheck(peer int, body []byte) error {
	if n := headerBytes + len(body); n > m.cfg.MaxFrame {
		return fmt.Errorf("mailbox: send to rank %d: frame of %d bytes (%d-byte body) over the %d-byte limit (Config.MaxFrame): %w",
			peer, n, len(body), m.cfg.MaxFrame, ErrFrameTooLarge)
	}
	return nil
}

// sendStaged copies body into the staging ring, waiting for credit up to
// timeout, and gets it put.
func (m *Mailbox) sendStaged(peer int, kind Kind, body []byte, timeout time.Duration) error {
	n := uint64(headerBytes) + uint64(len(body))
	p := &m.out[peer]
	var start time.Time
	for {
		p.mu.Lock()
		staged, free, err := m.stage(p, peer, kind, body, n)
		if staged {
			err = m.dispatch(p, peer, m.sendBegins(p))
			p.mu.Unlock()
			return err
		}
		if err == nil && start.IsZero() {
			p.sc.creditWaits++
		}
		seen := p.seenCredit
		p.mu.Unlock()
		if err != nil {
			return err
		}
		if start.IsZero() {
			start = time.Now()
		}
		if waited := time.Since(start); waited >= timeout {
			p.mu.Lock()
			p.sc.ringFull++
			p.mu.Unlock()
			return &RingFullError{Peer: peer, Need: int(align(n)), Free: int(free), Waited: waited}
		}
		if err := m.waitCredit(peer, seen, start.Add(timeout)); err != nil {
			return err
		}
	}
}

// lostCheck is how often a credit wait looks whether its receiver was
// lost.
const lostCheck = 50 * time.Millisecond

// creditPoll is how long a credit wait polls before it blocks where the
// provider's progress is driven by its waiters (gin.Comm.Progress: ofi).
// A sender short of credit has a receiver draining its ring, whose
// returns come every quarter ring; over tcp;ofi_rxm such a gap lasts a
// few milliseconds, longer than gin's polling phases, and a wait that
// blocks in the completion queue's wait object is then woken by every
// completion of the sender's own puts. Polling through the gap moves 8
// MiB actor messages over ofi tcp about 1.5x as fast, 64 MiB ones about
// 1.35x (BenchmarkLargeMessage, docs/benchmarks.md).
const creditPoll = 5 * time.Millisecond

// waitCredit waits until peer's credit signal moves past seen (a credit
// return, or the receiver closing the pair), until the deadline, or until
// Close. Where progress is driven (Mailbox.pollsCredit) it first polls for
// up to creditPoll; then it blocks in gin's signal wait, which a credit
// return wakes. It returns only errors that end the Send (a lost peer,
// the Comm closed); the caller looks at the ring and the deadline again.
func (m *Mailbox) waitCredit(peer int, seen uint64, deadline time.Time) error {
	// In slices, so that a receiver lost meanwhile (whose credit will never
	// come) ends the wait within lostCheck.
	if err := m.comm.PeerErr(peer); err != nil {
		return fmt.Errorf("mailbox: send to rank %d: %w", peer, err)
	}
	if m.pollsCredit {
		until := time.Now().Add(creditPoll)
		if deadline.Before(until) {
			until = deadline
		}
		if m.pollCredit(peer, seen, until) {
			return nil
		}
	}
	if slice := time.Now().Add(lostCheck); slice.Before(deadline) {
		deadline = slice
	}
	ctx, cancel := context.WithDeadline(m.loopCtx, deadline)
	_, err := m.x.WaitSignal(ctx, m.lay.CreditSignal(peer), seen+1, 64)
	cancel()
	if err != nil && (errors.Is(err, context.DeadlineExceeded) || errors.Is(err, context.Canceled)) {
		return nil // the deadline or Close: the caller's next look says which
	}
	if err != nil {
		return fmt.Errorf("mailbox: send to rank %d: wait for credit: %w", peer, err)
	}
	return nil
}

// pollCredit reads peer's credit signal, driving the provider between
// reads and yielding where that found nothing, until the signal moves
// past seen, the mailbox closes or a read fails (true: the caller looks
// at the ring again), or until (false).
func (m *Mailbox) pollCredit(peer int, seen uint64, until time.Time) bool {
	for i := 1; ; i++ {
		c, err := m.x.ReadSignal(m.lay.CreditSignal(peer), 64)
		if err != nil || c != seen || m.closing.Load() {
			return true
		}
		if m.comm.Progress() == 0 {
			runtime.Gosched()
		}
		if i%pollClockEvery == 0 && !time.Now().Before(until) {
			return false
		}
	}
}

// pollClockEvery is how many polls of pollCredit pass between reads of
// the clock.
const pollClockEvery = 16

// stage writes the frame (and a pad before it, if the lap ends) into the
// staging copy of the ring if there is room under the receiver's latest
// credit. It reports whether it did, else the free bytes it saw. Lock p.mu
// must be held.
func (m *Mailbox) stage(p *outPair, peer int, kind Kind, body []byte, n uint64) (staged bool, free uint64, err error) {
	if err := m.readCredit(p, peer); err != nil {
		return false, 0, err
	}
	pl := p.r.place(n)
	if !p.r.fits(pl.total) {
		return false, p.r.size - p.r.used(), nil
	}
	stage := m.win.Bytes()[m.lay.StagingOffset(peer):]
	if pl.pad >= headerBytes {
		header{len: uint32(pl.pad), kind: kindPad, seq: p.r.seq}.put(stage[pl.padAt:])
	}
	f := stage[pl.at : pl.at+n]
	copy(f[headerBytes:], body) // first: the header's checksum covers it
	header{len: uint32(n), kind: kind, seq: p.r.seq}.put(f)
	m.commitFrame(p, pl, len(body))
	return true, 0, nil
}

// readCredit checks that the pair may send and reads the receiver's
// credit into p.r. Lock p.mu must be held.
func (m *Mailbox) readCredit(p *outPair, peer int) error {
	if p.err != nil {
		return p.err
	}
	if m.closing.Load() {
		return ErrClosed
	}
	// The credit word is read on every send, not only when the ring looks
	// full, so a sender learns at once that the receiver closed the pair.
	c, err := m.x.ReadSignal(m.lay.CreditSignal(peer), 64)
	if err != nil {
		return fmt.Errorf("mailbox: send to rank %d: read credit: %w", peer, err)
	}
	p.seenCredit = c
	if c&closedBit != 0 {
		p.err = fmt.Errorf("mailbox: send to rank %d: %w", peer, ErrPairClosed)
		return p.err
	}
	if !p.r.credit(c) {
		p.err = fmt.Errorf("mailbox: send to rank %d: credit %d outside [%d, %d]: %w", peer, c, p.r.consumed, p.r.tail, ErrPairClosed)
		return p.err
	}
	return nil
}

// commitFrame records the frame (and pad) written at pl as staged. Lock
// p.mu must be held.
func (m *Mailbox) commitFrame(p *outPair, pl placement, bodyLen int) {
	if pl.at == 0 {
		// A new lap: the bytes before it go in a put of their own.
		p.lapStart, p.framesBeforeLap = p.r.tail+pl.pad, p.frames
	}
	p.r.commit(pl)
	p.frames++
	p.sc.frames++
	p.sc.bytes += uint64(bodyLen)
}

// sendBegins is the nanotime at which a send begins to write its frame,
// for dispatch's burst test; 0 where dispatch will not look at it (a
// goroutine is putting the pair's frames, or bursts are off), so that a
// burst's sends read no clock. Lock p.mu must be held.
func (m *Mailbox) sendBegins(p *outPair) int64 {
	if p.posting || m.cfg.BatchGap <= 0 {
		return 0
	}
	return nanotime()
}

// dispatch gets the staged frames put: by nobody new if a goroutine is
// putting this pair's frames already (it takes them along), by the
// mailbox's writer if the pair is in a burst, else right here. began is
// the nanotime at which the send began to write its frame: the time spent
// encoding in place is not a gap between sends. Lock p.mu must be held.
func (m *Mailbox) dispatch(p *outPair, peer int, began int64) error {
	if p.posting {
		if p.r.tail-p.taken >= m.writerLag {
			p.yield.Store(true)
		}
		return nil
	}
	p.posting = true
	if m.cfg.BatchGap > 0 {
		// A burst is burstSends sends in a row, each within BatchGap of
		// the pair's previous put: one short gap is not enough, or a fast
		// request/response exchange would now and then pay the writer's
		// wake-up.
		// A send sooner after the pair's last put than that put took is
		// part of a burst too: where a put costs a system call (ofi), a
		// sender that encodes its next message while it puts one is
		// always behind, and batching is what lets it catch up.
		if gap := began - p.lastPut; gap < int64(m.cfg.BatchGap) || gap < p.lastPutCost {
			p.burst++
		} else {
			p.burst = 0
		}
		if p.burst >= burstSends {
			m.kicks <- peer // room for every pair: one kick per posting period
			return nil
		}
	}
	err := m.postPending(p, peer)
	p.posting = false
	return err
}

// postPending puts everything staged and not yet put, a lap's part per
// put, with SignalAdd of the number of frames in it, until nothing is
// left (frames staged meanwhile by other goroutines included). Lock p.mu
// must be held; it is released around each put. The caller holds the
// posting role.
func (m *Mailbox) postPending(p *outPair, peer int) error {
	for p.taken < p.r.tail && p.err == nil {
		from, to, frames := p.taken, p.r.tail, p.frames
		if from < p.lapStart {
			to, frames = p.lapStart, p.framesBeforeLap
			p.framesBeforeLap = 0
		}
		p.taken = to
		p.frames -= frames
		p.mu.Unlock()
		t0 := nanotime()
		err := m.put(peer, from, to, frames)
		p.mu.Lock()
		p.lastPut = nanotime()
		p.lastPutCost = p.lastPut - t0
		p.sc.puts++
		if err != nil {
			// Frames that were staged cannot be taken back: the pair is
			// broken (puts fail only when the Comm does).
			p.err = err
		}
	}
	return p.err
}

// put puts ring bytes [from, to) (positions since the pair began, one lap)
// from the staging copy to the receiver's inbox, with SignalAdd(frames) on
// this rank's frame signal there (none for a pad alone). Puts of one
// context to one peer are ordered and signals are strong, so the frames'
// data, and earlier pads, are visible when the signal is. The staging
// bytes are reused only a lap later, after the receiver consumed them and
// returned credit: the put is long complete by then on any provider, so no
// Flush is needed.
func (m *Mailbox) put(peer int, from, to, frames uint64) error {
	off := from & uint64(m.lay.RingBytes-1)
	remote := gin.None
	if frames > 0 {
		remote = gin.SignalAdd(m.lay.FrameSignal(m.rank), frames)
	}
	err := m.x.Put(m.team, peer, m.win, m.lay.InboxOffset(m.rank)+int(off),
		m.win, m.lay.StagingOffset(peer)+int(off), int(to-from), remote, gin.LocalNone)
	if err != nil {
		return fmt.Errorf("mailbox: send to rank %d: put %d frames: %w", peer, frames, err)
	}
	return nil
}

// burstSends is the number of sends in a row within Config.BatchGap of
// their pair's previous put that make a burst.
const burstSends = 4

// writerLagDiv sets Mailbox.writerLag, the staged bytes not yet put past
// which a sender yields to the pair's poster: a sixteenth of the ring, well
// below the quarter ring a receiver consumes before it returns credit.
const writerLagDiv = 16

// writerSpins is how many times the writer looks for more frames of a
// pair (yielding in between) before it hands the pair back to the senders.
const writerSpins = 64

// writer puts the frames of pairs in a burst (see dispatch), taking each
// kicked pair's staged frames in batches while its senders keep staging,
// until the pair stays quiet for writerSpins looks.
func (m *Mailbox) writer() {
	for {
		var peer int
		select {
		case peer = <-m.kicks:
		case <-m.stopWriter:
			return
		}
		p := &m.out[peer]
		p.mu.Lock()
		// The pair goes back to its senders only from here, lock held,
		// with nothing staged: a frame staged later finds posting false.
		for quiet := 0; p.err == nil; {
			if p.taken < p.r.tail {
				m.postPending(p, peer)
				quiet = 0
				continue
			}
			if quiet == writerSpins {
				break
			}
			p.mu.Unlock()
			runtime.Gosched()
			quiet++
			p.mu.Lock()
		}
		p.posting = false
		p.mu.Unlock()
	}
}

// epoch is the origin of nanotime.
var epoch = time.Now()

// nanotime is a monotonic clock in nanoseconds.
func nanotime() int64 { return int64(time.Since(epoch)) }

// Flush puts every frame staged so far (a burst's frames may still be
// waiting for the writer) and returns when they are put, or when ctx ends.
// Like gin's Flush it says nothing of delivery. It returns the first
// sticky error of a pair it flushed, or ctx's error.
func (m *Mailbox) Flush(ctx context.Context) error {
	var first error
	for peer := range m.out {
		p := &m.out[peer]
		p.mu.Lock()
		for p.posting && p.err == nil {
			// The writer or another sender is putting: let it finish.
			p.mu.Unlock()
			if err := ctx.Err(); err != nil {
				return err
			}
			runtime.Gosched()
			p.mu.Lock()
		}
		if p.taken < p.r.tail && p.err == nil {
			p.posting = true
			m.postPending(p, peer)
			p.posting = false
		}
		if p.err != nil && first == nil {
			first = p.err
		}
		p.mu.Unlock()
	}
	return first
}

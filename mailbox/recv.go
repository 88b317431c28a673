package mailbox

import (
	"context"
	"errors"
	"fmt"
	"runtime"
	"time"

	"github.com/rdmactor/rdmactor/gin"
)

// Handler receives what the receive loop finds. Both functions are called
// from the receive loop's goroutine, one call at a time.
type Handler struct {
	// Frame is called for each frame, in order per sender. body aliases
	// the inbox ring and is valid only until Frame returns: decode or copy
	// it. The ring space is credited back to the sender only after Frame
	// returns, so a Frame that blocks stalls that sender (and, while it
	// blocks, every sender: there is one loop). A panic in Frame is
	// recovered, counted (Stats.HandlerPanics) and reported to Error; the
	// loop goes on with the next frame. Frame may leave the frame in the
	// ring for later and hold its pair instead (Mailbox.Hold).
	Frame func(from int, kind Kind, body []byte)
	// Error, if not nil, is told about a corrupt frame (*FrameError: that
	// pair is closed, the others go on), a panic in Frame, and the error
	// that ends the loop (gin.ErrPeerLost once a rank is lost: the Comm
	// can no longer be read).
	Error func(err error)
	// Warm, if not nil, is called while the loop stays awake with no
	// frames for Config.WarmEvery or longer, once per WarmEvery (never
	// while frames come more often: their code is warm). It should run,
	// without effects, the code the next frames will (decode a copy of a
	// recent one, say), and return within a few µs, since a frame that
	// comes meanwhile waits for it. A panic in Warm is recovered, counted
	// (Stats.HandlerPanics) and reported to Error.
	Warm func()
}

// batch bounds the frames taken from one sender before the loop looks at
// the next, so one busy sender cannot starve the others.
const batch = 64

// Start starts the receive loop with h. Frames that arrived before Start
// wait in the rings. It returns ErrClosed after Close and an error if
// called twice or with a nil h.Frame.
func (m *Mailbox) Start(h Handler) error {
	if h.Frame == nil {
		return fmt.Errorf("mailbox: start: nil Handler.Frame: %w", gin.ErrBadArgument)
	}
	err := errors.New("mailbox: start: already started")
	m.startOnce.Do(func() {
		if m.closing.Load() {
			err = ErrClosed
			return
		}
		m.started.Store(true)
		err = nil
		go m.run(h)
	})
	return err
}

// run is the receive loop: it reads every sender's frame signal, hands new
// frames to h in order and returns credit; when nothing came it waits in
// gin.Context.WaitSignals for any sender's next frame (spin briefly, then
// block until a put arrives), so an idle rank costs no CPU and a frame
// that finds the loop blocked wakes it at once.
func (m *Mailbox) run(h Handler) {
	defer close(m.done)
	set := make([]gin.SignalWait, 0, len(m.in))
	linger := int64(m.cfg.Linger)
	if m.oversubscribed || linger < 0 {
		linger = 0
	}
	// lingering: the quiet before the last frames was shorter than
	// Linger (see Config.Linger); idleSince: when the loop last found
	// nothing, 0 while frames come.
	lingering, idleSince, awake := false, int64(0), 0
	warmEvery, warmed := int64(m.cfg.WarmEvery), int64(0)
	if h.Warm == nil {
		warmEvery = -1
	}
	yieldEvery := awakeYieldEvery
	if runtime.GOMAXPROCS(0) == 1 {
		yieldEvery = 1
	}
	for !m.closing.Load() {
		got := 0
		for s := range m.in {
			n, err := m.poll(s, h)
			if err != nil {
				m.fail(err, h)
				return
			}
			got += n
		}
		if got > 0 {
			m.awakeUntil.Store(0) // the answer Expect announced, most likely
			if idleSince != 0 {
				lingering, idleSince = nanotime()-idleSince < linger, 0
			}
			// Let the actors those frames went to run on this processor
			// now rather than when another one is woken for them.
			runtime.Gosched()
			continue
		}
		now := nanotime()
		if idleSince == 0 {
			idleSince = now
		}
		if now < m.awakeUntil.Load() || (lingering && now-idleSince < linger) {
			// An answer is due (Expect), or traffic is likely to recur
			// (Linger): stay awake for it, landing what a manual-progress
			// provider holds. A Gosched only now and then: each one puts
			// the loop on the global run queue and wakes another thread
			// to take it, which on a host with few cores costs more than
			// the poll it saves. With one processor there is no thread
			// to wake, and a Gosched after each poll lets the goroutines
			// sharing it (a sender and its writer) run at once.
			if m.comm.Progress() == 0 {
				if awake++; awake%yieldEvery == 0 {
					runtime.Gosched()
				}
			}
			if warmEvery >= 0 && now-idleSince >= warmEvery && now-warmed >= warmEvery {
				warmed = now
				m.warm(h)
			}
			continue
		}
		set = set[:0]
		for s := range m.in {
			if q := &m.in[s]; !q.closed && m.comm.PeerErr(s) == nil {
				set = append(set, gin.SignalWait{Signal: m.lay.FrameSignal(s), Least: m.waitLeast(s, q)})
			}
		}
		if len(set) == 0 { // every pair closed: only Close is left to wait for
			<-m.loopCtx.Done()
			return
		}
		if err := m.waitFrames(set); err != nil {
			if m.closing.Load() {
				return
			}
			m.fail(err, h)
			return
		}
	}
}

// awakeYieldEvery is how many polls of an awake receive loop (Expect,
// Config.Linger) pass between yields to the goroutines of its processor.
const awakeYieldEvery = 256

// waitFrames blocks until a member of set is ready, Close, or an Expect
// call, which cancels the wait so that the loop stays awake for the
// answer. It returns the errors that end the loop.
func (m *Mailbox) waitFrames(set []gin.SignalWait) error {
	// One cancellable context serves every wait until an Expect cancels
	// it: a context per wait would cost an allocation per message.
	if m.waitCtx == nil || m.waitCtx.Err() != nil {
		ctx, cancel := context.WithCancel(m.loopCtx)
		m.waitCtx = ctx
		m.waitCancel.Store(&cancel)
	}
	if nanotime() < m.awakeUntil.Load() || m.resumesPending() { // an Expect or Resume that found the old context
		return nil
	}
	m.rc.waits.Add(1)
	_, _, err := m.x.WaitSignals(m.waitCtx, set, 64)
	if errors.Is(err, context.Canceled) {
		return nil
	}
	return err
}

// Expect tells the receive loop that an answer to this rank is due soon
// (package actor calls it after sending a request): until one frame
// arrives, or for d at most, the loop stays awake (it polls and yields
// instead of blocking), and a loop that is blocked now is woken, while the
// request travels. The answer then finds it running, so a round trip after
// an idle period pays the wake-up of the peer only, not a second one here.
// It does nothing on an oversubscribed host (gin.Comm.Oversubscribed),
// where the awake loop would take the processor the peer needs. It costs
// two atomic operations when the loop is awake.
func (m *Mailbox) Expect(d time.Duration) {
	if m.oversubscribed {
		return
	}
	until := nanotime() + int64(d)
	if until > m.awakeUntil.Load() {
		m.awakeUntil.Store(until)
	}
	if c := m.waitCancel.Load(); c != nil {
		(*c)()
	}
}

// fail ends the loop with err; a closed Comm under a closing mailbox is not
// an error.
func (m *Mailbox) fail(err error, h Handler) {
	if errors.Is(err, gin.ErrClosed) && m.closing.Load() {
		return
	}
	err = fmt.Errorf("mailbox: receive loop of rank %d stopped: %w", m.rank, err)
	m.loopErr.Store(&err)
	if h.Error != nil {
		h.Error(err)
	}
}

// poll hands the new frames from sender s to h, at most batch of them, and
// returns credit when enough was consumed. It returns the number of frames
// handled, or the error of the signal read (the Comm failed).
func (m *Mailbox) poll(s int, h Handler) (int, error) {
	q := &m.in[s]
	if q.closed || m.held(s) {
		return 0, nil
	}
	v, err := m.x.ReadSignal(m.lay.FrameSignal(s), 64)
	if err != nil {
		return 0, err
	}
	n := 0
	for q.r.frames < v && n < batch {
		if !m.next(s, q, h) {
			return n, nil
		}
		n++
	}
	if q.r.unreturned >= m.creditEvery {
		m.returnCredit(s, q, h)
	}
	return n, nil
}

// next hands the frame at q's head to h, skipping a pad before it. It
// reports false when the ring holds no valid frame there (the pair is then
// closed) or when h held the frame (Hold).
func (m *Mailbox) next(s int, q *inPair, h Handler) bool {
	off := m.lay.InboxOffset(s)
	ring := m.win.Bytes()[off : off+m.lay.RingBytes]
	for {
		room := q.r.room()
		if room < headerBytes {
			q.r.skip(room) // a pad too short for a header
			continue
		}
		at := q.r.head & q.r.mask
		hd, err := parseFrame(ring[at:], q.r.check)
		if err != nil {
			m.corrupt(s, q, err.Error(), h)
			return false
		}
		if hd.kind == kindPad {
			q.r.skip(room)
			continue
		}
		// Counted before the handler runs, so Stats read after a handler
		// has seen a frame includes it; a held frame is taken back.
		m.rc.frames.Add(1)
		m.rc.bytes.Add(uint64(hd.len) - headerBytes)
		m.deliver(s, hd.kind, ring[at+headerBytes:at+uint64(hd.len)], h)
		if m.tookHold(s) { // the frame stays at the head until Resume (pause.go)
			m.rc.frames.Add(^uint64(0))
			m.rc.bytes.Add(-(uint64(hd.len) - headerBytes))
			return false
		}
		q.r.consume(uint64(hd.len))
		return true
	}
}

// deliver calls h.Frame, turning a panic into a reported error.
func (m *Mailbox) deliver(s int, kind Kind, body []byte, h Handler) {
	defer func() {
		if p := recover(); p != nil {
			m.rc.handlerPanics.Add(1)
			if h.Error != nil {
				h.Error(fmt.Errorf("mailbox: handler panicked on a frame of kind %d from rank %d: %v", kind, s, p))
			}
		}
	}()
	h.Frame(s, kind, body)
}

// warm calls h.Warm, turning a panic into a reported error.
func (m *Mailbox) warm(h Handler) {
	defer func() {
		if p := recover(); p != nil {
			m.rc.handlerPanics.Add(1)
			if h.Error != nil {
				h.Error(fmt.Errorf("mailbox: handler panicked warming: %v", p))
			}
		}
	}()
	m.rc.warms.Add(1)
	h.Warm()
}

// returnCredit adds the bytes consumed since the last return to the
// sender's credit signal. A failed signal keeps the count for the next try.
func (m *Mailbox) returnCredit(s int, q *inPair, h Handler) {
	if err := m.x.Signal(m.team, s, gin.SignalAdd(m.lay.CreditSignal(m.rank), q.r.unreturned)); err != nil {
		if h.Error != nil {
			h.Error(fmt.Errorf("mailbox: return credit to rank %d: %w", s, err))
		}
		return
	}
	q.r.unreturned = 0
	m.rc.creditsReturned.Add(1)
}

// corrupt closes the pair with s: nothing more is read from its ring, and
// s learns it from bit 63 of its credit signal.
func (m *Mailbox) corrupt(s int, q *inPair, reason string, h Handler) {
	q.closed = true
	m.rc.corruptFrames.Add(1)
	err := &FrameError{From: s, Pos: q.r.head, Seq: q.r.seq, Reason: reason}
	if serr := m.x.Signal(m.team, s, gin.SignalAdd(m.lay.CreditSignal(m.rank), closedBit)); serr != nil && h.Error != nil {
		h.Error(fmt.Errorf("mailbox: tell rank %d its pair is closed: %w", s, serr))
	}
	if h.Error != nil {
		h.Error(err)
	}
}

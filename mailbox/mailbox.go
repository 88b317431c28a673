package mailbox

import (
	"bytes"
	"context"
	"encoding/binary"
	"errors"
	"fmt"
	"sync"
	"sync/atomic"
	"time"

	"github.com/rdmactor/rdmactor/gin"
)

// Mailbox is one rank's end of the remote mailboxes of a Comm: an inbox
// ring per sender that peers put frames into, the receive loop that hands
// those frames to a Handler in order, and the send side that puts frames
// into the peers' inboxes under credit. See the package documentation for
// the protocol.
//
// A Mailbox is safe for concurrent use: Send may be called from any number
// of goroutines; frames one goroutine sends to one peer arrive in the
// order it sent them.
type Mailbox struct {
	comm *gin.Comm
	x    *gin.Context
	team gin.Team
	cfg  Config
	lay  Layout
	win  *gin.Window
	rank int

	creditEvery uint64 // consumed bytes that trigger a credit return
	writerLag   uint64 // staged bytes not yet put past which a sender yields (writerLagDiv)

	out []outPair // by receiver rank
	in  []inPair  // by sender rank; only the receive loop touches them
	rc  recvCounters
	// pause holds pairs whose head frame the Handler cannot take yet.
	pause pauseState

	kicks      chan int // pairs handed to the writer
	stopWriter chan struct{}
	// loopCtx ends the receive loop's wait at Close.
	loopCtx  context.Context
	stopLoop context.CancelFunc
	// awakeUntil (nanotime) keeps the loop from blocking while an answer
	// is due; waitCancel ends the loop's current block (Expect).
	awakeUntil     atomic.Int64
	waitCancel     atomic.Pointer[context.CancelFunc]
	waitCtx        context.Context // the loop's; cancelled by Expect or Close
	oversubscribed bool
	// pollsCredit: credit waits poll before they block (creditPoll), where
	// the provider's progress is driven and the host has a core per rank.
	pollsCredit bool

	startOnce sync.Once
	started   atomic.Bool
	closing   atomic.Bool
	done      chan struct{} // closed when the receive loop has returned
	loopErr   atomic.Pointer[error]
}

// outPair is the send side of one (this rank, receiver) pair. Frames are
// staged at r.tail; [taken, r.tail) is staged and not yet handed to a put.
type outPair struct {
	mu              sync.Mutex // guards everything below; never held while waiting or putting
	r               sendRing
	taken           uint64      // ring position up to which frames were handed to puts
	frames          uint64      // frames staged after taken
	lapStart        uint64      // position where the newest lap began
	framesBeforeLap uint64      // of frames, those before lapStart
	posting         bool        // a goroutine (a sender or the writer) puts this pair's frames
	yield           atomic.Bool // read without the lock: frames past writerLag wait for the poster, so the next send yields first
	lastPut         int64       // nanotime when the last put of the pair ended
	lastPutCost     int64       // how long that put took, ns
	burst           int         // sends in a row within Config.BatchGap of lastPut
	seenCredit      uint64      // the credit signal as the last stage read it
	err             error       // sticky: pair closed by the receiver, bad credit, failed put
	sc              sendCounters
	_               [64]byte // keep pairs used by different goroutines off one cache line
}

// inPair is the receive side of one (this rank, sender) pair.
type inPair struct {
	r      recvRing
	closed bool // corrupt frame seen: nothing more is read
}

// New registers this rank's mailbox window over comm and returns the
// mailbox, not yet receiving (see Start). Collective: every rank calls it
// with an equal cfg, in the same order as its other collectives; ranks
// whose RingBytes, MaxFrame or SignalBase differ all fail with
// gin.ErrBadArgument. It resets the signals the mailbox uses
// (Config.SignalBase, 2 × Size of them), so nothing else may use them.
//
// Errors: a bad Config or too few signals (gin.ErrBadArgument,
// gin.ErrUnknownSignal, gin.ErrUnknownContext); gin.ErrNotSupported when
// the provider lacks SignalAdd values other than 1 (credit is a SignalAdd
// of consumed bytes); RegisterWindow's errors.
func New(ctx context.Context, comm *gin.Comm, cfg Config) (*Mailbox, error) {
	if err := cfg.setDefaults(comm); err != nil {
		return nil, err
	}
	if !comm.Capabilities().SignalAdd {
		return nil, fmt.Errorf("mailbox: provider %s lacks SignalAdd, which credit returns use: %w", comm.Transport(), gin.ErrNotSupported)
	}
	x, err := comm.Context(cfg.Context)
	if err != nil {
		return nil, fmt.Errorf("mailbox: %w", err)
	}
	n := comm.Size()
	m := &Mailbox{
		comm: comm, x: x, team: comm.World(), cfg: cfg, rank: comm.Rank(), oversubscribed: comm.Oversubscribed(),
		lay:         Layout{Size: n, RingBytes: cfg.RingBytes, SignalBase: cfg.SignalBase},
		creditEvery: uint64(cfg.RingBytes / 4),
		writerLag:   uint64(cfg.RingBytes / writerLagDiv),
		pollsCredit: !comm.Capabilities().Inline && !comm.Oversubscribed(),
		out:         make([]outPair, n),
		in:          make([]inPair, n),
		done:        make(chan struct{}),
		kicks:       make(chan int, n),
		stopWriter:  make(chan struct{}),
	}
	m.pause.init(n)
	// Reset before the window's collective: no peer can send to this rank
	// until every rank registered it, so nothing races with the reset.
	for s := range 2 * n {
		if err := x.ResetSignal(cfg.SignalBase + gin.Signal(s)); err != nil {
			return nil, fmt.Errorf("mailbox: reset signal %d: %w", cfg.SignalBase+gin.Signal(s), err)
		}
	}
	if err := sameConfig(ctx, comm, cfg); err != nil {
		return nil, err
	}
	if m.win, err = comm.RegisterWindow(ctx, WindowBytes(n, cfg.RingBytes), 0); err != nil {
		return nil, fmt.Errorf("mailbox: %w", err)
	}
	m.loopCtx, m.stopLoop = context.WithCancel(context.Background())
	for r := range m.out {
		m.out[r].r = newSendRing(uint64(cfg.RingBytes))
		m.out[r].lastPut = -int64(time.Hour)
		m.in[r].r = newRecvRing(uint64(cfg.RingBytes), uint64(cfg.MaxFrame))
	}
	go m.writer()
	return m, nil
}

// Rank is this rank.
func (m *Mailbox) Rank() int { return m.rank }

// Size is the number of ranks.
func (m *Mailbox) Size() int { return m.lay.Size }

// Config is the mailbox's configuration, defaults filled in.
func (m *Mailbox) Config() Config { return m.cfg }

// Layout says where the mailbox keeps its rings and signals.
func (m *Mailbox) Layout() Layout { return m.lay }

// Window is the mailbox's registered window (layout: Layout). It is
// exposed for tests and tools; a put into it other than by Send is a
// corrupt frame to the receiver unless it follows the frame format.
func (m *Mailbox) Window() *gin.Window { return m.win }

// Stats returns the mailbox's counters.
func (m *Mailbox) Stats() Stats {
	var s Stats
	for i := range m.out {
		p := &m.out[i]
		p.mu.Lock()
		s.FramesSent += p.sc.frames
		s.BytesSent += p.sc.bytes
		s.Puts += p.sc.puts
		s.CreditWaits += p.sc.creditWaits
		s.RingFull += p.sc.ringFull
		p.mu.Unlock()
	}
	s.FramesReceived = m.rc.frames.Load()
	s.BytesReceived = m.rc.bytes.Load()
	s.CreditsReturned = m.rc.creditsReturned.Load()
	s.CorruptFrames = m.rc.corruptFrames.Load()
	s.HandlerPanics = m.rc.handlerPanics.Load()
	s.Waits = m.rc.waits.Load()
	s.Holds = m.rc.holds.Load()
	s.Warms = m.rc.warms.Load()
	return s
}

// Err is the error that ended the receive loop (a lost peer, the Comm
// closed under it), or nil while it runs or after a clean Close.
func (m *Mailbox) Err() error {
	if p := m.loopErr.Load(); p != nil {
		return *p
	}
	return nil
}

// Done is closed when the receive loop has returned (after Close, or when
// the Comm failed: see Err). It is never closed if Start was not called.
func (m *Mailbox) Done() <-chan struct{} { return m.done }

// closeWait bounds how long Close waits for a receive loop that is inside
// a Handler call.
const closeWait = 5 * time.Second

// Close puts the frames still staged (Flush, for up to 5 s), then stops
// the receive loop (after the frame it is handling, if any) and the
// writer, and makes later Sends fail with ErrClosed. Frames still in the
// inbox are not delivered. It does not unregister the window or close the Comm: peers
// that still send write into memory nobody reads, and their rings fill.
// It returns an error if the loop is still inside a Handler call after 5 s;
// later calls return nil.
func (m *Mailbox) Close() error {
	if m.closing.Load() {
		return nil
	}
	// Staged frames go out first (a burst's tail, a goodbye): bounded, as
	// a put waits only for SQ room.
	ctx, cancel := context.WithTimeout(context.Background(), closeWait)
	m.Flush(ctx)
	cancel()
	if !m.closing.CompareAndSwap(false, true) {
		return nil
	}
	close(m.stopWriter)
	m.stopLoop()
	if !m.started.Load() {
		return nil
	}
	select {
	case <-m.done:
		return nil
	case <-time.After(closeWait):
		return errors.New("mailbox: close: the receive loop is still in a handler after 5s")
	}
}

// sameConfig checks, with a control-plane all-gather, that every rank
// passes the Config fields both ends of a pair must agree on: ring size,
// frame limit and signal base. Collective.
func sameConfig(ctx context.Context, comm *gin.Comm, cfg Config) error {
	mine := binary.LittleEndian.AppendUint64(nil, uint64(cfg.RingBytes))
	mine = binary.LittleEndian.AppendUint64(mine, uint64(cfg.MaxFrame))
	mine = binary.LittleEndian.AppendUint64(mine, uint64(cfg.SignalBase))
	all, err := comm.AllGather(ctx, mine)
	if err != nil {
		return fmt.Errorf("mailbox: compare configs: %w", err)
	}
	for r, theirs := range all {
		if !bytes.Equal(theirs, mine) {
			return fmt.Errorf("mailbox: rank %d has another RingBytes, MaxFrame or SignalBase than rank %d (%d, %d, %d): %w",
				r, comm.Rank(), cfg.RingBytes, cfg.MaxFrame, cfg.SignalBase, gin.ErrBadArgument)
		}
	}
	return nil
}

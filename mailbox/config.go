package mailbox

import (
	"fmt"
	"time"

	"github.com/rdmactor/rdmactor/gin"
)

// Defaults of Config.
const (
	// DefaultBatchGap is well below a request/response round trip
	// (about 1 µs between goroutine ranks, 2 µs between processes on one
	// host), so that alternating traffic takes the direct path, and above
	// the time a tight send loop takes per message (0.1 to 0.3 µs).
	DefaultBatchGap    = 500 * time.Nanosecond
	DefaultRingBytes   = 1 << 20          // per (receiver, sender) pair
	DefaultSendTimeout = 10 * time.Second // credit wait of a full ring
	// DefaultLinger covers request/response traffic that pauses for up to
	// a few hundred ms between exchanges (a client polling every 100 ms).
	DefaultLinger = 200 * time.Millisecond
	// DefaultWarmEvery is under the millisecond in which, on a VM whose
	// physical cores other guests share, a code path left alone goes cold
	// (one msgpack encode and decode: 0.9 µs hot, 10 µs after 1 ms of
	// spinning on something else, 40 µs after 10 ms).
	DefaultWarmEvery = 500 * time.Microsecond
	MinRingBytes     = 4 << 10
	MaxRingBytes     = 1 << 30
)

// Config sets a Mailbox's memory and batching. The receive loop and the
// credit waits are gin signal waits, paced by the Comm's gin.Config.Idle. New is collective: every rank
// passes an equal Config (the window size check of gin.RegisterWindow
// catches unequal RingBytes; the other fields are not checked).
type Config struct {
	// RingBytes is the size of each (receiver, sender) ring: a power of
	// two from MinRingBytes to MaxRingBytes; default DefaultRingBytes.
	// Each rank registers 2 × Size × RingBytes (inbox and staging).
	RingBytes int
	// MaxFrame is the largest frame, header (16 bytes) included, that Send
	// accepts; default and upper limit RingBytes/4, which keeps a sender
	// that waits for credit from ever waiting for credit the receiver
	// holds back (see doc.go, Credit).
	MaxFrame int
	// SignalBase is the first of the 2 × Size signals the mailbox uses:
	// SignalBase+s counts frames from rank s, SignalBase+Size+r carries
	// credit from rank r. The Comm needs SignalBase + 2×Size signals, and
	// nothing else may use them.
	SignalBase gin.Signal
	// Context is the gin context the mailbox puts on; default 0. Frames of
	// one pair are ordered because they share it.
	Context int
	// SendTimeout bounds how long Send waits for credit on a full ring
	// before it returns a *RingFullError; default DefaultSendTimeout.
	SendTimeout time.Duration
	// BatchGap: frames sent in a row, each begun (before its body is
	// encoded in place) within BatchGap of its pair's previous put, are a
	// burst, and the mailbox's writer goroutine puts the burst's frames in
	// batches (see Send); a sender ahead of the writer by a sixteenth of
	// the ring yields to it. Default DefaultBatchGap;
	// negative: never hand frames to the writer (every Send puts, unless
	// another goroutine is putting to the same peer).
	BatchGap time.Duration
	// Linger: when the receive loop's last block was ended by a frame
	// within Linger (traffic that recurs at shorter intervals), the loop
	// stays awake for Linger after its last frame, polling and yielding,
	// instead of blocking: the next frame then finds it running and does
	// not pay a blocked thread's wake-up (tens to hundreds of µs; the
	// round trip after a pause in examples/pingpong shows it). A loop
	// whose block outlasted Linger blocks at once next time, so an idle
	// rank costs no CPU after at most one Linger. The cost: up to a core
	// per rank while traffic recurs at intervals below Linger. Default
	// DefaultLinger; negative: never. Off on an oversubscribed host
	// (gin.Comm.Oversubscribed), where the awake loop would take the
	// processor a peer needs.
	Linger time.Duration
	// WarmEvery: while the receive loop stays awake with no frames
	// (Linger, or an answer Expect announced) for WarmEvery or longer, it
	// calls Handler.Warm once per WarmEvery, so that the code and data the
	// next frame needs are still in the processor's caches when it comes;
	// a cold path costs tens of µs per message on a host whose caches
	// other work (other guests of a VM host) evicts while the rank waits.
	// Default DefaultWarmEvery; negative: never. It costs no CPU of its
	// own: the awake loop spins anyway.
	WarmEvery time.Duration
}

func (c *Config) setDefaults(comm *gin.Comm) error {
	if c.RingBytes == 0 {
		c.RingBytes = DefaultRingBytes
	}
	if r := c.RingBytes; r < MinRingBytes || r > MaxRingBytes || r&(r-1) != 0 {
		return fmt.Errorf("mailbox config: ring of %d bytes: want a power of two from %d to %d: %w", r, MinRingBytes, MaxRingBytes, gin.ErrBadArgument)
	}
	if c.MaxFrame == 0 {
		c.MaxFrame = c.RingBytes / 4
	}
	if c.MaxFrame < headerBytes || c.MaxFrame > c.RingBytes/4 {
		return fmt.Errorf("mailbox config: max frame of %d bytes: want %d to %d (RingBytes/4): %w", c.MaxFrame, headerBytes, c.RingBytes/4, gin.ErrBadArgument)
	}
	if c.SendTimeout == 0 {
		c.SendTimeout = DefaultSendTimeout
	}
	if c.SendTimeout < 0 {
		return fmt.Errorf("mailbox config: negative send timeout: %w", gin.ErrBadArgument)
	}
	if c.BatchGap == 0 {
		c.BatchGap = DefaultBatchGap
	}
	if c.Linger == 0 {
		c.Linger = DefaultLinger
	}
	if c.WarmEvery == 0 {
		c.WarmEvery = DefaultWarmEvery
	}
	if need := int(c.SignalBase) + 2*comm.Size(); need > comm.Signals() {
		return fmt.Errorf("mailbox config: signals %d..%d needed, the comm has %d (gin.Config.Signals): %w",
			c.SignalBase, need-1, comm.Signals(), gin.ErrUnknownSignal)
	}
	if c.Context < 0 || c.Context >= comm.ContextCount() {
		return fmt.Errorf("mailbox config: context %d of %d: %w", c.Context, comm.ContextCount(), gin.ErrUnknownContext)
	}
	return nil
}

// SignalsNeeded is the number of gin signals a mailbox over a world of
// size ranks needs from Config.SignalBase on: 2 × size.
func SignalsNeeded(size int) int { return 2 * size }

// WindowBytes is the size of the window New registers on every rank for a
// world of size ranks and rings of ringBytes: 2 × size × ringBytes.
func WindowBytes(size, ringBytes int) int { return 2 * size * ringBytes }

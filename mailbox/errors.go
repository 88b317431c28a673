package mailbox

import (
	"errors"
	"fmt"
	"time"
)

var (
	// ErrRingFull is matched by the *RingFullError Send returns when the
	// receiver returned no credit within Config.SendTimeout. Nothing of the
	// frame was written; earlier frames stay queued and will arrive.
	ErrRingFull = errors.New("mailbox ring full")
	// ErrFrameTooLarge is returned by Send for a frame (16-byte header
	// plus body) over Config.MaxFrame. Nothing is written.
	ErrFrameTooLarge = errors.New("frame too large for the mailbox ring")
	// ErrCorruptFrame is matched by the *FrameError the receive loop
	// reports (Handler.Error) when a ring holds bytes that are not a valid
	// frame at the place the next frame must be.
	ErrCorruptFrame = errors.New("corrupt mailbox frame")
	// ErrPairClosed is returned by Send to a receiver that closed this
	// sender's ring after finding a corrupt frame in it.
	ErrPairClosed = errors.New("mailbox pair closed by the receiver")
	// ErrClosed is returned by Send after Close.
	ErrClosed = errors.New("mailbox closed")
	// ErrBadKind is returned by Send for Kind 0, which the mailbox keeps
	// for its pad frames.
	ErrBadKind = errors.New("mailbox frame kind 0 is reserved")
)

// RingFullError is Send's error when the ring to Peer stayed full: the
// frame needed Need bytes and Free were free after waiting Waited. It
// matches ErrRingFull.
type RingFullError struct {
	Peer       int
	Need, Free int
	Waited     time.Duration
}

// Error describes the wait: peer, bytes needed and free, time waited.
func (e *RingFullError) Error() string {
	return fmt.Sprintf("mailbox: ring to rank %d full: frame needs %d bytes, %d free after waiting %v for credit",
		e.Peer, e.Need, e.Free, e.Waited.Round(time.Millisecond))
}

// Is reports whether target is ErrRingFull.
func (e *RingFullError) Is(target error) bool { return target == ErrRingFull }

// FrameError describes a corrupt frame in the ring from rank From: its
// byte position Pos since the pair began (ring offset Pos mod RingBytes),
// the frame number the receiver expected, and what was wrong. The receive
// loop closes that pair: it reads nothing more from it, and the sender's
// next Send returns ErrPairClosed. It matches ErrCorruptFrame.
type FrameError struct {
	From   int
	Pos    uint64
	Seq    uint32
	Reason string
}

// Error names the sender, position, frame number and reason.
func (e *FrameError) Error() string {
	return fmt.Sprintf("mailbox: corrupt frame %d from rank %d at byte %d: %s; pair closed", e.Seq, e.From, e.Pos, e.Reason)
}

// Is reports whether target is ErrCorruptFrame.
func (e *FrameError) Is(target error) bool { return target == ErrCorruptFrame }

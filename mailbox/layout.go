package mailbox

import "github.com/rdmactor/rdmactor/gin"

// Layout says where a mailbox keeps what; it is the same on every rank.
//
// The window (2 × Size × RingBytes bytes on every rank):
//
//	offset 0                                  Size×RingBytes                        2×Size×RingBytes
//	+-----------+-----------+-----+-----------+-----------+-----------+-----+-----------+
//	| inbox     | inbox     | ... | inbox     | staging   | staging   | ... | staging   |
//	| from 0    | from 1    |     | from N-1  | to 0      | to 1      |     | to N-1    |
//	+-----------+-----------+-----+-----------+-----------+-----------+-----+-----------+
//	  peers put frames here                     this rank encodes here, at the offset the
//	                                            frame will have in the receiver's inbox
//
// Memory: nothing writes a ring before its pair carries a frame (New and
// Start touch no ring), so on shm, whose windows are shared-memory files, a
// rank's window commits pages only for the inbox rings of the peers that
// sent to it and the staging rings of the peers it sent to: at most
// 2 × RingBytes per peer it exchanges messages with
// (TestRingsCommitOnFirstUse). The address space it maps, its own window
// and every peer's, is N × 2 × N × RingBytes whatever the traffic; on a
// provider that pins registered memory (verbs without on-demand paging)
// the whole window is pinned. See docs/scaling.md.
//
// Signals, from SignalBase: Size frame signals (SignalBase+s counts the
// frames rank s put into this rank's inbox: each put adds the number of
// frames it carries with SignalAdd), then Size credit signals
// (SignalBase+Size+r sums the bytes rank r consumed from this rank's
// frames, SignalAdd; bit 63 set means r closed the pair). Only SignalAdd
// touches them: gin forbids mixing it with SignalInc on one signal.
type Layout struct {
	Size       int        // ranks
	RingBytes  int        // bytes per (receiver, sender) ring
	SignalBase gin.Signal // first signal used
}

// InboxOffset is the window offset of the ring that sender writes into.
func (l Layout) InboxOffset(sender int) int { return sender * l.RingBytes }

// StagingOffset is the window offset of this rank's staging copy of the
// ring it writes in receiver's inbox.
func (l Layout) StagingOffset(receiver int) int { return (l.Size + receiver) * l.RingBytes }

// FrameSignal is the signal, at the receiver, that counts sender's frames.
func (l Layout) FrameSignal(sender int) gin.Signal { return l.SignalBase + gin.Signal(sender) }

// CreditSignal is the signal, at the sender, that receiver returns credit
// on.
func (l Layout) CreditSignal(receiver int) gin.Signal {
	return l.SignalBase + gin.Signal(l.Size+receiver)
}

// closedBit, added to a credit signal, tells the sender that the receiver
// closed the pair. Credit counts bytes and never reaches 2^63.
const closedBit = 1 << 63

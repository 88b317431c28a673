package actor

import (
	"errors"
	"fmt"
)

// UndeliverableEvent is published on a node's EventStream (and logged,
// throttled) when a message could not cross to or from another rank. On
// the sending rank it also becomes a DeadLetterEvent, so a request
// waiting for an answer fails at once with ErrDeadLetter instead of timing
// out.
//
// Where it is published:
//   - on the sending rank, for a send that failed there (Err:
//     ErrUnregistered, mailbox.ErrFrameTooLarge, mailbox.ErrRingFull after
//     the mailbox's SendTimeout, ErrRankGone, gin.ErrPeerLost, ...);
//   - on the receiving rank, for a message it could not decode (Err:
//     ErrUnregistered or ErrUndecodable; Message is nil), and then again
//     on the sending rank when the receiver's notice arrives (Err: a
//     *RemoteError naming the receiving rank and its reason).
type UndeliverableEvent struct {
	Target   *PID   // the PID the message was for
	Sender   *PID   // its sender, nil if none
	Message  any    // the message, nil where it could not be decoded
	TypeName string // the message's wire type name, "" if unknown
	Err      error  // why
}

var (
	// ErrUnregistered is the reason for a message whose type was neither
	// registered (RegisterMessage) nor a protobuf message, at the sender,
	// or whose type name the receiving rank does not know.
	ErrUnregistered = errors.New("message type not registered")
	// ErrUndecodable is the reason for a frame the receiving rank could
	// not decode (truncated header, payload that is not the named type).
	ErrUndecodable = errors.New("message could not be decoded")
	// ErrRankGone is the reason for a send to a rank that left (closed
	// its node) or was lost, or one this rank can no longer reach because
	// its Comm failed.
	ErrRankGone = errors.New("rank gone")
	// ErrNotRemotable is the reason for a system message other than
	// Watch, Unwatch, Terminated and Stop sent to another rank.
	ErrNotRemotable = errors.New("system message does not cross ranks")
)

// RemoteError is a failure another rank reported for a message this rank
// sent (its notice): Rank could not deliver it, for Reason.
type RemoteError struct {
	Rank   int
	Reason string
}

// Error names the rank and its reason.
func (e *RemoteError) Error() string {
	return fmt.Sprintf("rank %d could not deliver the message: %s", e.Rank, e.Reason)
}

package rdma

import (
	"errors"
	"fmt"
)

// ErrNotSupported is returned when a provider lacks a feature the caller
// asked for (a build without the provider, an operation its hardware cannot
// do). Typed errors such as *UnsupportedError match it with errors.Is.
var ErrNotSupported = errors.New("not supported")

// ErrOutOfBounds is returned by Post when a WQE's offset+length falls
// outside the named local or remote region. Nothing is written.
var ErrOutOfBounds = errors.New("offset out of bounds")

// ErrMixedSignalOps is returned by Post when a WQE's signal mode (SignalInc
// vs SignalAdd) differs from the mode the target signal has seen since its
// last reset (rule from ncclGin_SignalInc, nccl_device/gin.h, NCCL 2.28:
// "may not be mixed with other signal-modifying operations without an
// intervening signal reset").
var ErrMixedSignalOps = errors.New("SignalInc mixed with SignalAdd on one signal between resets")

// ErrClosed is returned by every call on a provider, region or QP after Close.
var ErrClosed = errors.New("closed")

// ErrPeerLost is returned when the peer a QP or region belongs to died or
// left. Typed as *PeerLostError where the rank is known.
var ErrPeerLost = errors.New("peer lost")

// UnsupportedError names what is missing and where; it matches ErrNotSupported.
type UnsupportedError struct {
	Provider string // provider name, e.g. "shm"
	Feature  string // what was asked for, e.g. "strong signals"
}

func (e *UnsupportedError) Error() string {
	return fmt.Sprintf("%s: %s: %v", e.Provider, e.Feature, ErrNotSupported)
}

// Is reports whether target is ErrNotSupported.
func (e *UnsupportedError) Is(target error) bool { return target == ErrNotSupported }

// PeerLostError names the lost rank and why it is considered lost; it
// matches ErrPeerLost.
type PeerLostError struct {
	Rank   int    // world rank of the lost peer
	Reason string // e.g. "control connection closed"
}

func (e *PeerLostError) Error() string {
	return fmt.Sprintf("rank %d: %v: %s", e.Rank, ErrPeerLost, e.Reason)
}

// Is reports whether target is ErrPeerLost.
func (e *PeerLostError) Is(target error) bool { return target == ErrPeerLost }

// QPError is a fault of one QP (a failed WQE, a broken connection). Once a
// QP has failed, every later Post on it returns the same *QPError.
type QPError struct {
	Peer int   // world rank the QP connects to
	Err  error // the provider's cause
}

func (e *QPError) Error() string { return fmt.Sprintf("qp to rank %d: %v", e.Peer, e.Err) }

// Unwrap returns the provider's cause.
func (e *QPError) Unwrap() error { return e.Err }

// WQEError is the error QP.Post returns: wqes[Index] was not accepted (it
// failed validation, or the QP failed at it) and neither were the WQEs
// after it; those before it were posted and will complete. Err says why; it
// is a *QPError when the QP itself failed, and the QP then rejects every
// later Post.
type WQEError struct {
	Index int
	Err   error
}

func (e *WQEError) Error() string { return fmt.Sprintf("wqe %d: %v", e.Index, e.Err) }

// Unwrap returns the cause.
func (e *WQEError) Unwrap() error { return e.Err }

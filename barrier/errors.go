package barrier

import (
	"errors"
	"fmt"
)

var (
	// ErrTimeout is matched (errors.Is) by the *TimeoutError that Sync and
	// SyncTimeout return when their context ends before every peer
	// arrived.
	ErrTimeout = errors.New("barrier timed out")
	// ErrBroken is returned by Sync on a session whose earlier Sync
	// failed: its slots and shadows no longer agree with its peers', so
	// no later barrier on them can be trusted. Make a new Comm (a peer
	// that never arrives is usually a lost one).
	ErrBroken = errors.New("barrier session broken by an earlier failure")
	// ErrFence is returned by DisseminationSession.Sync for FencePut: a
	// dissemination barrier does not signal every peer, so it cannot make
	// earlier puts visible (use Session for a put fence).
	ErrFence = errors.New("fence not supported by this barrier")
)

// TimeoutError is returned by Sync when ctx ended before every peer's
// arrival was seen. It matches ErrTimeout and unwraps to the context's
// error (context.DeadlineExceeded or context.Canceled).
type TimeoutError struct {
	Index uint32 // the session's barrier index
	Epoch uint64 // the epoch (1 for the first Sync) that did not complete
	// Missing lists the team ranks whose arrival this rank had not seen.
	// For a dissemination barrier it is the one peer of the round that
	// stalled; the late rank may be any rank that peer waits on in turn.
	Missing []int
	Err     error // the context's error
}

// Error names the barrier, the epoch and the members not seen.
func (e *TimeoutError) Error() string {
	return fmt.Sprintf("barrier %d, epoch %d: ranks %v of the team did not arrive: %v", e.Index, e.Epoch, e.Missing, e.Err)
}

// Is reports whether target is ErrTimeout.
func (e *TimeoutError) Is(target error) bool { return target == ErrTimeout }

// Unwrap returns the context's error.
func (e *TimeoutError) Unwrap() error { return e.Err }

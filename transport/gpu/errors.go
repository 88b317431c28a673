package gpu

import (
	"errors"
	"fmt"

	"github.com/rdmactor/rdmactor/gin"
)

// Errors of this package reuse gin's sentinels where the meaning is the
// same, so callers test one set whatever ran the call (Go or a kernel).
var (
	// ErrBadArgument: a malformed Config or argument (gin.ErrBadArgument).
	ErrBadArgument = gin.ErrBadArgument
	// ErrNotSupported: no driver, no GPU, or a path this host cannot run
	// (gin.ErrNotSupported; cuda's load errors match it).
	ErrNotSupported = gin.ErrNotSupported
	// ErrClosed is returned by calls after Comm.Close.
	ErrClosed = errors.New("gpu comm closed")
	// ErrPeerFailed is returned by the collective calls (RegisterWindow) on
	// the ranks whose own part worked when another rank's failed: every
	// rank undid its part.
	ErrPeerFailed = errors.New("another rank failed its part")
	// ErrAborted is returned by Wait when the host aborted the kernel
	// (Abort, or the context given to Wait ended).
	ErrAborted = errors.New("kernel aborted")
)

// Device-side error codes (impl::Err* in gin__types.cuh).
const (
	devErrOutOfBounds    = 1
	devErrPeerOutOfRange = 2
	devErrUnknownSignal  = 3
	devErrUnknownCounter = 4
	devErrBadArgument    = 5
)

// DeviceError is the first error a kernel recorded (a put out of bounds, a
// peer outside its team, ...): the call was skipped, nothing written. It
// matches the gin sentinel of the same meaning.
type DeviceError struct {
	Code   uint32 // impl::Err* code
	Detail uint32 // the offending value (offset, peer, index), truncated to 32 bits
}

func (e *DeviceError) Error() string {
	return fmt.Sprintf("gpu: kernel error: %v (value %d)", e.Unwrap(), e.Detail)
}

// Unwrap returns the gin sentinel for the code.
func (e *DeviceError) Unwrap() error {
	switch e.Code {
	case devErrOutOfBounds:
		return gin.ErrOutOfBounds
	case devErrPeerOutOfRange:
		return gin.ErrPeerOutOfRange
	case devErrUnknownSignal:
		return gin.ErrUnknownSignal
	case devErrUnknownCounter:
		return gin.ErrUnknownCounter
	default:
		return gin.ErrBadArgument
	}
}

// ProxyError is a WQE the CPU proxy could not post (gin refused it, or the
// ring was torn), or a lost peer that failed the ring. The proxy actor sets
// the abort flag, so kernels waiting on the ring return, and fails: its
// supervisor records the error (Comm.Faults) and stops it.
type ProxyError struct {
	Context int    // ring (gin context) index
	Seq     uint64 // the WQE's ring sequence
	Err     error  // gin's error
}

func (e *ProxyError) Error() string {
	return fmt.Sprintf("gpu proxy: ring %d, wqe %d: %v", e.Context, e.Seq, e.Err)
}

// Unwrap returns gin's error.
func (e *ProxyError) Unwrap() error { return e.Err }

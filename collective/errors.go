package collective

import (
	"errors"

	"github.com/rdmactor/rdmactor/gin"
)

var (
	// ErrBroken is returned by every call of a Comm after one of its
	// collectives failed midway (a timeout, a lost peer): its ranks no
	// longer agree on what was sent, so no later collective on it can be
	// trusted. Make a new gin.Comm.
	ErrBroken = errors.New("collective comm broken by an earlier failure")
	// ErrBadArgument is gin.ErrBadArgument: returned, before anything is
	// sent, for negative counts, unknown data types or operators, nil or
	// foreign windows, buffers outside their window (also
	// gin.ErrOutOfBounds) or misaligned for their type, overlapping
	// buffers where the algorithm cannot work in place, and count slices
	// of the wrong length.
	ErrBadArgument = gin.ErrBadArgument
	// ErrNotSupported is gin.ErrNotSupported: returned by New on a
	// provider without strong signals, and by reductions of Float16 or
	// Bfloat16.
	ErrNotSupported = gin.ErrNotSupported
)

// errClosed is the cause ErrBroken names after Comm.Close.
var errClosed = errors.New("comm closed")

package moe

import (
	"errors"

	"github.com/rdmactor/rdmactor/gin"
)

var (
	// ErrBadArgument is gin.ErrBadArgument: returned before anything is
	// sent for a bad Config (sizes, experts not a multiple of the ranks),
	// inputs of the wrong shape, expert ids outside [-1, NumExperts), more
	// tokens than the Handle was sized for, and routing files that do not
	// parse.
	ErrBadArgument = gin.ErrBadArgument
	// ErrNotSupported is gin.ErrNotSupported: returned by New (as an
	// *gin.UnsupportedError) on a provider without strong signals or
	// without SignalAdd values other than 1.
	ErrNotSupported = gin.ErrNotSupported
	// ErrOrder is returned by Combine without a Dispatch before it (and by
	// CombineLL without DispatchLL), and by a Dispatch while the previous
	// one still awaits its Combine: each dispatch is followed by exactly
	// one combine, since the Handle's buffers are reused round after round.
	ErrOrder = errors.New("moe: dispatch and combine out of order")
	// ErrBroken is returned by every call of a Handle after one of its
	// calls failed midway (a deadline, a lost peer): the ranks no longer
	// agree on the round, so no later call can be trusted. Make a new
	// Handle on a new gin.Comm.
	ErrBroken = errors.New("moe: handle broken by an earlier failure")
)

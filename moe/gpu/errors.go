package gpumoe

import (
	"errors"
	"fmt"

	"github.com/rdmactor/rdmactor/moe"
	"github.com/rdmactor/rdmactor/transport/gpu"
)

var (
	// ErrOrder is moe.ErrOrder: returned by Combine without a Dispatch
	// before it (CombineLL without DispatchLL), and by a Dispatch while
	// the previous one still awaits its Combine.
	ErrOrder = moe.ErrOrder
	// ErrBroken is moe.ErrBroken: returned by every call after a kernel of
	// the Handle was aborted or faulted (the ranks no longer agree on the
	// round). Make a new Handle (and gpu.Comm).
	ErrBroken = moe.ErrBroken
	// ErrStale is returned by Recv.Read and RecvLL.Read for the result of
	// an earlier round: its buffers now hold a later one.
	ErrStale = errors.New("gpumoe: receive buffers hold a later round")
)

// Device-side error codes (kernels.cu: ErrBadRouting ...).
const (
	errBadRouting     = 1
	errPeerBadRouting = 2
	errSlotOverflow   = 3
	errAborted        = 4
)

// KernelError is an error a kernel of the Handle recorded (the first one
// since the last Sync). Bad routing matches moe.ErrBadArgument (the round
// moved no rows, on every rank alike in normal mode); an abort matches
// gpu.ErrAborted.
type KernelError struct {
	Code   uint32
	Detail uint32
}

func (e *KernelError) Error() string {
	switch e.Code {
	case errBadRouting:
		return fmt.Sprintf("gpumoe: expert id of slot %d (token %d x top-k) outside [-1, experts)", e.Detail, e.Detail)
	case errPeerBadRouting:
		return "gpumoe: a rank dispatched bad routing: the round moved no rows"
	case errSlotOverflow:
		return fmt.Sprintf("gpumoe: low-latency slots of expert %d overflow MaxLLTokens (an expert twice in a token's top-k?)", e.Detail)
	case errAborted:
		return fmt.Sprintf("gpumoe: a kernel's wait on signal %d was aborted", e.Detail)
	}
	return fmt.Sprintf("gpumoe: kernel error %d (%d)", e.Code, e.Detail)
}

// Is matches moe.ErrBadArgument for bad routing and slot overflow, and
// gpu.ErrAborted for aborted waits.
func (e *KernelError) Is(target error) bool {
	switch e.Code {
	case errBadRouting, errPeerBadRouting, errSlotOverflow:
		return target == moe.ErrBadArgument
	case errAborted:
		return target == gpu.ErrAborted
	}
	return false
}

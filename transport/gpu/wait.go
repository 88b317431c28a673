package gpu

import "fmt"

// WaitResult is how a device-side wait given a Timeout ended, as a kernel
// stores it for the host to read: rdmactor::WaitResult of gin.cuh, whose
// Gin::waitSignal, Gin::waitCounter, Gin::flush and BarrierSession::sync
// take an optional Timeout in nanoseconds of the GPU's %globaltimer (the
// timeouts NCCL 2.31 added to device-side waits, which return
// ncclTimeout). TestLayoutTwin checks the values against the header.
type WaitResult uint32

const (
	// WaitOK: the condition held before the timeout.
	WaitOK WaitResult = 0
	// WaitAborted: the host set the abort flag (Abort, or a context given
	// to Wait or Run that ended).
	WaitAborted WaitResult = 1
	// WaitTimeout: the timeout passed first.
	WaitTimeout WaitResult = 2
	// WaitInvalid: bad arguments (an unknown signal or counter, a barrier
	// index or peer out of range); DeviceError reports which.
	WaitInvalid WaitResult = 3
)

// String names the result as gin.cuh does.
func (r WaitResult) String() string {
	switch r {
	case WaitOK:
		return "Ok"
	case WaitAborted:
		return "Aborted"
	case WaitTimeout:
		return "Timeout"
	case WaitInvalid:
		return "Invalid"
	}
	return fmt.Sprintf("WaitResult(%d)", uint32(r))
}

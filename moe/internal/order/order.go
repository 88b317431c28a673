// Package order is the call order every expert-parallel handle (moe.Handle
// and gpumoe.Handle) enforces: Dispatch then Combine, or DispatchLL then
// CombineLL, one round at a time.
package order

// State is where a handle is in that order.
type State uint8

const (
	// Idle takes a Dispatch or a DispatchLL.
	Idle State = iota
	// Dispatched takes the Combine of the last Dispatch.
	Dispatched
	// DispatchedLL takes the CombineLL of the last DispatchLL.
	DispatchedLL
)

// String names s for errors ("dispatch in state dispatched").
func (s State) String() string {
	switch s {
	case Idle:
		return "idle"
	case Dispatched:
		return "dispatched"
	case DispatchedLL:
		return "dispatched (low latency)"
	}
	return "unknown"
}

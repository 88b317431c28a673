package gin

// Signal is the index of a signal: a 64-bit word every rank has, which
// peers increase with remote actions (ncclGinSignal_t). Indices run from 0
// to Config.Signals-1.
type Signal uint32

// Counter is the index of a local counter (ncclGinCounter_t), ticked by a
// put's local action once the put's source was consumed. 56 bits wide.
type Counter uint32

type remoteKind uint8

const (
	remoteNone remoteKind = iota
	remoteInc
	remoteAdd
	remoteVAInc
	remoteVAAdd
)

// RemoteAction is what a put or signal does at the peer once its data is
// settled. Build it with None, SignalInc, SignalAdd, VASignalInc or
// VASignalAdd. It is a small value: passing one allocates nothing.
type RemoteAction struct {
	kind   remoteKind
	signal Signal
	window *Window
	offset int
	value  uint64
}

// None is the remote action that does nothing (ncclGin_None).
var None = RemoteAction{}

// SignalInc adds 1 to the peer's signal s (ncclGin_SignalInc,
// nccl_device/gin.h, NCCL 2.28). Between two resets of s, it may not be
// mixed with SignalAdd: the mix is ErrMixedSignalOps.
func SignalInc(s Signal) RemoteAction { return RemoteAction{kind: remoteInc, signal: s, value: 1} }

// SignalAdd adds v to the peer's signal s (ncclGin_SignalAdd).
func SignalAdd(s Signal, v uint64) RemoteAction {
	return RemoteAction{kind: remoteAdd, signal: s, value: v}
}

// VASignalInc adds 1 to the 64-bit word at byte offset off of the peer's
// part of window w, a "VA signal" (ncclGin_VASignalInc, NCCL 2.28). w must
// be registered with StrictOrdering and off must be 8-byte aligned; all
// access to that word must go through gin.
func VASignalInc(w *Window, off int) RemoteAction {
	return RemoteAction{kind: remoteVAInc, window: w, offset: off, value: 1}
}

// VASignalAdd adds v to the VA signal at (w, off); see VASignalInc.
func VASignalAdd(w *Window, off int, v uint64) RemoteAction {
	return RemoteAction{kind: remoteVAAdd, window: w, offset: off, value: v}
}

// LocalAction is what a put does locally once its source was consumed.
// Build it with LocalNone or CounterInc.
type LocalAction struct {
	inc     bool
	counter Counter
}

// LocalNone is the local action that does nothing (ncclGin_None).
var LocalNone = LocalAction{}

// CounterInc ticks local counter c once the put's source may be reused
// (ncclGin_CounterInc).
func CounterInc(c Counter) LocalAction { return LocalAction{inc: true, counter: c} }

// Option modifies a put.
type Option uint32

const (
	// Aggregate defers the doorbell: the put is queued, and a later
	// non-aggregated put or signal of the same context to the same peer, or
	// Flush, hands the whole batch to the NIC at once (AggregateRequests in
	// the aws-ofi-nccl EFA-GDA backend). Until then nothing of it is posted.
	Aggregate Option = 1 << iota
)

func aggregated(opts []Option) bool {
	for _, o := range opts {
		if o&Aggregate != 0 {
			return true
		}
	}
	return false
}

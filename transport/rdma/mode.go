package rdma

import (
	"fmt"
	"sync/atomic"
)

// Values of a signal's mode word: what the signal saw since its last reset
// (gin resets a signal by storing 0 in its value and its mode word). Every
// provider that checks the SignalInc/SignalAdd rule at the target uses
// these, so a mode word means the same whoever wrote it.
const (
	ModeUnset uint64 = 0 // no update since the last reset
	ModeInc   uint64 = 1 // SignalInc updates only
	ModeAdd   uint64 = 2 // SignalAdd updates only
)

// ModeOf is the mode word value of a SignalInc or SignalAdd update.
func ModeOf(m SignalMode) uint64 {
	if m == SignalAdd {
		return ModeAdd
	}
	return ModeInc
}

// ClaimMode sets the mode word w to want if it is unset and reports
// ErrMixedSignalOps if it holds the other mode. The common case, a word
// already holding want, is a plain load.
func ClaimMode(w *atomic.Uint64, want uint64) error {
	for {
		switch got := w.Load(); got {
		case want:
			return nil
		case ModeUnset:
			if w.CompareAndSwap(ModeUnset, want) {
				return nil
			} // lost to another claimer (or a reset raced): look again
		default:
			return fmt.Errorf("mode word holds %d, the update wants %d: %w", got, want, ErrMixedSignalOps)
		}
	}
}

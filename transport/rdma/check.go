package rdma

import (
	"errors"
	"fmt"
	"os"
)

// gin validates every operation before it builds a WQE (window bounds,
// signal indices, put size), so providers trust the WQEs they are given
// and check only what needs their own state: region types and lifetimes,
// and the signal-mode rule. CheckWQE is the full validation, for a
// checking QP (Checked) that the conformance suite and debug builds put
// in front of every provider's QPs to prove gin never posts a bad WQE.

// EnvCheckWQEs, set to 1, makes Checked wrap QPs in builds without the
// rdmacheck tag (the conformance suite sets it).
const EnvCheckWQEs = "RDMACTOR_CHECK_WQES"

// CheckWQE validates w as a provider with maxPut (Capabilities.MaxPutSize)
// would: a known opcode, regions present and open, [LocalOff, +Len) and
// [RemoteOff, +Len) inside their regions, Len at most maxPut, the signal
// word (and the mode word, for SignalInc and SignalAdd with one) 8-byte
// aligned inside the signal region and distinct, no signal on OpRead and
// one on OpSignal.
//
// Errors: ErrOutOfBounds for ranges and words; ErrNotSupported for an
// unknown opcode or signal mode and for Len over maxPut; ErrClosed for a
// local region already closed; a plain error for a missing region.
func CheckWQE(w *WQE, maxPut int) error {
	switch w.Op {
	case OpNop:
		return nil
	case OpWrite, OpRead:
		if w.Op == OpRead && w.Signal.Mode != SignalNone {
			return errors.New("OpRead with a signal")
		}
		if w.Local == nil || w.Remote == nil {
			return errors.New("a data WQE without a local or remote region")
		}
		local := w.Local.Bytes()
		if local == nil {
			return fmt.Errorf("local region: %w", ErrClosed)
		}
		if !InBounds(w.LocalOff, w.Len, len(local)) {
			return RangeError("local", w.LocalOff, w.Len, len(local))
		}
		if !InBounds(w.RemoteOff, w.Len, w.Remote.Size()) {
			return RangeError("remote", w.RemoteOff, w.Len, w.Remote.Size())
		}
		if w.Len > maxPut {
			return fmt.Errorf("length %d over the %d-byte put limit (Capabilities.MaxPutSize): %w", w.Len, maxPut, ErrNotSupported)
		}
	case OpSignal:
		if w.Signal.Mode == SignalNone {
			return errors.New("OpSignal with SignalNone")
		}
	default:
		return fmt.Errorf("opcode %d: %w", w.Op, ErrNotSupported)
	}
	s := &w.Signal
	switch s.Mode {
	case SignalNone:
		return nil
	case SignalInc, SignalAdd, SignalVA:
	default:
		return fmt.Errorf("signal mode %d: %w", s.Mode, ErrNotSupported)
	}
	if s.Region == nil {
		return errors.New("a signal without a region")
	}
	size := s.Region.Size()
	if err := CheckWord("signal", s.Off, size); err != nil {
		return err
	}
	if s.ModeOff >= 0 && s.Mode != SignalVA {
		if err := CheckWord("mode", s.ModeOff, size); err != nil {
			return err
		}
		if s.ModeOff == s.Off {
			return fmt.Errorf("mode word at signal word offset %d: %w", s.Off, ErrOutOfBounds)
		}
	}
	return nil
}

// Checked returns q behind a CheckWQE of every WQE when checking is on (a
// build with the rdmacheck tag, or EnvCheckWQEs=1 when the provider
// connects), else q itself. Providers wrap the QPs they connect with it.
func Checked(q QP, maxPut int) QP {
	if checkBuild || os.Getenv(EnvCheckWQEs) == "1" {
		return CheckQP(q, maxPut)
	}
	return q
}

// CheckQP returns q behind a CheckWQE of every WQE, whatever the build.
func CheckQP(q QP, maxPut int) QP { return &checkedQP{QP: q, maxPut: maxPut} }

// checkedQP is a QP whose Post validates each WQE (CheckWQE) before the
// provider sees any of them.
type checkedQP struct {
	QP
	maxPut int
}

// Post checks wqes, then posts them. A WQE that fails the check is a
// *WQEError with its index, as a provider reports it; the WQEs before it
// are posted (and complete), nothing of it or after it is.
func (c *checkedQP) Post(wqes []WQE) error {
	for i := range wqes {
		if err := CheckWQE(&wqes[i], c.maxPut); err != nil {
			if i > 0 {
				if perr := c.QP.Post(wqes[:i]); perr != nil {
					return perr
				}
			}
			return &WQEError{Index: i, Err: fmt.Errorf("post to rank %d: wr_id %#x: %w", c.Peer(), wqes[i].WrID, err)}
		}
	}
	return c.QP.Post(wqes)
}

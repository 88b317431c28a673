package shm

import (
	"fmt"
	"sync/atomic"

	"github.com/rdmactor/rdmactor/internal/memword"
	"github.com/rdmactor/rdmactor/transport/rdma"
)

// qp is an shm queue pair: Post executes WQEs inline, in order.
type qp struct {
	p      *Provider
	peer   int
	cq     rdma.CompletionHandler
	closed atomic.Bool
}

var _ rdma.QP = (*qp)(nil)

// Peer is the world rank this QP writes to.
func (q *qp) Peer() int { return q.peer }

// Post executes wqes in order. For each WQE it checks what needs this
// provider's state (region types and owners, that they are open, the
// signal mode against the mode word) and pins the regions, then copies the
// data into the peer's mapping (OpRead: from it into the local region),
// then applies the signal with a sequentially-consistent atomic add and
// rings the target region's doorbell (a load when nobody waits), then
// reports the completion to the QP's handler. Ranges, words and sizes are
// the caller's to validate (gin does; rdma.CheckWQE, and rdma.Checked in
// front of this QP in checking builds): a range outside its region panics
// here rather than write past it. A WQE that fails a check writes nothing
// and gets no completion; Post returns a *rdma.WQEError with its index and
// the WQEs after it are not executed (those before it were, and
// completed). These errors are not QP faults: the QP stays usable.
//
// Errors: rdma.ErrMixedSignalOps for a signal mode other than the one its
// mode word holds; rdma.ErrNotSupported for an unknown opcode or signal
// mode; rdma.ErrClosed after Close of the QP, its provider, or a region
// the WQE names; a plain error for a region that is nil, of another
// provider or of another peer. shm never returns *rdma.QPError. Post does
// not allocate unless it returns an error.
func (q *qp) Post(wqes []rdma.WQE) error {
	if q.closed.Load() {
		return &rdma.WQEError{Index: 0, Err: fmt.Errorf("shm: post to rank %d: %w", q.peer, rdma.ErrClosed)}
	}
	for i := range wqes {
		w := &wqes[i]
		if err := q.exec(w); err != nil {
			return &rdma.WQEError{Index: i, Err: fmt.Errorf("shm: post to rank %d: wr_id %#x: %w", q.peer, w.WrID, err)}
		}
		q.cq(w.WrID, nil)
	}
	return nil
}

// held is what one WQE pins while it executes: its regions stay mapped
// until release, whatever Close does meanwhile.
type held struct {
	local       *Region
	remote, sig *remoteRegion
	pinLocal    bool // local is a mapping (not Go memory) and pinned
	pinRemote   bool
	pinSig      bool // sig is pinned separately from remote
	add         uint64
}

// release unpins what prepare pinned. Explicit, not deferred: exec runs
// once per WQE, and defers with this many returns are not open-coded.
func (h *held) release() {
	if h.pinLocal {
		h.local.pins.Unpin()
	}
	if h.pinRemote {
		h.remote.pins.Unpin()
	}
	if h.pinSig {
		h.sig.pins.Unpin()
	}
}

// exec validates and executes one WQE with its regions pinned.
func (q *qp) exec(w *rdma.WQE) error {
	var h held
	err := q.prepare(w, &h)
	if err == nil {
		// Validated: execute. Data first, then the signal: the add is
		// seq-cst, so a peer that observes it (acquire load) observes the
		// copy and every earlier WQE's copy too (strong signals).
		switch w.Op {
		case rdma.OpWrite:
			copyData(h.remote.window(w.RemoteOff, w.Len), h.local.window(w.LocalOff, w.Len))
		case rdma.OpRead:
			copyData(h.local.window(w.LocalOff, w.Len), h.remote.window(w.RemoteOff, w.Len))
		}
		if h.sig != nil {
			memword.Uint64(h.sig.mem[:h.sig.size], w.Signal.Off).Add(h.add)
			h.sig.bell.Ring() // after the add: a waiter that armed before it is woken
		}
	}
	h.release()
	return err
}

// prepare checks w's regions and signal mode and pins the regions into h;
// on error h holds what was pinned so far, for release.
func (q *qp) prepare(w *rdma.WQE, h *held) error {
	switch w.Op {
	case rdma.OpNop:
		return nil
	case rdma.OpWrite, rdma.OpRead:
		var err error
		if h.local, err = q.localRegion(w.Local); err != nil {
			return err
		}
		if h.remote, err = q.remoteRegion(w.Remote, "remote"); err != nil {
			return err
		}
		if h.local.local {
			// Go memory, never unmapped: a closed check is enough.
			if h.local.pins.Closed() {
				return fmt.Errorf("local region: %w", rdma.ErrClosed)
			}
		} else {
			if !h.local.pins.Pin() {
				return fmt.Errorf("local region: %w", rdma.ErrClosed)
			}
			h.pinLocal = true
		}
		if !h.remote.pins.Pin() {
			return fmt.Errorf("remote region of rank %d: %w", h.remote.peer, rdma.ErrClosed)
		}
		h.pinRemote = true
	case rdma.OpSignal:
	default:
		return fmt.Errorf("opcode %d: %w", w.Op, rdma.ErrNotSupported)
	}

	s := &w.Signal
	if s.Mode == rdma.SignalNone {
		return nil
	}
	sig, err := q.remoteRegion(s.Region, "signal")
	if err != nil {
		return err
	}
	if sig != h.remote {
		if !sig.pins.Pin() {
			return fmt.Errorf("signal region of rank %d: %w", sig.peer, rdma.ErrClosed)
		}
		h.pinSig = true
	}
	h.sig = sig
	switch s.Mode {
	case rdma.SignalInc:
		h.add = 1
	case rdma.SignalAdd, rdma.SignalVA:
		h.add = s.Value
	default:
		return fmt.Errorf("signal mode %d: %w", s.Mode, rdma.ErrNotSupported)
	}
	if s.ModeOff >= 0 && s.Mode != rdma.SignalVA {
		if err := claimMode(sig.mem[:sig.size], s.ModeOff, s.Mode); err != nil {
			return err
		}
	}
	return nil
}

// chunk is the piece size copyData copies mid-size puts in. Go's copy on
// amd64 switches to non-temporal stores from 1 MiB (memmove_amd64.s), which
// bypass the cache the peer is about to read from; pieces below that keep
// ordinary stores. Past maxChunked bytes the data cannot stay in cache
// anyway and non-temporal stores win.
const (
	chunk      = 512 << 10
	maxChunked = 16 << 20
)

// copyData is copy(dst, src) for put payloads.
func copyData(dst, src []byte) {
	if len(src) < 1<<20 || len(src) > maxChunked {
		copy(dst, src)
		return
	}
	for off := 0; off < len(src); off += chunk {
		end := min(off+chunk, len(src))
		copy(dst[off:end], src[off:end])
	}
}

// claimMode applies the SignalInc/SignalAdd rule to the mode word at off.
func claimMode(mem []byte, off int, mode rdma.SignalMode) error {
	if err := rdma.ClaimMode(memword.Uint64(mem, off), rdma.ModeOf(mode)); err != nil {
		return fmt.Errorf("mode word at offset %d: %w", off, err)
	}
	return nil
}

// localRegion returns r as a Region of this provider.
func (q *qp) localRegion(r rdma.MemoryRegion) (*Region, error) {
	lr, ok := r.(*Region)
	if !ok || lr == nil {
		return nil, fmt.Errorf("local region %T: not an shm region", r)
	}
	if lr.p != q.p {
		return nil, fmt.Errorf("local region of rank %d: registered by another provider", lr.p.cfg.Rank)
	}
	return lr, nil
}

// remoteRegion returns r as an import of this provider from the QP's peer.
func (q *qp) remoteRegion(r rdma.RemoteRegion, what string) (*remoteRegion, error) {
	rr, ok := r.(*remoteRegion)
	if !ok || rr == nil {
		return nil, fmt.Errorf("%s region %T: not an shm import", what, r)
	}
	if rr.p != q.p {
		return nil, fmt.Errorf("%s region: imported by another provider", what)
	}
	if rr.peer != q.peer {
		return nil, fmt.Errorf("%s region of rank %d on a qp to rank %d", what, rr.peer, q.peer)
	}
	return rr, nil
}

// Progress has nothing to do: shm completes inside Post. It returns 0, and
// rdma.ErrClosed after Close.
func (q *qp) Progress() (int, error) {
	if q.closed.Load() {
		return 0, fmt.Errorf("shm: progress: %w", rdma.ErrClosed)
	}
	return 0, nil
}

// Close closes the QP; later Posts return rdma.ErrClosed, and so does a
// second Close.
func (q *qp) Close() error {
	if q.closed.Swap(true) {
		return fmt.Errorf("shm: close qp: %w", rdma.ErrClosed)
	}
	q.p.forgetQP(q)
	return nil
}

package mailbox

import (
	"time"
	"unsafe"
)

// BodyAppender writes a frame body for SendAppend.
type BodyAppender interface {
	// AppendBody appends a frame body to dst and returns the extended
	// slice, or an error that SendAppend returns as it is. dst has length
	// 0; it is nil when the ring offers no room in place, and the
	// appender may then append to a buffer of its own.
	AppendBody(dst []byte) ([]byte, error)
}

// minInPlace is the least body room worth encoding in place; below it (at
// a lap's end, or with little credit left) the body goes the way of Send.
const minInPlace = 64

// SendAppend is Send for a body that w writes. Where the staging ring has
// room at its tail (before the lap ends and under the receiver's credit),
// w appends the body straight into the staging window: the body is
// written once, with no intermediate buffer and no copy. A body that
// outgrows that room, or that w writes elsewhere, is sent as Send sends
// it (a copy, and a wait for credit up to Config.SendTimeout).
//
// w runs under the pair's lock: it must not send to peer, and other sends
// to peer wait while it runs.
//
// A body over Config.MaxFrame is not sent: SendAppend returns it with
// ErrFrameTooLarge, for the caller to split. Otherwise it returns nil and
// Send's errors, or w's.
func (m *Mailbox) SendAppend(peer int, kind Kind, w BodyAppender) ([]byte, error) {
	return m.sendAppend(peer, kind, w, m.cfg.SendTimeout)
}

// TrySendAppend is SendAppend without the wait for credit, as TrySend.
func (m *Mailbox) TrySendAppend(peer int, kind Kind, w BodyAppender) ([]byte, error) {
	return m.sendAppend(peer, kind, w, 0)
}

func (m *Mailbox) sendAppend(peer int, kind Kind, w BodyAppender, timeout time.Duration) ([]byte, error) {
	if err := m.sendCheck(peer, kind); err != nil {
		return nil, err
	}
	body, sent, err := m.appendInPlace(&m.out[peer], peer, kind, w)
	if sent || err != nil {
		return nil, err
	}
	if body == nil { // no room in place: w writes to its own buffer
		if body, err = w.AppendBody(nil); err != nil {
			return nil, err
		}
	}
	if err := m.sizeCheck(peer, body); err != nil {
		return body, err
	}
	return nil, m.sendStaged(peer, kind, body, timeout)
}

// appendInPlace has w write the body into the staging ring at its tail
// and stages the frame, if the ring has room there. It returns sent, or
// the body w wrote elsewhere (it outgrew the room), or nil and no error
// when there was no room to offer.
func (m *Mailbox) appendInPlace(p *outPair, peer int, kind Kind, w BodyAppender) (body []byte, sent bool, err error) {
	p.mu.Lock()
	defer p.mu.Unlock() // w may panic: the pair must not stay locked
	began := m.sendBegins(p)
	if err := m.readCredit(p, peer); err != nil {
		return nil, false, err
	}
	f, off := m.tailFrame(p, peer)
	if f == nil {
		return nil, false, nil
	}
	body, n, moved, err := appendTail(f, kind, p.r.seq, w)
	if err != nil || moved {
		return body, false, err
	}
	m.commitFrame(p, placement{at: off, total: align(n)}, len(body))
	return nil, true, m.dispatch(p, peer, began)
}

// WarmSend runs the work of SendAppend to peer without sending: w appends
// a body into the staging ring's free room at the tail, and the frame's
// header and checksum are written after it, but the frame is neither
// committed nor put, so the next send writes over it. It keeps the code
// and the staging memory of a send in the processor's caches while the
// receive loop waits awake (Handler.Warm). It reports false, having done
// nothing, when another goroutine holds the pair, the pair cannot send,
// or the tail has too little room; w's errors are ignored.
func (m *Mailbox) WarmSend(peer int, kind Kind, w BodyAppender) bool {
	if m.sendCheck(peer, kind) != nil {
		return false
	}
	p := &m.out[peer]
	if !p.mu.TryLock() {
		return false
	}
	defer p.mu.Unlock()
	if m.readCredit(p, peer) != nil {
		return false
	}
	f, _ := m.tailFrame(p, peer)
	if f == nil {
		return false
	}
	_, _, moved, err := appendTail(f, kind, p.r.seq, w)
	return err == nil && !moved
}

// tailFrame is the staging ring's room for a frame at p's tail (before the
// lap ends and under the receiver's credit, read by the caller), up to
// Config.MaxFrame, and its offset in the ring; nil when it holds less
// than a header and minInPlace. Lock p.mu must be held.
func (m *Mailbox) tailFrame(p *outPair, peer int) (f []byte, off uint64) {
	off = p.r.tail & p.r.mask
	// Multiples of 8 both, so any frame up to room fits aligned.
	room := min(p.r.size-off, p.r.size-p.r.used())
	if room < headerBytes+minInPlace {
		return nil, off
	}
	max := min(room, uint64(m.cfg.MaxFrame))
	return m.win.Bytes()[m.lay.StagingOffset(peer)+int(off):][:max:max], off
}

// appendTail has w append a body into f after the header's room and, if
// the body stayed there, writes the frame's header (kind, seq, checksum)
// before it: n is the frame's length. moved reports a body that outgrew f
// (w appended it elsewhere), returned as body.
func appendTail(f []byte, kind Kind, seq uint32, w BodyAppender) (body []byte, n uint64, moved bool, err error) {
	dst := f[headerBytes:headerBytes]
	if body, err = w.AppendBody(dst); err != nil {
		return nil, 0, false, err
	}
	if len(body) > 0 && unsafe.SliceData(body) != unsafe.SliceData(dst) || len(body) > cap(dst) {
		return body, 0, true, nil
	}
	n = uint64(headerBytes + len(body))
	header{len: uint32(n), kind: kind, seq: seq}.put(f[:n])
	return body, n, false, nil
}

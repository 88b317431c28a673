package mailbox

import (
	"fmt"
	"time"
	"unsafe"

	"github.com/rdmactor/rdmactor/gin"
)

// SendAppendRoom sends one piece of a body too large for a frame (package
// actor streams large messages this way): it waits until the staging ring
// offers at least least body bytes in place at its tail, then has w
// append the piece straight into the staging window, so the piece is
// written once, with no intermediate buffer, whatever the ring's fill.
// Where the lap's end leaves less than that, the rest of the lap becomes
// a pad and the piece starts the next lap. w gets a dst of length 0 and a
// capacity of at least least bytes (up to Config.MaxFrame less the
// header) and must append within that capacity: the room is what the
// receiver's credit allows, so a body that outgrows it is an error
// (gin.ErrBadArgument) and nothing is sent.
//
// The wait for credit is Send's, up to Config.SendTimeout, then a
// *RingFullError. w runs under the pair's lock, as for SendAppend: it must
// not send to peer. Errors: those of Send, ErrFrameTooLarge for a least
// over Config.MaxFrame less the header, and w's, returned as they are.
func (m *Mailbox) SendAppendRoom(peer int, kind Kind, least int, w BodyAppender) error {
	if err := m.sendCheck(peer, kind); err != nil {
		return err
	}
	if least < 0 || headerBytes+least > m.cfg.MaxFrame {
		return fmt.Errorf("mailbox: send to rank %d: room for %d body bytes asked, frames are at most %d bytes (Config.MaxFrame): %w",
			peer, least, m.cfg.MaxFrame, ErrFrameTooLarge)
	}
	need := align(uint64(headerBytes + least))
	p := &m.out[peer]
	timeout := m.cfg.SendTimeout
	var start time.Time
	for {
		staged, seen, free, err := m.appendRoom(p, peer, kind, need, w)
		if staged || err != nil {
			return err
		}
		if start.IsZero() {
			start = time.Now()
			p.mu.Lock()
			p.sc.creditWaits++
			p.mu.Unlock()
		}
		if waited := time.Since(start); waited >= timeout {
			p.mu.Lock()
			p.sc.ringFull++
			p.mu.Unlock()
			return &RingFullError{Peer: peer, Need: int(need), Free: int(free), Waited: waited}
		}
		if err := m.waitCredit(peer, seen, start.Add(timeout)); err != nil {
			return err
		}
	}
}

// appendRoom is one try of SendAppendRoom: it stages w's piece if the
// ring has room for a frame of need bytes at its tail (or, after a pad,
// at the next lap's start), and otherwise reports the credit it saw and
// the free bytes.
func (m *Mailbox) appendRoom(p *outPair, peer int, kind Kind, need uint64, w BodyAppender) (staged bool, seen, free uint64, err error) {
	p.mu.Lock()
	defer p.mu.Unlock() // w may panic: the pair must not stay locked
	began := m.sendBegins(p)
	if err := m.readCredit(p, peer); err != nil {
		return false, 0, 0, err
	}
	seen = p.seenCredit
	free = p.r.size - p.r.used()
	off := p.r.tail & p.r.mask
	pl := placement{at: off}
	lap := p.r.size - off
	if lap < need {
		pl = placement{pad: lap, padAt: off, at: 0}
		lap = p.r.size
	}
	if free < pl.pad+need {
		return false, seen, free, nil
	}
	// Multiples of 8 all, as positions and credit are: any frame up to
	// room fits aligned.
	room := min(lap, free-pl.pad, uint64(m.cfg.MaxFrame)&^(frameAlign-1))
	stage := m.win.Bytes()[m.lay.StagingOffset(peer):]
	f := stage[pl.at:][:room:room]
	dst := f[headerBytes:headerBytes]
	body, err := w.AppendBody(dst)
	if err != nil {
		return false, seen, free, err
	}
	if len(body) > cap(dst) || len(body) > 0 && unsafe.SliceData(body) != unsafe.SliceData(dst) {
		return false, seen, free, fmt.Errorf("mailbox: send to rank %d: a %d-byte piece outgrew the %d bytes offered in place: %w",
			peer, len(body), cap(dst), gin.ErrBadArgument)
	}
	if pl.pad >= headerBytes {
		header{len: uint32(pl.pad), kind: kindPad, seq: p.r.seq}.put(stage[pl.padAt:])
	}
	n := uint64(headerBytes + len(body))
	header{len: uint32(n), kind: kind, seq: p.r.seq}.put(f[:n])
	pl.total = pl.pad + align(n)
	m.commitFrame(p, pl, len(body))
	return true, seen, free, m.dispatch(p, peer, began)
}

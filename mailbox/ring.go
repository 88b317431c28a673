package mailbox

import "strconv"

// The ring accounting below is the pure core of the mailbox (no memory, no
// I/O): the sender's view of a ring it writes (sendRing) and the
// receiver's view of a ring it reads (recvRing). Offsets are byte counts
// since the pair was created, never reduced modulo the ring: the ring
// offset of position p is p & mask. Both sides place frames by the same
// rules, so they agree on where every frame and pad lies:
//
//   - a frame takes align(len) bytes at the current position if they fit
//     before the ring's end; otherwise the bytes to the end are a pad and
//     the frame starts the next lap at offset 0;
//   - a pad of headerBytes or more starts with a pad header (kind 0,
//     len = pad bytes); a shorter one (8 bytes, as positions are 8-byte
//     aligned) has none: both sides skip it implicitly.

// sendRing is the sender's view of one (sender, receiver) ring.
//
// Invariant: consumed <= tail <= consumed + size, where consumed is the
// receiver's last credit the sender has seen. Not safe for concurrent use:
// the sender holds its pair's lock.
type sendRing struct {
	size, mask uint64
	tail       uint64 // bytes ever placed (frames and pads)
	consumed   uint64 // bytes the receiver reported consumed (credit)
	seq        uint32 // number of the next frame
}

func newSendRing(size uint64) sendRing { return sendRing{size: size, mask: size - 1} }

// placement is where one frame goes.
type placement struct {
	pad   uint64 // pad bytes before the frame, at ring offset padAt
	padAt uint64
	at    uint64 // ring offset of the frame
	total uint64 // pad + aligned frame bytes: what the frame costs in credit
}

// place returns where a frame of n bytes (header included) goes next. It
// does not check credit; see fits.
func (r *sendRing) place(n uint64) placement {
	sz := align(n)
	off := r.tail & r.mask
	if room := r.size - off; sz > room {
		return placement{pad: room, padAt: off, at: 0, total: room + sz}
	}
	return placement{at: off, total: sz}
}

// fits reports whether total more bytes fit under the current credit.
func (r *sendRing) fits(total uint64) bool { return r.tail+total-r.consumed <= r.size }

// commit records the frame of p as written.
func (r *sendRing) commit(p placement) {
	r.tail += p.total
	r.seq++
}

// credit records the receiver's consumed-bytes count c (from its credit
// signal). A count that goes backwards or past tail is not a credit a
// receiver of this ring can have sent; it is ignored and reported false.
func (r *sendRing) credit(c uint64) bool {
	if c < r.consumed || c > r.tail {
		return false
	}
	r.consumed = c
	return true
}

// used is the number of bytes placed and not yet credited.
func (r *sendRing) used() uint64 { return r.tail - r.consumed }

// recvRing is the receiver's view of one (receiver, sender) ring. Not safe
// for concurrent use: only the receive loop touches it.
type recvRing struct {
	size, mask uint64
	maxFrame   uint64
	head       uint64 // bytes consumed (frames and pads)
	frames     uint64 // frames consumed; compared with the sender's signal
	seq        uint32 // number of the next frame
	unreturned uint64 // bytes consumed and not yet credited back
}

func newRecvRing(size, maxFrame uint64) recvRing {
	return recvRing{size: size, mask: size - 1, maxFrame: maxFrame}
}

// room is the number of bytes from the head to the ring's end.
func (r *recvRing) room() uint64 { return r.size - r.head&r.mask }

// skip consumes n bytes of pad.
func (r *recvRing) skip(n uint64) {
	r.head += n
	r.unreturned += n
}

// consume consumes a frame of n bytes (header included).
func (r *recvRing) consume(n uint64) {
	r.head += align(n)
	r.unreturned += align(n)
	r.frames++
	r.seq++
}

// check validates a parsed header found at the head against the ring:
// length bounds, the lap's end and the sequence number. It returns a
// description of the first violation, or "".
func (r *recvRing) check(h header) string {
	room := r.room()
	if h.kind == kindPad {
		switch {
		case room == r.size:
			return "pad frame at the start of a lap"
		case uint64(h.len) != room:
			return "pad frame of " + itoa(uint64(h.len)) + " bytes, want " + itoa(room) + " (to the ring's end)"
		case h.seq != r.seq:
			return "pad frame seq " + itoa(uint64(h.seq)) + ", want " + itoa(uint64(r.seq))
		}
		return ""
	}
	switch {
	case h.len < headerBytes:
		return "frame length " + itoa(uint64(h.len)) + " shorter than its header"
	case uint64(h.len) > r.maxFrame:
		return "frame length " + itoa(uint64(h.len)) + " over the " + itoa(r.maxFrame) + "-byte limit"
	case align(uint64(h.len)) > room:
		return "frame of " + itoa(uint64(h.len)) + " bytes crosses the ring's end (" + itoa(room) + " bytes left)"
	case h.seq != r.seq:
		return "frame seq " + itoa(uint64(h.seq)) + ", want " + itoa(uint64(r.seq))
	}
	return ""
}

func itoa(n uint64) string { return strconv.FormatUint(n, 10) }

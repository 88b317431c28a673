package mailbox

import "time"

// PutHeader writes a frame header as a sender does, for tests that forge
// frames; the checksum covers the body as far as b holds it (a forged
// length may run past b).
func PutHeader(b []byte, n uint32, kind Kind, seq uint32) {
	h := header{len: n, kind: kind, seq: seq}
	if uint64(n) > uint64(len(b)) || n < headerBytes {
		h.kind = kindPad // checksum of the header alone
	}
	header{len: n, kind: kind, seq: seq}.putSum(b, frameSum(b, h))
}

// FrameBytes is the ring space a frame with a body of n bytes takes.
func FrameBytes(n int) int { return int(align(uint64(headerBytes + n))) }

// PollCredit is pollCredit, for tests.
func (m *Mailbox) PollCredit(peer int, seen uint64, until time.Time) bool {
	return m.pollCredit(peer, seen, until)
}

// PollsCredit reports whether credit waits poll before they block.
func (m *Mailbox) PollsCredit() bool { return m.pollsCredit }

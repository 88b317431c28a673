package mailbox

import "testing"

// FuzzParseFrame feeds arbitrary ring bytes to the receive loop's frame
// check: it never panics, and what it accepts is a frame that a sender
// could have written (its checksum holds) inside the ring.
func FuzzParseFrame(f *testing.F) {
	good := make([]byte, 64)
	copy(good[headerBytes:], "a frame body")
	header{len: 40, kind: 1, seq: 0}.put(good)
	f.Add(good)
	pad := make([]byte, 64)
	header{len: 64, kind: kindPad, seq: 0}.put(pad)
	f.Add(pad)
	f.Add(make([]byte, headerBytes))
	f.Add(make([]byte, 4096+headerBytes-2)) // leaves a frame 14 bytes of ring
	f.Fuzz(func(t *testing.T, b []byte) {
		if len(b) < headerBytes {
			return
		}
		r := newRecvRing(4096, 1024)
		r.head = uint64(4096 - len(b)%4096) // the frame ends the ring: no crossing
		ring := make([]byte, 4096)
		at := r.head & r.mask
		copy(ring[at:], b)
		h, err := parseFrame(ring[at:], r.check)
		if err != nil {
			return
		}
		if h.kind != kindPad && uint64(at)+uint64(h.len) > uint64(len(ring)) {
			t.Fatalf("accepted a frame of %d bytes at %d in a ring of %d", h.len, at, len(ring))
		}
	})
}

package mailbox

// PutHeader writes a frame header as a sender does, for tests that forge
// frames.
func PutHeader(b []byte, n uint32, kind Kind, seq uint32) {
	header{len: n, kind: kind, seq: seq}.put(b)
}

// HeaderBytes is the size of a frame header.
const HeaderBytes = headerBytes

// FrameBytes is the ring space a frame with a body of n bytes takes.
func FrameBytes(n int) int { return int(align(uint64(headerBytes + n))) }

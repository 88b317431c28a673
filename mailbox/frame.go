package mailbox

import (
	"encoding/binary"
	"fmt"
	"hash/crc32"
)

// Kind tags a frame for the layer above the mailbox (package actor uses one
// kind for user messages, one for system messages, ...). Kind 0 is the
// mailbox's own pad frame and may not be sent.
type Kind uint8

// kindPad marks the unused bytes between the last frame of a lap and the
// end of the ring.
const kindPad Kind = 0

// Frame header, 16 bytes, little-endian, at an 8-byte aligned ring offset:
//
//	0        4       5      6        8        12       16
//	+--------+-------+------+--------+--------+--------+---------------+-----------+
//	| len    | magic | kind | 0      | seq    | crc    | body          | 0..7 pad  |
//	| uint32 | 0x6D  | u8   | uint16 | uint32 | uint32 | len-16 bytes  | to 8      |
//	+--------+-------+------+--------+--------+--------+---------------+-----------+
//
// len counts header and body, not the alignment pad. seq is the frame's
// number on its (sender, receiver) pair, from 0, wrapping at 2^32; a pad
// frame carries the seq of the frame that follows it. crc is CRC-32C
// (Castagnoli) of bytes 0..11, so a header that was not written by a
// mailbox sender is told from one that was.
const (
	headerBytes = 16
	frameAlign  = 8
	frameMagic  = 0x6D
)

var castagnoli = crc32.MakeTable(crc32.Castagnoli)

// header is a frame header in host form.
type header struct {
	len  uint32
	kind Kind
	seq  uint32
}

// put writes h into b[:headerBytes].
func (h header) put(b []byte) {
	_ = b[headerBytes-1]
	binary.LittleEndian.PutUint32(b[0:], h.len)
	b[4] = frameMagic
	b[5] = byte(h.kind)
	b[6], b[7] = 0, 0
	binary.LittleEndian.PutUint32(b[8:], h.seq)
	binary.LittleEndian.PutUint32(b[12:], crc32.Checksum(b[:12], castagnoli))
}

// parseHeader reads the header in b[:headerBytes] and checks what a header
// alone can prove: magic, reserved bytes and checksum.
func parseHeader(b []byte) (header, error) {
	_ = b[headerBytes-1]
	if b[4] != frameMagic {
		return header{}, fmt.Errorf("magic byte %#02x, want %#02x", b[4], frameMagic)
	}
	if b[6] != 0 || b[7] != 0 {
		return header{}, fmt.Errorf("reserved bytes %#02x %#02x, want 0", b[6], b[7])
	}
	if got, want := binary.LittleEndian.Uint32(b[12:]), crc32.Checksum(b[:12], castagnoli); got != want {
		return header{}, fmt.Errorf("header checksum %#08x, want %#08x", got, want)
	}
	return header{len: binary.LittleEndian.Uint32(b[0:]), kind: Kind(b[5]), seq: binary.LittleEndian.Uint32(b[8:])}, nil
}

// align rounds n up to the frame alignment.
func align(n uint64) uint64 { return (n + frameAlign - 1) &^ (frameAlign - 1) }

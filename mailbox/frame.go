package mailbox

import (
	"encoding/binary"
	"errors"
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
// (Castagnoli) of bytes 0..11 and of the body (a pad frame's body is not
// written and not covered), so neither a header nor a body that a mailbox
// sender did not write passes for one. The receiver checks the length
// against its ring before it reads the body the checksum covers.
// HeaderBytes is the size of a frame header: a frame of a b-byte body
// takes HeaderBytes + b of Config.MaxFrame.
const HeaderBytes = headerBytes

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

// put writes h into f[:headerBytes], with the checksum of the header and
// of the body f[headerBytes:h.len], which must be written already.
func (h header) put(f []byte) {
	h.putSum(f, 0)
	binary.LittleEndian.PutUint32(f[12:], frameSum(f, h))
}

// putSum writes h with checksum sum into f[:headerBytes].
func (h header) putSum(f []byte, sum uint32) {
	_ = f[headerBytes-1]
	binary.LittleEndian.PutUint32(f[0:], h.len)
	f[4] = frameMagic
	f[5] = byte(h.kind)
	f[6], f[7] = 0, 0
	binary.LittleEndian.PutUint32(f[8:], h.seq)
	binary.LittleEndian.PutUint32(f[12:], sum)
}

// frameSum is the checksum of the frame in f (header h): CRC-32C of header
// bytes 0..11 and, unless h is a pad, of the body f[headerBytes:h.len].
func frameSum(f []byte, h header) uint32 {
	c := crc32.Checksum(f[:12], castagnoli)
	if h.kind != kindPad {
		c = crc32.Update(c, castagnoli, f[headerBytes:h.len])
	}
	return c
}

// parseFrame reads the frame at the start of f and checks it: magic and
// reserved bytes, then check (the receive ring's rules for the length,
// sequence number and kind, which must also keep [0, len) inside f; "" if
// they hold), then the checksum over header and body.
func parseFrame(f []byte, check func(header) string) (header, error) {
	if len(f) < headerBytes {
		return header{}, fmt.Errorf("%d bytes left in the ring, a frame header takes %d", len(f), headerBytes)
	}
	if f[4] != frameMagic {
		return header{}, fmt.Errorf("magic byte %#02x, want %#02x", f[4], frameMagic)
	}
	if f[6] != 0 || f[7] != 0 {
		return header{}, fmt.Errorf("reserved bytes %#02x %#02x, want 0", f[6], f[7])
	}
	h := header{len: binary.LittleEndian.Uint32(f[0:]), kind: Kind(f[5]), seq: binary.LittleEndian.Uint32(f[8:])}
	if why := check(h); why != "" {
		return header{}, errors.New(why)
	}
	if h.kind != kindPad && uint64(h.len) > uint64(len(f)) { // check promised otherwise: a caller bug
		return header{}, fmt.Errorf("frame of %d bytes in %d", h.len, len(f))
	}
	if got, want := binary.LittleEndian.Uint32(f[12:]), frameSum(f, h); got != want {
		return header{}, fmt.Errorf("frame checksum %#08x, want %#08x", got, want)
	}
	return h, nil
}

// align rounds n up to the frame alignment.
func align(n uint64) uint64 { return (n + frameAlign - 1) &^ (frameAlign - 1) }

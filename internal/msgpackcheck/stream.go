package msgpackcheck

import (
	"encoding/binary"
	"fmt"
)

// Stream is Check for a value that arrives in pieces (a message streamed
// to a decoder while it is received): fed the pieces in order, it checks
// each declared length against the bytes of the whole value that are yet
// to come, which it knows from the value's total size, so a decoder that
// reads only what was fed so far never meets a length Check would refuse.
// The zero Stream is not ready; see NewStream.
type Stream struct {
	need uint64 // values still to walk
	skip uint64 // payload bytes of the current value still to pass
	left uint64 // bytes not yet fed
	pos  uint64 // bytes fed so far, for error messages
	hdr  [9]byte
	nh   int // bytes of a type byte and its length field held in hdr
	want int // bytes hdr needs in all; 0 before the type byte
}

// NewStream returns a Stream for a value of total bytes.
func NewStream(total int) *Stream { return &Stream{need: 1, left: uint64(total)} }

// Feed checks the next piece. It returns an error wrapping ErrLength or
// ErrFormat as Check does, or one for more bytes than total; after an
// error the Stream is spent. Bytes after the value are not looked at (a
// decoder refuses them).
func (s *Stream) Feed(b []byte) error {
	if uint64(len(b)) > s.left {
		return fmt.Errorf("%w: %d bytes fed past the value's %d", ErrLength, uint64(len(b))-s.left, s.pos+s.left)
	}
	s.left -= uint64(len(b))
	base := s.pos
	s.pos += uint64(len(b))
	for pos := 0; pos < len(b); {
		if s.skip > 0 {
			k := min(s.skip, uint64(len(b)-pos))
			pos += int(k)
			s.skip -= k
			continue
		}
		if s.need == 0 {
			return nil
		}
		if s.nh == 0 {
			w, err := lengthWidth(b[pos], base+uint64(pos))
			if err != nil {
				return err
			}
			s.want = 1 + w
		}
		for s.nh < s.want && pos < len(b) {
			s.hdr[s.nh] = b[pos]
			s.nh++
			pos++
		}
		if s.nh < s.want {
			return nil // the length field goes on in the next piece
		}
		size, items := lengths(s.hdr[:s.nh])
		s.nh, s.want = 0, 0
		s.need--
		rest := uint64(len(b)-pos) + s.left
		if size > rest {
			return fmt.Errorf("%w: %d bytes declared at byte %d, %d left", ErrLength, size, base+uint64(pos), rest)
		}
		s.skip = size
		if s.need += items; s.need > rest-size {
			return fmt.Errorf("%w: %d values declared by byte %d, %d bytes left", ErrLength, s.need, base+uint64(pos), rest-size)
		}
	}
	return nil
}

// End reports whether the value was whole once every byte was fed.
func (s *Stream) End() error {
	if s.left > 0 || s.need > 0 || s.skip > 0 || s.nh > 0 {
		return fmt.Errorf("%w: value cut at byte %d (%d values missing)", ErrLength, s.pos, s.need)
	}
	return nil
}

// lengthWidth returns the width of the length field after type byte t
// (at byte at), or ErrFormat for a byte that starts no msgpack value.
func lengthWidth(t byte, at uint64) (int, error) {
	if _, w, _, ok := varLen(t); ok {
		return w, nil
	}
	if t <= 0x9f || t >= 0xa0 && t <= 0xbf || t >= 0xe0 || t == 0xc0 || t == 0xc2 || t == 0xc3 {
		return 0, nil // fixints, fixmaps, fixarrays, fixstrs, nil, bools
	}
	return 0, fmt.Errorf("msgpack type byte %#02x at byte %d: %w", t, at, ErrFormat)
}

// lengths returns the payload bytes and nested values that the type byte
// and length field in h declare, as Check reads them.
func lengths(h []byte) (size, items uint64) {
	t := h[0]
	switch {
	case t <= 0x7f || t >= 0xe0, t == 0xc0, t == 0xc2, t == 0xc3:
		return 0, 0
	case t >= 0x80 && t <= 0x8f:
		return 0, 2 * uint64(t&0x0f)
	case t >= 0x90 && t <= 0x9f:
		return 0, uint64(t & 0x0f)
	case t >= 0xa0 && t <= 0xbf:
		return uint64(t & 0x1f), 0
	}
	n, w, multi, _ := varLen(t)
	switch w {
	case 1:
		n = uint64(h[1])
	case 2:
		n = uint64(binary.BigEndian.Uint16(h[1:]))
	case 4:
		n = uint64(binary.BigEndian.Uint32(h[1:]))
	}
	switch multi {
	case 1:
		return 0, n
	case 2:
		return 0, 2 * n
	case 3:
		return n + 1, 0
	}
	return n, 0
}

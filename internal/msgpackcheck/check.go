// Package msgpackcheck checks the lengths a msgpack value declares against
// the bytes present, before a decoder that trusts them runs. It may hold
// only that check.
package msgpackcheck

import (
	"errors"
	"fmt"
)

// ErrLength is wrapped by Check's errors for a declared length past the
// bytes present.
var ErrLength = errors.New("msgpack length past the end")

// ErrFormat is wrapped by Check's errors for a byte that starts no msgpack
// value.
var ErrFormat = errors.New("not msgpack")

// Check walks the msgpack value at the start of b and checks every
// length it declares against the bytes present, before a decoder sees it:
// msgpack v5 (github.com/vmihailenco/msgpack, issue #401) and generated
// decoders allocate what a length field says, so a 19-byte body declaring
// a 4 GiB string, or an array of 2^32-1 elements, would allocate that much
// on the receiving rank. A string, binary or extension must fit in what is
// left; an array or map of n entries needs at least n (2n) more bytes, one
// per entry at the least. It reads no further than one value and allocates
// nothing. Format: the msgpack specification (github.com/msgpack/msgpack,
// spec.md).
func Check(b []byte) error {
	pos := 0
	need := uint64(1) // values still to walk
	for need > 0 {
		if pos >= len(b) {
			return fmt.Errorf("%w: %d values missing at byte %d", ErrLength, need, pos)
		}
		need--
		t := b[pos]
		w, err := lengthWidth(t, uint64(pos))
		if err != nil {
			return err
		}
		pos++
		if len(b)-pos < w {
			return fmt.Errorf("%w: length field at byte %d", ErrLength, pos)
		}
		size, items := lengths(b[pos-1 : pos+w]) // payload bytes, nested values
		pos += w
		if size > uint64(len(b)-pos) {
			return fmt.Errorf("%w: %d bytes declared at byte %d, %d left", ErrLength, size, pos, len(b)-pos)
		}
		pos += int(size)
		need += items
		if need > uint64(len(b)-pos) {
			return fmt.Errorf("%w: %d values declared by byte %d, %d bytes left", ErrLength, need, pos, len(b)-pos)
		}
	}
	return nil
}

// varLen describes the msgpack types whose size is not in their type
// byte's low bits: n is a fixed payload size (w == 0), or w is the width
// of the big-endian length that follows; multi says what the length
// counts: 0 bytes, 1 array items, 2 map pairs, 3 extension bytes.
func varLen(t byte) (n uint64, w int, multi int, ok bool) {
	switch t {
	case 0xc4, 0xd9: // bin8, str8
		return 0, 1, 0, true
	case 0xc5, 0xda: // bin16, str16
		return 0, 2, 0, true
	case 0xc6, 0xdb: // bin32, str32
		return 0, 4, 0, true
	case 0xc7:
		return 0, 1, 3, true
	case 0xc8:
		return 0, 2, 3, true
	case 0xc9:
		return 0, 4, 3, true
	case 0xca:
		return 4, 0, 0, true
	case 0xcb:
		return 8, 0, 0, true
	case 0xcc, 0xd0:
		return 1, 0, 0, true
	case 0xcd, 0xd1:
		return 2, 0, 0, true
	case 0xce, 0xd2:
		return 4, 0, 0, true
	case 0xcf, 0xd3:
		return 8, 0, 0, true
	case 0xd4, 0xd5, 0xd6, 0xd7, 0xd8: // fixext 1, 2, 4, 8, 16: a type byte and the data
		return 1 + 1<<(t-0xd4), 0, 0, true
	case 0xdc:
		return 0, 2, 1, true
	case 0xdd:
		return 0, 4, 1, true
	case 0xde:
		return 0, 2, 2, true
	case 0xdf:
		return 0, 4, 2, true
	}
	return 0, 0, 0, false
}

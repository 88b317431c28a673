package shm

import (
	"encoding/binary"
	"errors"
	"fmt"
	"math"
)

// A descriptor names one exported region to its peers. The file name is not
// carried: the importer rebuilds it from its own job and shm directory and
// the owner's rank and sequence number, so no descriptor can point a rank
// at a file outside its job. Fixed 32 bytes, little endian:
//
//	0       4         8      12         16            24            32
//	+-------+---------+------+----------+-------------+-------------+
//	| magic | version | rank | reserved | seq         | size        |
//	| "rdsh"| u32 = 2 | u32  | u32 = 0  | u64         | u64 (bytes) |
//	+-------+---------+------+----------+-------------+-------------+
const (
	descLen     = 32
	descMagic   = "rdsh"
	descVersion = 2 // 2: mappings end in a doorbell line (mmap.go)
)

// errBadDescriptor is wrapped by every descriptor decoding error.
var errBadDescriptor = errors.New("malformed shm descriptor")

// descriptor is a decoded descriptor.
type descriptor struct {
	rank int    // owner's world rank
	seq  uint64 // owner's region sequence number (names the file)
	size int    // region size in bytes
}

func (d descriptor) encode() []byte {
	b := make([]byte, descLen)
	copy(b, descMagic)
	binary.LittleEndian.PutUint32(b[4:], descVersion)
	binary.LittleEndian.PutUint32(b[8:], uint32(d.rank))
	binary.LittleEndian.PutUint64(b[16:], d.seq)
	binary.LittleEndian.PutUint64(b[24:], uint64(d.size))
	return b
}

// decodeDescriptor parses b; every malformed input is an error wrapping
// errBadDescriptor, never a panic.
func decodeDescriptor(b []byte) (descriptor, error) {
	if len(b) != descLen {
		return descriptor{}, fmt.Errorf("%w: %d bytes, want %d", errBadDescriptor, len(b), descLen)
	}
	if string(b[:4]) != descMagic {
		return descriptor{}, fmt.Errorf("%w: magic %q, want %q", errBadDescriptor, b[:4], descMagic)
	}
	if v := binary.LittleEndian.Uint32(b[4:]); v != descVersion {
		return descriptor{}, fmt.Errorf("%w: version %d, want %d", errBadDescriptor, v, descVersion)
	}
	if r := binary.LittleEndian.Uint32(b[12:]); r != 0 {
		return descriptor{}, fmt.Errorf("%w: reserved word %#x, want 0", errBadDescriptor, r)
	}
	rank := binary.LittleEndian.Uint32(b[8:])
	size := binary.LittleEndian.Uint64(b[24:])
	if rank > math.MaxInt32 {
		return descriptor{}, fmt.Errorf("%w: rank %d", errBadDescriptor, rank)
	}
	if size > uint64(math.MaxInt)/2 {
		return descriptor{}, fmt.Errorf("%w: size %d bytes", errBadDescriptor, size)
	}
	return descriptor{rank: int(rank), seq: binary.LittleEndian.Uint64(b[16:]), size: int(size)}, nil
}

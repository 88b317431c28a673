package shm

import (
	"encoding/binary"
	"errors"
	"fmt"
	"math"
)

// A descriptor names one exported region to its peers. No path is carried:
// the importer rebuilds the region's name from its own job and the owner's
// rank and sequence number, so no descriptor can point a rank at a file
// outside its job. For a memfd region it carries the owner's pid and file
// descriptor, which the importer opens as /proc/<pid>/fd/<fd> once the
// link's target is that rebuilt name; for a named file both are zero. Fixed
// 40 bytes, little endian:
//
//	0       4         8      12        16      24            32     36     40
//	+-------+---------+------+---------+-------+-------------+------+------+
//	| magic | version | rank | files   | seq   | size        | pid  | fd   |
//	| "rdsh"| u32 = 3 | u32  | u32 1|2 | u64   | u64 (bytes) | u32  | u32  |
//	+-------+---------+------+---------+-------+-------------+------+------+
//
// files is 1 for memfd, 2 for a named file (fileMode).
const (
	descLen     = 40
	descMagic   = "rdsh"
	descVersion = 3 // changes with the layout, so mismatched builds fail at Import
)

// errBadDescriptor is wrapped by every descriptor decoding error.
var errBadDescriptor = errors.New("malformed shm descriptor")

// descriptor is a decoded descriptor.
type descriptor struct {
	rank  int      // owner's world rank
	seq   uint64   // owner's region sequence number (names the region)
	size  int      // region size in bytes
	files fileMode // how the region is shared: memfd or a named file
	pid   int      // memfd: the owner's process id; 0 for a named file
	fd    int      // memfd: the owner's descriptor of it; 0 for a named file
}

func (d descriptor) encode() []byte {
	b := make([]byte, descLen)
	copy(b, descMagic)
	binary.LittleEndian.PutUint32(b[4:], descVersion)
	binary.LittleEndian.PutUint32(b[8:], uint32(d.rank))
	binary.LittleEndian.PutUint32(b[12:], uint32(d.files))
	binary.LittleEndian.PutUint64(b[16:], d.seq)
	binary.LittleEndian.PutUint64(b[24:], uint64(d.size))
	binary.LittleEndian.PutUint32(b[32:], uint32(d.pid))
	binary.LittleEndian.PutUint32(b[36:], uint32(d.fd))
	return b
}

// decodeDescriptor parses b; every malformed input is an error wrapping
// errBadDescriptor, never a panic. A valid b is exactly what encode gives.
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
	rank := binary.LittleEndian.Uint32(b[8:])
	files := fileMode(binary.LittleEndian.Uint32(b[12:]))
	size := binary.LittleEndian.Uint64(b[24:])
	pid := binary.LittleEndian.Uint32(b[32:])
	fd := binary.LittleEndian.Uint32(b[36:])
	if rank > math.MaxInt32 {
		return descriptor{}, fmt.Errorf("%w: rank %d", errBadDescriptor, rank)
	}
	if size > uint64(math.MaxInt)/2 {
		return descriptor{}, fmt.Errorf("%w: size %d bytes", errBadDescriptor, size)
	}
	switch files {
	case modeMemfd:
		if pid == 0 || pid > math.MaxInt32 || fd > math.MaxInt32 {
			return descriptor{}, fmt.Errorf("%w: memfd of pid %d, fd %d", errBadDescriptor, pid, fd)
		}
	case modeNamed:
		if pid != 0 || fd != 0 {
			return descriptor{}, fmt.Errorf("%w: named file with pid %d, fd %d, want 0, 0", errBadDescriptor, pid, fd)
		}
	default:
		return descriptor{}, fmt.Errorf("%w: files %d, want %d (memfd) or %d (named)", errBadDescriptor, files, modeMemfd, modeNamed)
	}
	return descriptor{rank: int(rank), seq: binary.LittleEndian.Uint64(b[16:]), size: int(size),
		files: files, pid: int(pid), fd: int(fd)}, nil
}

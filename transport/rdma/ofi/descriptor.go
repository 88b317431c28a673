//go:build ofi && cgo && linux

package ofi

import (
	"encoding/binary"
	"errors"
	"fmt"
)

// A descriptor names one exported region to its peers and carries what a
// peer needs to reach the owner at all: the owner's endpoint address and
// its control region (so the bootstrap's exchange of region descriptors is
// also the address exchange). Little endian:
//
//	0       4     6       7       8      12        14          16
//	+-------+-----+-------+-------+------+---------+-----------+
//	| magic | ver | strat | flags | rank | namelen | sc count  |
//	| "rdof"| u16 | u8    | u8    | u32  | u16     | u16       |
//	+-------+-----+-------+-------+------+---------+-----------+
//	16      24     32     40     48         56        64
//	+-------+------+------+------+----------+---------+
//	| id    | size | base | key  | ctrlBase | ctrlKey |
//	| u64   | u64  | u64  | u64  | u64      | u64     |
//	+-------+------+------+------+----------+---------+
//	64: name (namelen bytes), then sc count × (u16 length, name)
//
// flags bit 0: the counter strategy's signals region (the sc names are its
// signal endpoints, one per signal). base is the region's virtual address
// (used by peers under FI_MR_VIRT_ADDR).
const (
	descMagic   = "rdof"
	descVersion = 1
	descFixed   = 64
	flagSignals = 1
)

var errBadDescriptor = errors.New("malformed ofi descriptor")

type descriptor struct {
	rank     int
	strat    strategy
	signals  bool
	id       uint64
	size     uint64
	base     uint64
	key      uint64
	ctrlBase uint64
	ctrlKey  uint64
	name     []byte
	scNames  [][]byte
}

func (d descriptor) encode() []byte {
	b := make([]byte, descFixed, descFixed+len(d.name)+len(d.scNames)*(2+len(d.name)))
	copy(b, descMagic)
	binary.LittleEndian.PutUint16(b[4:], descVersion)
	b[6] = byte(d.strat)
	if d.signals {
		b[7] = flagSignals
	}
	binary.LittleEndian.PutUint32(b[8:], uint32(d.rank))
	binary.LittleEndian.PutUint16(b[12:], uint16(len(d.name)))
	binary.LittleEndian.PutUint16(b[14:], uint16(len(d.scNames)))
	for i, v := range []uint64{d.id, d.size, d.base, d.key, d.ctrlBase, d.ctrlKey} {
		binary.LittleEndian.PutUint64(b[16+8*i:], v)
	}
	b = append(b, d.name...)
	for _, n := range d.scNames {
		b = binary.LittleEndian.AppendUint16(b, uint16(len(n)))
		b = append(b, n...)
	}
	return b
}

// decodeDescriptor parses b; every malformed input is an error wrapping
// errBadDescriptor, never a panic.
func decodeDescriptor(b []byte) (descriptor, error) {
	var d descriptor
	if len(b) < descFixed {
		return d, fmt.Errorf("%w: %d bytes, want at least %d", errBadDescriptor, len(b), descFixed)
	}
	if string(b[:4]) != descMagic {
		return d, fmt.Errorf("%w: magic %q, want %q", errBadDescriptor, b[:4], descMagic)
	}
	if v := binary.LittleEndian.Uint16(b[4:]); v != descVersion {
		return d, fmt.Errorf("%w: version %d, want %d", errBadDescriptor, v, descVersion)
	}
	d.strat = strategy(b[6])
	if d.strat != cqdata && d.strat != counter {
		return d, fmt.Errorf("%w: signal strategy %d", errBadDescriptor, b[6])
	}
	if b[7]&^flagSignals != 0 {
		return d, fmt.Errorf("%w: flags %#x", errBadDescriptor, b[7])
	}
	d.signals = b[7]&flagSignals != 0
	rank := binary.LittleEndian.Uint32(b[8:])
	if rank > 1<<30 {
		return d, fmt.Errorf("%w: rank %d", errBadDescriptor, rank)
	}
	d.rank = int(rank)
	nameLen := int(binary.LittleEndian.Uint16(b[12:]))
	scCount := int(binary.LittleEndian.Uint16(b[14:]))
	f := make([]uint64, 6)
	for i := range f {
		f[i] = binary.LittleEndian.Uint64(b[16+8*i:])
	}
	d.id, d.size, d.base, d.key, d.ctrlBase, d.ctrlKey = f[0], f[1], f[2], f[3], f[4], f[5]
	if d.id == 0 {
		return d, fmt.Errorf("%w: region id 0", errBadDescriptor)
	}
	rest := b[descFixed:]
	if nameLen == 0 || nameLen > maxEndpointName || len(rest) < nameLen {
		return d, fmt.Errorf("%w: endpoint name of %d bytes (%d left)", errBadDescriptor, nameLen, len(rest))
	}
	d.name, rest = append([]byte(nil), rest[:nameLen]...), rest[nameLen:]
	if scCount > 0 && !d.signals {
		return d, fmt.Errorf("%w: %d signal endpoints on a region that is not the signals region", errBadDescriptor, scCount)
	}
	for i := range scCount {
		if len(rest) < 2 {
			return d, fmt.Errorf("%w: signal endpoint %d: truncated", errBadDescriptor, i)
		}
		n := int(binary.LittleEndian.Uint16(rest))
		rest = rest[2:]
		if n == 0 || n > maxEndpointName || len(rest) < n {
			return d, fmt.Errorf("%w: signal endpoint %d: name of %d bytes (%d left)", errBadDescriptor, i, n, len(rest))
		}
		d.scNames, rest = append(d.scNames, append([]byte(nil), rest[:n]...)), rest[n:]
	}
	if len(rest) != 0 {
		return d, fmt.Errorf("%w: %d trailing bytes", errBadDescriptor, len(rest))
	}
	return d, nil
}

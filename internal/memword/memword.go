package memword

import (
	"strconv"
	"sync/atomic"
	"unsafe"
)

// Why unsafe: sync/atomic works on typed words, and mapped memory arrives as
// []byte (unix.Mmap). A word of a shared window must be read and updated in
// place, so its address is reinterpreted as *atomic.Uint64, which has the
// layout of a bare uint64 (its other fields are zero-sized). The word must be
// 8-byte aligned in the address space (atomic ops require it on 32-bit
// platforms and for tearing-free access everywhere), which page-aligned
// mappings with 8-byte aligned offsets guarantee.

// Uint64 returns an atomic view of the 8 bytes b[off:off+8]. The view
// aliases b: it is valid only while the memory behind b is (for a mapping,
// until it is unmapped).
//
// Uint64 panics if off is out of range (off < 0 or off+8 > len(b)) or if
// the word's address is not 8-byte aligned: both are caller bugs, checked
// before the memory is touched. It does not allocate.
func Uint64(b []byte, off int) *atomic.Uint64 {
	if off < 0 || len(b) < 8 || off > len(b)-8 {
		panic("memword: word at offset " + strconv.Itoa(off) + " outside " + strconv.Itoa(len(b)) + " bytes")
	}
	p := unsafe.Add(unsafe.Pointer(unsafe.SliceData(b)), off)
	if uintptr(p)%8 != 0 {
		panic("memword: word at offset " + strconv.Itoa(off) + " not 8-byte aligned")
	}
	return (*atomic.Uint64)(p)
}

// Aligned reports whether b[off:off+8] is in range and 8-byte aligned in
// the address space, i.e. whether Uint64(b, off) would succeed.
func Aligned(b []byte, off int) bool {
	if off < 0 || len(b) < 8 || off > len(b)-8 {
		return false
	}
	return uintptr(unsafe.Add(unsafe.Pointer(unsafe.SliceData(b)), off))%8 == 0
}

// Uint32 returns an atomic view of the 4 bytes b[off:off+4], for futex
// words (futex(2) takes 32-bit words). It panics as Uint64 does, for a
// word out of range or not 4-byte aligned.
func Uint32(b []byte, off int) *atomic.Uint32 {
	if off < 0 || len(b) < 4 || off > len(b)-4 {
		panic("memword: word at offset " + strconv.Itoa(off) + " outside " + strconv.Itoa(len(b)) + " bytes")
	}
	p := unsafe.Add(unsafe.Pointer(unsafe.SliceData(b)), off)
	if uintptr(p)%4 != 0 {
		panic("memword: word at offset " + strconv.Itoa(off) + " not 4-byte aligned")
	}
	return (*atomic.Uint32)(p)
}

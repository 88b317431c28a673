package rdma

import "fmt"

// Opcode says what a WQE does.
type Opcode uint8

const (
	// OpNop does nothing and completes; it fills SQ slots a producer
	// reserved but could not use (so the ring never stalls on a hole).
	OpNop Opcode = iota
	// OpWrite copies Len bytes from Local at LocalOff to Remote at
	// RemoteOff, then applies Signal if set (ibv_post_send IBV_WR_RDMA_WRITE,
	// fi_write(3)).
	OpWrite
	// OpSignal applies Signal alone (an atomic fetch-add with no data).
	OpSignal
	// OpRead copies Len bytes from Remote at RemoteOff into Local at
	// LocalOff (ibv_post_send IBV_WR_RDMA_READ, fi_read(3)); its
	// completion says the bytes have landed. It carries no Signal.
	// Providers that offer it say so in Capabilities.Get.
	OpRead
)

// SignalMode is the kind of signal update, checked against what the target
// signal saw since its last reset (see ErrMixedSignalOps).
type SignalMode uint8

const (
	// SignalNone: no signal update.
	SignalNone SignalMode = iota
	// SignalInc: add 1; may not be mixed with SignalAdd between resets.
	SignalInc
	// SignalAdd: add Value.
	SignalAdd
	// SignalVA: add Value to a word of a window (a VA signal); no mode check.
	SignalVA
)

// Signal is a remote atomic add applied after a WQE's data is visible
// (release ordering at the peer).
type Signal struct {
	Mode   SignalMode
	Region RemoteRegion // the peer region holding the 64-bit word
	Off    int          // byte offset of the word, 8-byte aligned
	Value  uint64       // amount to add (1 for SignalInc)
	// ModeOff is the byte offset in Region of the 64-bit mode word checked
	// for SignalInc/SignalAdd (set to the mode on first use after a reset,
	// compared after); -1 when the signal has no mode word (VA signals).
	ModeOff int
}

// WQE is one work queue entry. It is a plain value so SQ rings can hold
// them in place without allocation.
type WQE struct {
	WrID      uint64 // returned in the completion; endpoint: [route:16 | seq:48]
	Op        Opcode
	Local     MemoryRegion // source region (OpWrite), destination (OpRead)
	LocalOff  int          // offset in Local in bytes
	Remote    RemoteRegion // destination region (OpWrite), source (OpRead)
	RemoteOff int          // offset in Remote in bytes
	Len       int          // bytes to move (OpWrite, OpRead); 0 is allowed
	Signal    Signal       // applied after the data (OpWrite, OpSignal)
}

// InBounds reports whether [off, off+n) lies in a region of size bytes,
// without overflowing (off+n is computed only once both are known
// non-negative and off <= size).
func InBounds(off, n, size int) bool {
	return off >= 0 && n >= 0 && off <= size && n <= size-off
}

// RangeError is the error of a byte range [off, off+n) outside a region of
// size bytes (providers' WQE checks): it wraps ErrOutOfBounds.
func RangeError(what string, off, n, size int) error {
	return fmt.Errorf("%s range [%d, +%d) in a region of %d bytes: %w", what, off, n, size, ErrOutOfBounds)
}

// CheckWord checks that the 64-bit word at byte off lies in a region of
// size bytes and is 8-byte aligned (regions are page-aligned mappings, so
// the address is then aligned too). The error wraps ErrOutOfBounds.
func CheckWord(what string, off, size int) error {
	if !InBounds(off, 8, size) {
		return fmt.Errorf("%s word at offset %d in a region of %d bytes: %w", what, off, size, ErrOutOfBounds)
	}
	if off%8 != 0 {
		return fmt.Errorf("%s word at offset %d: not 8-byte aligned: %w", what, off, ErrOutOfBounds)
	}
	return nil
}

// IsWord reports whether CheckWord would accept off (inlinable).
func IsWord(off, size int) bool { return InBounds(off, 8, size) && off%8 == 0 }

package shm

import (
	"sync/atomic"

	"github.com/rdmactor/rdmactor/internal/memword"
)

// Word returns an atomic view of the 8-byte aligned word at off in b, a
// region's Bytes: how the owner of a window reads (acquire), waits on and
// resets (stores 0 in) its signal and mode words. The view is valid until
// the region is closed.
//
// Word panics if the word is out of range or misaligned (a caller bug); see
// internal/memword.
func Word(b []byte, off int) *atomic.Uint64 { return memword.Uint64(b, off) }

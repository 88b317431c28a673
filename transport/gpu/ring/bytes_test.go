package ring

import "unsafe"

// u64bytes views 8-byte aligned Go memory as bytes, as pinned memory
// arrives in production (test helper; production views come from cuda).
func u64bytes(w []uint64) []byte { return unsafe.Slice((*byte)(unsafe.Pointer(&w[0])), len(w)*8) }

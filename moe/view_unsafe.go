package moe

import "unsafe"

// This file holds the package's only unsafe code: typed views of window
// bytes and the alias test that lets callers skip a copy. Windows are
// page-aligned mappings (gin, transport/rdma/shm) and every offset handed
// here is a multiple of 64, so each view is aligned for its type; the
// bytes stay mapped while the gin.Comm is open.

// view is b as len(b)/sizeof(T) elements of T. b must be aligned for T.
func view[T any](b []byte) []T {
	var z T
	n := len(b) / int(unsafe.Sizeof(z))
	if n == 0 {
		return nil
	}
	return unsafe.Slice((*T)(unsafe.Pointer(unsafe.SliceData(b))), n)
}

// sameStart reports whether a and b start at the same address: a caller
// that filled the Handle's own view is not copied into it again.
func sameStart[T any](a, b []T) bool {
	return len(a) > 0 && len(b) > 0 && unsafe.SliceData(a) == unsafe.SliceData(b)
}

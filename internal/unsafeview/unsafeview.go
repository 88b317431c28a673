// Package unsafeview holds the typed views of window bytes that the upper
// layers (collective, moe) read and write elements through, so that their
// unsafe code lives in one place.
//
// Windows are page-aligned mappings (gin, transport/rdma/shm) and callers
// hand offsets aligned for the element type, so each view is aligned; the
// bytes stay mapped while the gin.Comm is open, and no pointer other than
// the view's is made.
package unsafeview

import "unsafe"

// As views b as len(b)/sizeof(T) elements of T (nil when fewer than one
// fits). b must be aligned for T, and T must not be of size zero.
func As[T any](b []byte) []T {
	var z T
	n := len(b) / int(unsafe.Sizeof(z))
	if n == 0 {
		return nil
	}
	return unsafe.Slice((*T)(unsafe.Pointer(unsafe.SliceData(b))), n)
}

// SameStart reports whether a and b are non-empty and start at the same
// address: a caller that filled a view itself need not be copied into it.
func SameStart[T any](a, b []T) bool {
	return len(a) > 0 && len(b) > 0 && unsafe.SliceData(a) == unsafe.SliceData(b)
}

package collective

import "unsafe"

// This file holds the package's only unsafe code: typed views of window
// bytes. Windows are page-aligned mappings (gin, transport/rdma/shm) and
// every offset handed here was checked to be a multiple of the element
// size, so each view is aligned; the bytes stay mapped while the gin.Comm
// is open, and no pointer other than the view's is made.

// as views b as len(b)/sizeof(T) elements of T. b must be aligned for T.
func as[T any](b []byte) []T {
	var z T
	n := len(b) / int(unsafe.Sizeof(z))
	if n == 0 {
		return nil
	}
	return unsafe.Slice((*T)(unsafe.Pointer(&b[0])), n)
}

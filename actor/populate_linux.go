package actor

import (
	"sync/atomic"
	"unsafe"

	"golang.org/x/sys/unix"
)

// noPopulate is set once the kernel refused MADV_POPULATE_WRITE (before
// Linux 5.14): later messages do not ask again.
var noPopulate atomic.Bool

// populate faults in, writable, the pages wholly inside b with one
// madvise(MADV_POPULATE_WRITE) (madvise(2), Linux 5.14), from a goroutine
// of its own: the decoder allocated b for a large field of a message
// still arriving, and the pages of fresh memory, faulted one by one by
// the copies of the pieces into it, cost more than the copies on small
// VMs. Populating never changes a page's contents (a page not yet
// present is the zero page either way), so it may run beside the copies.
func populate(b []byte) {
	if noPopulate.Load() {
		return
	}
	p := uintptr(unsafe.Pointer(unsafe.SliceData(b)))
	start, end := (p+pageSize-1)&^(pageSize-1), (p+uintptr(len(b)))&^(pageSize-1)
	if end <= start {
		return
	}
	// A reused span that the runtime zeroed is resident already, to its
	// last page: faulting it in again would only walk its page tables.
	var vec [1]byte // mincore(2): bit 0 set for a resident page
	if _, _, e := unix.Syscall(unix.SYS_MINCORE, end-pageSize, pageSize, uintptr(unsafe.Pointer(&vec[0]))); e == 0 && vec[0]&1 != 0 {
		return
	}
	go func() {
		// b stays reachable while the pages are faulted in.
		if err := unix.Madvise(b[start-p:end-p], unix.MADV_POPULATE_WRITE); err == unix.EINVAL {
			noPopulate.Store(true)
		}
	}()
}

const pageSize = 4096

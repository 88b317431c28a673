//go:build linux

package futex

import (
	"sync/atomic"
	"time"
	"unsafe"

	"golang.org/x/sys/unix"
)

// Operations of futex(2), from linux/futex.h. Not FUTEX_PRIVATE_FLAG: the
// word may be in a MAP_SHARED mapping that other processes wait on.
const (
	futexWait = 0
	futexWake = 1
)

// wait blocks in FUTEX_WAIT while *w == val, for up to d. EAGAIN (the word
// moved), EINTR and ETIMEDOUT all return: the caller re-checks.
func wait(w *atomic.Uint32, val uint32, d time.Duration) {
	ts := unix.NsecToTimespec(int64(d))
	unix.Syscall6(unix.SYS_FUTEX, uintptr(unsafe.Pointer(w)), futexWait, uintptr(val), uintptr(unsafe.Pointer(&ts)), 0, 0)
}

// wake wakes every waiter blocked on w.
func wake(w *atomic.Uint32) {
	unix.Syscall6(unix.SYS_FUTEX, uintptr(unsafe.Pointer(w)), futexWake, uintptr(1<<31-1), 0, 0, 0)
}

//go:build ofi && cgo && linux

package ofi

/*
#include <rdma/fabric.h>
#include <rdma/fi_domain.h>
#include <rdma/fi_eq.h>

static int rdx_cq_waitfd(struct fid_cq *cq, int *fd) { return fi_control(&cq->fid, FI_GETWAIT, fd); }
static int rdx_cq_trywait(struct fid_fabric *fab, struct fid_cq *cq) {
	struct fid *fids[1] = { &cq->fid };
	return fi_trywait(fab, fids, 1);
}
*/
import "C"

import (
	"os"
	"syscall"
	"time"

	"golang.org/x/sys/unix"
)

// cqWaiter blocks on a CQ's FI_WAIT_FD wait object in Go's netpoller, the
// way fi_cq_sread(3) would in epoll, but without a cgo call: a thread
// blocked inside cgo keeps its P in a system call, so the runtime's sysmon
// polls every 20 µs to 10 ms to retake it, which on a VM costs an idle rank
// more CPU than its waits (examples/pingpong's idle CPU figure shows it).
// As fi_trywait(3) prescribes, a wait first asks the provider whether
// anything is pending; a kick (fi_cq_signal) makes the fd readable.
type cqWaiter struct {
	file *os.File // a dup of the CQ's wait fd, registered with the netpoller
	rc   syscall.RawConn
}

// openCQWaiter returns a waiter on cq's wait fd, or nil where the fd
// cannot be had or polled (the caller then blocks in fi_cq_sread).
func openCQWaiter(cq *C.struct_fid_cq) *cqWaiter {
	var fd C.int
	if C.rdx_cq_waitfd(cq, &fd) != 0 || fd < 0 {
		return nil
	}
	// wait's level check needs an epoll set (util wait objects are one).
	var ev [1]unix.EpollEvent
	if _, err := unix.EpollWait(int(fd), ev[:], 0); err != nil && err != unix.EINTR {
		return nil
	}
	// A dup, so that closing the file leaves libfabric's fd open; it
	// shares the fd's flags, and non-blocking mode changes nothing for an
	// epoll fd (its waits carry their own timeout).
	dup, err := unix.FcntlInt(uintptr(fd), unix.F_DUPFD_CLOEXEC, 0)
	if err != nil {
		return nil
	}
	if err := unix.SetNonblock(dup, true); err != nil {
		unix.Close(dup)
		return nil
	}
	f := os.NewFile(uintptr(dup), "ofi-cq-wait")
	// A file the netpoller does not take has no deadlines: no waiter.
	rc, err := f.SyscallConn()
	if err != nil || f.SetReadDeadline(time.Time{}) != nil {
		f.Close()
		return nil
	}
	return &cqWaiter{file: f, rc: rc}
}

// tryWait reports whether the CQ may be waited on: nothing is pending
// (fi_trywait returned FI_SUCCESS, not -FI_EAGAIN). It also resets a
// kick's signal.
func (w *cqWaiter) tryWait(fab *C.struct_fid_fabric, cq *C.struct_fid_cq) bool {
	return C.rdx_cq_trywait(fab, cq) == 0
}

// wait blocks until the fd is readable (a completion, a kick), for at most
// d, or until close.
//
// The netpoller is edge-triggered, and RawConn.Read forgets an edge that
// came before it (it resets the descriptor's readiness), so the first look
// is a level check of the epoll set itself (epoll_wait with no timeout):
// whatever became ready before the call is seen there, and whatever comes
// after is an edge the netpoller keeps.
func (w *cqWaiter) wait(d time.Duration) {
	if w.file.SetReadDeadline(time.Now().Add(d)) != nil {
		return
	}
	looked := false
	_ = w.rc.Read(func(fd uintptr) bool {
		if looked {
			return true // the netpoller saw the fd readable
		}
		looked = true
		return epollReady(int(fd))
	})
}

// epollReady reports whether the epoll set fd has an event ready now.
func epollReady(fd int) bool {
	var ev [1]unix.EpollEvent
	for {
		n, err := unix.EpollWait(fd, ev[:], 0)
		if err == unix.EINTR {
			continue
		}
		return n > 0 || err != nil // an error: look again rather than block
	}
}

// close unregisters and closes the dup.
func (w *cqWaiter) close() { w.file.Close() }

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
//
// The fd is in the netpoller only while a wait blocks (a dup registered
// for that wait, closed after it). The wait fd is an epoll set that holds
// the provider's sockets and becomes readable whenever data arrives; left
// registered, every arrival while the ranks poll would wake a thread
// parked in the netpoller for nothing, and on few cores those wake-ups
// take the core of a polling rank (a barrier across hosts pays several per
// round: scripts/twohosts.sh collectives).
type cqWaiter struct {
	fd int // libfabric's wait fd (owned by the CQ)
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
	w := &cqWaiter{fd: int(fd)}
	// A file the netpoller does not take has no deadlines: no waiter.
	f, _, err := w.register()
	if err != nil {
		return nil
	}
	f.Close()
	return w
}

// register returns a dup of the wait fd registered with the netpoller, so
// that closing it leaves libfabric's fd open. The dup shares the fd's
// flags, and non-blocking mode changes nothing for an epoll fd (its waits
// carry their own timeout).
func (w *cqWaiter) register() (*os.File, syscall.RawConn, error) {
	dup, err := unix.FcntlInt(uintptr(w.fd), unix.F_DUPFD_CLOEXEC, 0)
	if err != nil {
		return nil, nil, err
	}
	if err := unix.SetNonblock(dup, true); err != nil {
		unix.Close(dup)
		return nil, nil, err
	}
	f := os.NewFile(uintptr(dup), "ofi-cq-wait")
	rc, err := f.SyscallConn()
	if err == nil {
		err = f.SetReadDeadline(time.Time{})
	}
	if err != nil {
		f.Close()
		return nil, nil, err
	}
	return f, rc, nil
}

// tryWait reports whether the CQ may be waited on: nothing is pending
// (fi_trywait returned FI_SUCCESS, not -FI_EAGAIN). It also resets a
// kick's signal.
func (w *cqWaiter) tryWait(fab *C.struct_fid_fabric, cq *C.struct_fid_cq) bool {
	return C.rdx_cq_trywait(fab, cq) == 0
}

// wait blocks until the fd is readable (a completion, a kick), for at most
// d.
//
// The netpoller is edge-triggered, and RawConn.Read forgets an edge that
// came before it (it resets the descriptor's readiness), so the first look
// is a level check of the epoll set itself (epoll_wait with no timeout):
// whatever became ready before the call is seen there, and whatever comes
// after is an edge the netpoller keeps. Where no dup can be registered
// (out of descriptors), the thread blocks in epoll_wait itself.
func (w *cqWaiter) wait(d time.Duration) {
	f, rc, err := w.register()
	if err != nil {
		var ev [1]unix.EpollEvent
		_, _ = unix.EpollWait(w.fd, ev[:], max(1, int(d/time.Millisecond)))
		return
	}
	defer f.Close()
	if f.SetReadDeadline(time.Now().Add(d)) != nil {
		return
	}
	looked := false
	_ = rc.Read(func(fd uintptr) bool {
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

// close ends the waiter; the fd is the CQ's, closed with it.
func (w *cqWaiter) close() {}

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
// The fd is in the netpoller only around blocks: a wait registers a dup
// of it, and the registration stays while blocks follow each other, but
// goes once the CQ has been read for regKeep without one (drop). The wait
// fd is an epoll set of the provider's sockets, readable whenever data
// arrives; registered while the ranks poll, every arrival would wake a
// thread parked in the netpoller for nothing, and on few cores those
// wake-ups take a polling rank's core (a barrier across hosts pays several
// per round: scripts/twohosts.sh collectives). Registering costs about
// eight system calls, which a rank that blocks for every message (a
// blocking ping-pong) would pay twice a round trip.
//
// Its methods are called with the CQ's lock held (Provider.pollMu).
type cqWaiter struct {
	fd    int             // libfabric's wait fd (owned by the CQ)
	reg   *os.File        // a registered dup of fd, or nil
	rc    syscall.RawConn // reg's
	ended time.Time       // when the last block ended
}

// regKeep is how long a registration outlives its last block while the
// CQ is read (drop): longer than a blocking ping-pong's spin between two
// blocks, shorter than a polling rank's tolerance for wasted wake-ups.
const regKeep = time.Millisecond

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
	// The dups share the fd's file status flags: non-blocking once for
	// all, which changes nothing for an epoll fd (its waits carry their
	// own timeout).
	if err := unix.SetNonblock(int(fd), true); err != nil {
		return nil
	}
	w := &cqWaiter{fd: int(fd)}
	// A file the netpoller does not take has no deadlines: no waiter.
	if w.register() != nil {
		return nil
	}
	w.drop()
	return w
}

// register registers a dup of the wait fd with the netpoller (reg), so
// that closing it leaves libfabric's fd open.
func (w *cqWaiter) register() error {
	dup, err := unix.FcntlInt(uintptr(w.fd), unix.F_DUPFD_CLOEXEC, 0)
	if err != nil {
		return err
	}
	f := os.NewFile(uintptr(dup), "ofi-cq-wait")
	rc, err := f.SyscallConn()
	if err == nil {
		err = f.SetReadDeadline(time.Time{})
	}
	if err != nil {
		f.Close()
		return err
	}
	w.reg, w.rc = f, rc
	return nil
}

// drop unregisters the dup and closes it.
func (w *cqWaiter) drop() {
	if w.reg != nil {
		w.reg.Close()
		w.reg, w.rc = nil, nil
	}
}

// read is told of a read of the CQ that did not block: it drops the
// registration once no block came for regKeep.
func (w *cqWaiter) read() {
	if w.reg != nil && time.Since(w.ended) > regKeep {
		w.drop()
	}
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
	defer func() { w.ended = time.Now() }()
	if w.reg == nil && w.register() != nil {
		var ev [1]unix.EpollEvent
		_, _ = unix.EpollWait(w.fd, ev[:], max(1, int(d/time.Millisecond)))
		return
	}
	if w.reg.SetReadDeadline(time.Now().Add(d)) != nil {
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

// close ends the waiter: it drops the registration; the fd is the CQ's,
// closed with it.
func (w *cqWaiter) close() { w.drop() }

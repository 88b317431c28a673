// Package shm is the default rdma provider: ranks on one host, in one
// process (goroutine ranks) or in several, write each other's memory
// through shared-memory mappings. It is pure Go (no cgo) and Linux only;
// it registers itself as "shm".
//
// # Contract
//
// A put is a copy into the mapped peer window followed by a
// sequentially-consistent atomic add on the peer's signal word; a reader
// that observes the add with an atomic load observes the data of that put
// and of every put executed before it on the same QP: strong signals
// (rdma.Capabilities.StrongSignals). Go's sync/atomic operations are
// sequentially consistent (Go memory model), i.e. release on the add and
// acquire on the load on amd64 and arm64, and the hardware orders the
// physical pages whatever virtual address each rank maps them at. This is
// gin's LSA path and the shm analogue of NCCL's LSA puts
// (nccl_device, NCCL 2.28).
//
// WQEs execute inside QP.Post, in order; each completion is reported to the
// QP's handler before Post returns (rdma.Capabilities.Inline), so Progress
// never has work. Ranges, words and sizes are validated once, by gin
// (rdma.CheckWQE; rdma.Checked runs it in front of the QP in checking
// builds); a range outside its window panics rather than write past it.
// Per WQE, Post checks what needs its own state first and writes nothing
// of a WQE that fails:
//
//   - OpWrite, OpRead: Local is a *Region of this provider and Remote an
//     import of this provider from the QP's peer (both non-nil and open).
//   - Signals (Mode != SignalNone, on OpWrite or OpSignal): Signal.Region is
//     an open import from the peer.
//   - Signal mode (ncclGin_SignalInc, nccl_device/gin.h, NCCL 2.28: "may not
//     be mixed with other signal-modifying operations without an intervening
//     signal reset"): the mode word holds 0 (unset), 1 (SignalInc seen) or 2
//     (SignalAdd seen). The first op after a reset claims it with a CAS; an
//     op of the other mode fails with rdma.ErrMixedSignalOps and adds
//     nothing. A reset stores 0 in the signal and its mode word (the owner
//     does it, and it may not race with concurrent signal updates, as in
//     NCCL). SignalVA has no mode word.
//   - SignalInc adds 1 whatever Value holds; SignalAdd and SignalVA add Value.
//
// What it does not promise: nothing about a peer that died. A put into the
// import of a dead rank's region succeeds (the pages outlive the rank) and
// nobody reads it; detecting lost ranks is the control plane's job.
//
// # Files and cleanup
//
// Each exported region is one shared-memory file, which must not outlive
// the job even if a rank or the launcher is killed with SIGKILL at any
// moment. EnvFiles (RDMACTOR_SHM_FILES) chooses how, per exporting rank;
// the descriptor says which, and importers follow it:
//
//   - memfd (default): memfd_create(2) makes a file named
//     rdmactor-<job>-r<rank>-<seq> that is in no directory. The owner keeps
//     its descriptor until the region's Close; a peer opens it as
//     /proc/<owner pid>/fd/<fd>, after checking with readlink that it is
//     that rank's region of this job, so ranks must share a PID namespace
//     (and a user). The pages go with the last descriptor and mapping:
//     nothing to remove, nothing a kill can leave. Unlink is a no-op; an
//     Import after the owner exited or closed the region fails with
//     ErrOwnerGone.
//   - named: the file /dev/shm/rdmactor-<job>-r<rank>-<seq> (os.TempDir()
//     without /dev/shm), for ranks that share /dev/shm but not a PID
//     namespace (separate containers). Three mechanisms remove it:
//     Unlink (Region.Unlink, Provider.Unlink, through the Unlinker
//     interface), which gin calls once every peer has imported (after a
//     barrier), mappings staying valid; Close of a region or of the
//     Provider, for files not yet unlinked; and Cleanup(job), which the
//     launcher runs once the ranks have exited, for ranks killed between
//     registration and Unlink.
//
// # Concurrency
//
// A Provider is safe for concurrent use; each QP is posted to by one
// goroutine at a time (package rdma caller duty 1). Closing a region while
// a Post names it is safe: Post pins the regions of a WQE while it runs, and
// Close waits for pins to drop before unmapping, so such a Post either
// completes or fails with rdma.ErrClosed; it never touches unmapped memory.
//
// # Unsafe
//
// The package itself has no unsafe code: mmap.go owns the system calls and
// draws the file layout, and internal/memword makes the *atomic.Uint64
// views of signal and mode words.
package shm

// Package gpu is rdmactor's GPU transport: CUDA kernels put, signal and
// wait across ranks themselves, through the device-side API
// rdmactor/gin.cuh (the twin of NCCL's ncclGin device API, nccl_device/
// gin.h, NCCL 2.28-2.30), over the same gin.Comm the Go side uses. CUDA
// is reached through package cuda (driver API and NVRTC loaded at run time
// with purego: no cgo, CGO_ENABLED=0 builds run on GPU hosts).
//
// # Usage
//
//	gc, _ := gin.Init(ctx, gin.Config{})              // one rank of an rdmarun job
//	g, _ := gpu.New(ctx, gc, gpu.Config{})            // collective: device, path, signals
//	win, _ := g.RegisterWindow(ctx, 1<<20)            // collective
//	mod, _ := g.Load("k.cu", src)                     // NVRTC, gin.cuh on the include path, cached
//	fn, _ := mod.Function("k")
//	err := g.Run(ctx, fn, cuda.Dim3{X: 1}, cuda.Dim3{X: 256}, 0, g.DevComm(), win.Handle())
//
// and in k.cu:
//
//	#include "rdmactor/gin.cuh"
//	extern "C" __global__ void k(const __grid_constant__ rdmactor::DevComm comm, rdmactor::Window win) {
//	  rdmactor::Gin gin(comm, 0);
//	  gin.put(rdmactor::teamWorld(comm), 1, win, 0, win, 0, 4096, rdmactor::SignalInc{0});
//	}
//
// # Paths
//
// New picks one per Comm (Config.Path), the same on every rank:
//
//   - LSA (PathLSA): every rank's windows and signal words are device
//     memory mapped into every kernel (peer access for ranks of one
//     process, CUDA IPC for ranks in other processes of the host). A put is
//     a cooperative vectorized copy into the peer's window, then a
//     system-scope release add on the peer's signal; waits are acquire
//     loads. Used when every rank can map every other (NVLink, PCIe P2P, or
//     ranks sharing a GPU).
//   - Proxy (PathProxy): windows are gin windows (host memory of the
//     gin.Comm's provider) mapped into the device; a kernel reserves slots
//     of a pinned SQ ring with atomicAdd, writes 64-byte WQEs, publishes
//     them in order and rings the doorbell by storing the producer index
//     (package ring, as in DeepEP's use of NVSHMEM IBGDA; lanes of a warp
//     posting together share one reservation and one doorbell); a CPU
//     proxy per ring, a protoactor-go actor in the gin.Comm's actor
//     system, posts each WQE with gin (Put, PutValue, Signal on the same gin
//     context, so gin's strong signals carry over), ticks counters once gin
//     says the source is consumed, and moves the ring's completed index for
//     flush. Device signals are gin's own indexed signals (device signal s
//     is gin signal s): gin's signal words are mapped into the device
//     (cuMemHostRegister), peers' proxies add to them with
//     gin.SignalInc/SignalAdd, kernels poll them, and gin's check that a
//     signal does not mix the two between resets covers kernels too. This is
//     how a GPU reaches a NIC without GPU-direct posting.
//
// # Caller duties
//
//  1. New, RegisterWindow and Window.Close are collective: every rank, same
//     order, equal sizes. Comm.Close is local, after a barrier.
//  2. Device signals and barriers take gin signal indices: Signals+Barriers
//     may not exceed the gin.Comm's Signals() (the defaults share them).
//     On the proxy path Go code may use the same signals through gin
//     (GinSignals); they are one set of words.
//  3. Kernels check the results of waits: false means the host aborted
//     (Abort, or the context given to Wait ended); they should return.
//  4. Close a Comm only when no kernel of any rank still uses it (after a
//     gin barrier), and before closing the gin.Comm under it.
//  5. Ranks sharing a GPU in one process share its CUDA context, and
//     module loads, allocations and frees synchronize a context: finish
//     them on every rank (a gin barrier) before launching kernels that
//     wait on peers, or such a call waits for a kernel that waits for it.
//  6. The device rules of gin.cuh: signal modes not mixed between resets,
//     resets not racing updates, sources reused only after flush. On the
//     proxy path a kernel's resetSignal clears the value, not gin's record
//     of the mode; switch a signal between SignalInc and SignalAdd only
//     after Comm.ResetSignal from the host.
//
// # What is not promised
//
// Flush says nothing about the peer (gin.h: "Makes no claims regarding the
// completion status on the remote peer(s)"). After an abort, a proxy ring
// may hold a reservation that was never published: the Comm's rings are
// unusable and a new Comm is needed (LSA Comms only need ClearAbort). A
// failed proxy is not restarted. Signals are strong within a context on
// both paths; nothing is ordered across contexts. The SignalInc/SignalAdd
// mixing check exists on the proxy path only (gin does it); LSA kernels
// signal device memory directly, unchecked. Device-side errors (bounds,
// peers, indices) skip the call and are reported by DeviceError, not by
// the kernel.
//
// # Implementation notes
//
// layout.go and ring/layout.go repeat the layouts of
// include/rdmactor/impl/gin__types.cuh; TestLayoutTwin compares them with
// what the compiler laid out. Ranks exchange where they run, device
// pointers and CUDA IPC handles with gin.Comm.AllGather (exchange.go).
//
// The proxies (proxy.go) are actors, children of one supervisor per Comm
// in gin.Comm.ActorSystem. A GPU cannot wake a CPU, so each polls: a
// drain message handles a bounded round (some batches, some empty polls,
// or one park of the idle backoff, up to 100 µs) and re-sends itself, so
// Stop and fault messages get through between rounds. A fault (gin refused
// a WQE, a torn ring, a lost peer from gin.Comm.OnPeerLost) sets the ring's
// status and the abort flag, then panics in Receive; the supervisor's
// strategy records it (Faults) and stops the actor.
//
// Where gin's signal words do not start on a page (so cannot be mapped
// with cuMemHostRegister; the shm and ofi providers always map theirs),
// device signals fall back to VA signals of a gin window of their own,
// without the mixing check (GinSignals reports false).
package gpu

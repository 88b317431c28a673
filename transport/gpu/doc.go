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
//     (package ring, seed 003; lanes of a warp posting together share one
//     reservation and one doorbell); a CPU proxy per ring posts each WQE with
//     gin (Put, PutValue, Signal on the same gin context, so gin's strong
//     signals carry over), ticks counters once gin says the source is
//     consumed, and moves the ring's completed index for flush. Device
//     signals are VA signals of a gin window (StrictOrdering) mapped into
//     the device, so peers' proxies add to them with gin and kernels poll
//     them. This is how a GPU reaches a NIC without GPU-direct posting.
//
// # Caller duties
//
//  1. New, RegisterWindow and Close-after-barrier are collective: every
//     rank, same order, equal sizes.
//  2. Kernels check the results of waits: false means the host aborted
//     (Abort, or the context given to Wait ended); they should return.
//  3. Close a Comm only when no kernel of any rank still uses it (after a
//     gin barrier), and before closing the gin.Comm under it.
//  4. Ranks sharing a GPU in one process share its CUDA context, and
//     module loads, allocations and frees synchronize a context: finish
//     them on every rank (a gin barrier) before launching kernels that
//     wait on peers, or such a call waits for a kernel that waits for it.
//  5. The device rules of gin.cuh: signal modes not mixed between resets,
//     resets not racing updates, sources reused only after flush.
//
// # What is not promised
//
// Flush says nothing about the peer (gin.h: "Makes no claims regarding the
// completion status on the remote peer(s)"). After an abort, a proxy ring
// may hold a reservation that was never published: the Comm's rings are
// unusable and a new Comm is needed (LSA Comms only need ClearAbort).
// Signals are strong within a context on both paths; nothing is ordered
// across contexts. Device-side errors (bounds, peers, indices) skip the
// call and are reported by DeviceError, not by the kernel.
//
// # Implementation notes
//
// layout.go and ring/layout.go repeat the layouts of
// include/rdmactor/impl/gin__types.cuh; TestLayoutTwin compares them with
// what the compiler laid out. Until gin.Comm has a public AllGather, ranks
// exchange device pointers and IPC handles through a gin window with VA
// signals (exchange.go). The proxies are goroutines polling their rings
// (a GPU cannot wake a CPU); they back off to 100 µs sleeps when idle.
package gpu

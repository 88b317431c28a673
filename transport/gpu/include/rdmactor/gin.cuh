// gin.cuh: rdmactor's device-side one-sided API, what a CUDA kernel calls
// to put, signal and wait across ranks. It mirrors ncclGin
// (nccl_device/gin.h, NCCL 2.28-2.30) and keeps its semantics;
// the Go side of the same objects is package transport/gpu.
//
// This file is the readable contract: types, prototypes, what each call
// promises and what it does not. Bodies live in impl/ (NCCL keeps gin.h
// and impl/gin__funcs.h apart the same way).
//
// Usage, in a kernel compiled by transport/gpu (NVRTC, include path set):
//
//   #include "rdmactor/gin.cuh"
//   using namespace rdmactor;
//   extern "C" __global__ void ping(const __grid_constant__ DevComm comm, Window win) {
//     Gin gin(comm, 0);                                  // context 0
//     Team world = teamWorld(comm);
//     gin.put(world, 1, win, 0, win, 4096, 4096, SignalInc{0}, None{}, CoopBlock{});
//     gin.waitSignal(CoopBlock{}, 0, 1);                 // false if the host aborted
//   }
//
// Two paths behind one API, fixed per communicator when the host built it
// (gpu.Config.Path):
//  - LSA (NVLink or PCIe peers, one host): every peer's windows and signal
//    words are mapped into this kernel's address space. A put is a
//    cooperative vectorized copy into the peer window followed by a
//    system-scope release add on the peer's signal; waits are acquire loads.
//  - Proxy: the kernel reserves slots of a pinned, device-mapped SQ ring
//    with atomicAdd, writes 64-byte WQE descriptors, publishes them in
//    order and rings the doorbell by storing the producer index (as
//    NVSHMEM's IBGDA transport does with a NIC's send queue).
//    A CPU proxy of the owning rank drains the ring and posts each WQE on
//    the CPU provider (shm, ofi); it ticks counters on completion, and
//    remote signals are the target rank's gin signals: they land in gin's
//    own signal words, mapped into the target's device, which its kernels
//    poll.
//
// Caller duties:
//  1. Every thread of a coop argument calls the function with equal
//     arguments (CoopWarp: all 32 lanes of the warp; CoopBlock: every
//     thread of the block), as with NCCL's ncclCoop*.
//  2. Between two resets a signal sees only SignalInc or only SignalAdd
//     (ncclGin_SignalInc: "may not be mixed with other signal-modifying
//     operations without an intervening signal reset"). Not checked on the
//     device; on the proxy path gin checks it at the target (the proxy
//     fails with gin.ErrMixedSignalOps and aborts the kernel), on LSA
//     nothing does.
//  3. resetSignal/resetCounter "may not race with concurrent
//     modifications" (gin.h): reset when no peer can be signalling.
//  4. A put's source may change only after flush() returned or its
//     CounterInc ticked.
//  5. Waits return false when the host set the abort flag
//     (gpu.Comm.Abort, or a Go deadline that ended): a kernel that sees
//     false should return. Nothing on the device waits forever. The
//     overloads that take a Timeout also end by themselves and say why
//     in a WaitResult (NCCL 2.31 added timeouts to device waits).
//
// Errors (an offset outside a window, a peer outside the team, an unknown
// signal or counter, a putValue size other than 1/2/4/8) are not
// performed: the first one is recorded for the host (gpu.Comm.DeviceError)
// and the call returns. Never a corrupted peer.
#pragma once

#include "rdmactor/impl/gin__types.cuh"

namespace rdmactor {

typedef unsigned long long u64;
typedef unsigned int u32;

// DevComm is the communicator as kernels see it (ncclDevComm): pass
// gpu.Comm.DevComm() as a kernel argument, by value, preferably
// `const __grid_constant__ DevComm comm`. Fields are implementation.
typedef impl::DevComm DevComm;

// Window is a registered window (ncclWindow_t): pass gpu.Window.Handle().
typedef const impl::WindowDesc* Window;

// Signal and Counter are indices (ncclGinSignal_t, ncclGinCounter_t):
// signals 0..gpu.Config.Signals-1, counters 0..gpu.Config.Counters-1.
typedef u32 Signal;
typedef u32 Counter;

// Team: member p is world rank comm.rank + (p - rank) * stride (ncclTeam).
struct Team {
  int rank;    // the caller's index in the team
  int nRanks;  // members
  int stride;  // world-rank distance between consecutive members
};
__device__ Team teamWorld(const DevComm& comm);  // every rank
__device__ Team teamLsa(const DevComm& comm);    // ranks of this host / NVLink domain

// Thread groups (ncclCoopThread / ncclCoopWarp / ncclCoopCta): who
// cooperates in one call. Data moves with all of them; one of them posts.
struct CoopThread {
  __device__ int size() const;
  __device__ int rank() const;
  __device__ void sync() const;
};
struct CoopWarp {  // the whole warp of the calling thread
  __device__ int size() const;
  __device__ int rank() const;
  __device__ void sync() const;
};
struct CoopBlock {  // every thread of the block
  __device__ int size() const;
  __device__ int rank() const;
  __device__ void sync() const;
};

// Remote actions, applied at the peer once the put's data is settled.
struct None {};                                 // ncclGin_None
struct SignalInc { Signal signal; };            // ncclGin_SignalInc: +1
struct SignalAdd { Signal signal; u64 value; }; // ncclGin_SignalAdd: +value
// Local action, applied here once the source was consumed.
struct CounterInc { Counter counter; };         // ncclGin_CounterInc

// WaitResult: how a wait with a Timeout ended (NCCL 2.31's timed device
// waits return ncclResult_t, ncclTimeout when the budget ran out; here the
// host's abort flag has a code of its own).
enum class WaitResult : u32 {
  Ok = 0,       // the condition holds (acquire ordering, as the bool waits)
  Aborted = 1,  // the host set the abort flag (gpu.Comm.Abort, a Go deadline)
  Timeout = 2,  // the Timeout passed first
  Invalid = 3,  // bad arguments (unknown signal or counter, bad barrier
                // index or peer): recorded for gpu.Comm.DeviceError
};

// Timeout bounds a wait: at most ns nanoseconds of the GPU's global timer
// (%globaltimer, PTX ISA; NCCL 2.31 counts clock64 cycles instead, which
// vary with the SM clock). The wait looks at the timer every 8 polls, so
// it may overrun by a few polls (under 2 us once it sleeps between polls).
// A wait whose condition already holds returns Ok even with Timeout{0};
// Timeout::forever() waits until the condition holds or the host aborts.
struct Timeout {
  u64 ns;
  static __device__ __forceinline__ Timeout forever() { return Timeout{~0ull}; }
};

// Fence: what BarrierSession::sync orders besides arrival
// (ncclGinFenceLevel, NCCL 2.32); combine with |.
enum Fence : u32 {
  // FenceNone: arrival only. Each member's puts to a peer on the same
  // context before the barrier are visible at that peer after it anyway
  // (strong signals: the arrival signal implies them), except its puts
  // to itself.
  FenceNone = 0,
  // FencePut: also signal and wait for the caller's own arrival, so its
  // loopback puts are visible after the barrier too
  // (ncclGinFenceLevel::Put, which adds the own slot the same way; here
  // the own arrival is a lane of the barrier's one signal word: a
  // SignalAdd of 2^32, so on the proxy path it needs a provider with
  // gin's Capabilities.SignalAdd, else the proxy fails and aborts).
  FencePut = 1,
  // FenceGet: the gets this coop issued through the session's Gin before
  // sync have landed when it returns: a flush after the arrivals
  // (ncclGinFenceLevel::Get), so peers do not wait for this rank's gets.
  FenceGet = 2,
};
__device__ __forceinline__ Fence operator|(Fence a, Fence b) { return Fence((u32)a | (u32)b); }

// Gin: one context (ordering domain) of the communicator, as ncclGin.
// Construct one per thread; it is a few registers.
class Gin {
 public:
  __device__ Gin(const DevComm& comm, int contextIndex);

  // put copies bytes bytes from this rank's part of src at srcOffset to
  // peer's part of dst at dstOffset (ncclGin::put). peer is a member of
  // team; it may be this rank (loopback).
  //
  // Strong signal: when remote's signal is visible at the peer, the data of
  // this put and of every earlier put of this context to that peer is
  // visible (gin.h: "The visibility of the signal on the destination peer
  // implies the visibility of the put data it is attached to and all the
  // preceding puts to the same peer, provided that they were issued using
  // the same GIN context").
  //
  // Not promised: that the data arrived when put returns (wait for a
  // signal); on the proxy path, that the source may be reused (flush, or
  // CounterInc). On LSA, put returns after the copy, so the source is
  // consumed at return.
  template <typename RemoteAction = None, typename LocalAction = None, typename Coop = CoopThread>
  __device__ void put(Team team, int peer, Window dst, u64 dstOffset, Window src, u64 srcOffset, u64 bytes,
                      RemoteAction remote = RemoteAction{}, LocalAction local = LocalAction{},
                      Coop coop = Coop{});

  // putValue writes sizeof(T) (1, 2, 4 or 8) bytes of value to peer's part
  // of dst at dstOffset (ncclGin::putValue). The value travels in the WQE
  // (proxy) or is stored directly (LSA): nothing of the caller's is read
  // after return.
  template <typename T, typename RemoteAction = None, typename Coop = CoopThread>
  __device__ void putValue(Team team, int peer, Window dst, u64 dstOffset, T value,
                           RemoteAction remote = RemoteAction{}, Coop coop = Coop{});

  // signal applies remote at the peer with no data (ncclGin::signal); it
  // implies the earlier puts of this context to that peer, as a put's does.
  template <typename RemoteAction, typename Coop = CoopThread>
  __device__ void signal(Team team, int peer, RemoteAction remote, Coop coop = Coop{});

  // get copies bytes bytes of peer's part of src at srcOffset into this
  // rank's part of dst at dstOffset: a one-sided read (ncclGin::get, NCCL
  // 2.30). CounterInc ticks once the bytes have landed, and flush covers
  // gets. Not ordered after this context's earlier puts: read what a put
  // wrote once its signal was seen. On LSA it returns after the copy.
  template <typename LocalAction = None, typename Coop = CoopThread>
  __device__ void get(Team team, int peer, Window dst, u64 dstOffset, Window src, u64 srcOffset, u64 bytes,
                      LocalAction local = LocalAction{}, Coop coop = Coop{});

  // flush waits until every put and get that coop's threads issued
  // through this Gin is locally complete: sources reusable, gets landed
  // (ncclGin::flush). It "makes no claims regarding the completion status
  // on the remote peer(s)". Returns false if aborted.
  template <typename Coop = CoopThread>
  __device__ bool flush(Coop coop = Coop{});
  // flush with a time bound: Ok once complete, Aborted, or Timeout when
  // t passed first (the operations are still in flight then).
  template <typename Coop>
  __device__ WaitResult flush(Coop coop, Timeout t);

  // readSignal returns the low bits bits of signal s with acquire ordering:
  // data whose signal increment it observes is visible (ncclGin::readSignal).
  __device__ u64 readSignal(Signal s, int bits = 64) const;
  // waitSignal waits until the low bits bits of s reach least in rolling
  // order: a <= b iff ((b - a) & m) <= m >> 1 (ncclGin::waitSignal). One
  // thread of coop polls; all return the same result: true once reached,
  // false when the host aborted. It polls relaxed and sleeps ~128 ns
  // between polls after the first 64 (polling blocks slow other blocks'
  // NVLink puts: docs/moe_gpu.md); acquire ordering holds on return.
  template <typename Coop>
  __device__ bool waitSignal(Coop coop, Signal s, u64 least, int bits = 64);
  // waitSignal with a time bound: the same wait, ending with Ok, Aborted,
  // Timeout once t passed, or Invalid for an unknown signal. Every thread
  // of coop returns the same result.
  template <typename Coop>
  __device__ WaitResult waitSignal(Coop coop, Signal s, u64 least, Timeout t, int bits = 64);
  // resetSignal sets s to 0 (ncclGin::resetSignal; duty 3). On the proxy
  // path it clears the value, not gin's record of the signal's mode: to
  // switch s between SignalInc and SignalAdd there, reset it from the host
  // (gpu.Comm.ResetSignal).
  __device__ void resetSignal(Signal s);

  // Counters: local, 56 bits, ticked by CounterInc (ncclGin::*Counter).
  __device__ u64 readCounter(Counter c, int bits = 56) const;
  template <typename Coop>
  __device__ bool waitCounter(Coop coop, Counter c, u64 least, int bits = 56);
  // waitCounter with a time bound, as waitSignal's.
  template <typename Coop>
  __device__ WaitResult waitCounter(Coop coop, Counter c, u64 least, Timeout t, int bits = 56);
  __device__ void resetCounter(Counter c);

  // aborted reports whether the host set the abort flag.
  __device__ bool aborted() const;

  // Implementation state (public so that impl/ can reach it; do not use).
  const DevComm* comm_;
  int ctx_;
  u64 issued_;  // proxy: ring sequence after this thread's last WQE
};

// BarrierSession: a barrier over a team built from signal increments
// (ncclGinBarrierSession). index picks one of gpu.Config.Barriers barrier
// signals; use a different index per coop that syncs concurrently (e.g.
// blockIdx.x) and one index per team. sync returns when every team member
// has entered the same round; what each member put to the others before
// it (same context) is visible after it: sync(coop) is sync(coop,
// FenceNone). Fences may differ between members and rounds. Returns false
// if aborted.
//
// The timed sync returns Timeout when t passed before every member
// arrived (or before FenceGet's flush completed). The round is then left
// half done: this rank's arrival was signalled and counted, so the
// session no longer agrees with its peers (as Go's barrier.ErrBroken);
// the kernel should return and the host treat the communicator as failed.
template <typename Coop>
class BarrierSession {
 public:
  __device__ BarrierSession(Coop coop, Gin& gin, Team team, u32 index);
  __device__ bool sync(Coop coop);
  __device__ bool sync(Coop coop, Fence fence);
  __device__ WaitResult sync(Coop coop, Fence fence, Timeout t);

  Gin* gin_;
  Team team_;
  u32 signal_;
};

// localPointer is this rank's part of w at offset, as this kernel
// addresses it (device memory on LSA, device-mapped host memory on proxy).
__device__ void* localPointer(Window w, u64 offset);
// lsaPointer is peer's part of w at offset, mapped here (LSA only;
// nullptr on the proxy path or for a peer outside the team).
__device__ void* lsaPointer(const DevComm& comm, Window w, Team team, int peer, u64 offset);

// Overlapped launches (gpu.Comm.LaunchOverlapped; CUDA's programmatic
// dependent launch, sm_90 and later): such a kernel may start while the
// kernel ahead of it on the stream is still finishing, so its launch and
// prologue overlap that kernel's tail. It must not touch memory that
// earlier work on the stream writes or reads before waitPrior returned.
// Every call of Gin and BarrierSession waits so itself before it touches
// data, signals or counters (put and get after reading the windows'
// descriptors, which no kernel writes, so those loads overlap too): a
// kernel that reaches such memory only through them needs no waitPrior
// of its own. Launched with gpu.Comm.Launch, or compiled for an arch
// before sm_90, both calls below return at once.
//
// waitPrior waits until every kernel and copy queued ahead of this kernel
// completed and its memory operations are visible
// (cudaGridDependencySynchronize, PTX griddepcontrol.wait).
__device__ void waitPrior();
// launchDependents lets the next overlapped kernel on the stream start
// once every block of this one called it or exited
// (cudaTriggerProgrammaticLaunchCompletion, griddepcontrol.launch_dependents);
// that kernel's blocks then share the SMs with this one's. Without it the
// next kernel starts as this one's blocks exit, before its memory flush.
__device__ void launchDependents();

}  // namespace rdmactor

#include "rdmactor/impl/gin__funcs.cuh"

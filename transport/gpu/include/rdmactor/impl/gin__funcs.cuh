// impl/gin__funcs.cuh: bodies of gin.cuh. The LSA and proxy halves of each
// call are in gin__lsa.cuh and gin__proxy.cuh; this file holds what they
// share (teams, coops, checks, waits) and the dispatch on DevComm.path.
#pragma once

#include "rdmactor/impl/gin__atomics.cuh"

namespace rdmactor {
namespace impl {

__device__ __forceinline__ int linearTid() {
  return threadIdx.x + blockDim.x * (threadIdx.y + blockDim.y * threadIdx.z);
}

__device__ __forceinline__ u64 mask(int bits) { return bits >= 64 ? ~0ull : (1ull << bits) - 1; }

// rollingLE: a <= b in the rolling order of a counter with mask m
// (NCCL's rolling comparison; gin/rolling.go has the Go twin).
__device__ __forceinline__ bool rollingLE(u64 a, u64 b, u64 m) { return ((b - a) & m) <= (m >> 1); }

// fail records the first device-side error for the host; later ones are
// dropped (gpu.Comm.DeviceError reads it).
__device__ __forceinline__ void fail(const DevComm& c, u32 code, u32 detail) {
  atomicCAS(reinterpret_cast<unsigned long long*>(c.status), 0ull, ((u64)code << 32) | detail);
}

__device__ __forceinline__ bool abortSet(const DevComm& c) {
  return ldRelaxedSys(reinterpret_cast<const u64*>(c.abortFlag)) != 0;
}

// globalTimer: the GPU's global nanosecond timer (%globaltimer).
__device__ __forceinline__ u64 globalTimer() {
  u64 t;
  asm volatile("mov.u64 %0, %%globaltimer;" : "=l"(t));
  return t;
}

// noDeadline: a wait without a Timeout.
constexpr u64 noDeadline = ~0ull;

// deadlineOf turns a Timeout into a %globaltimer deadline (saturating).
__device__ __forceinline__ u64 deadlineOf(Timeout t) {
  if (t.ns == noDeadline) return noDeadline;
  const u64 now = globalTimer(), d = now + t.ns;
  return d < now ? noDeadline : d;
}

// spinFor polls until pred() holds, looking at the abort flag every 64
// rounds (a load over PCIe) and at the timer every 8 (a register read)
// when there is a deadline.
template <typename Pred>
__device__ __forceinline__ WaitResult spinFor(const DevComm& c, u64 deadline, Pred pred) {
  for (u32 i = 1;; i++) {
    if (pred()) return WaitResult::Ok;
    if ((i & 63) == 0 && abortSet(c)) return WaitResult::Aborted;
    if (deadline != noDeadline && (i & 7) == 0 && globalTimer() >= deadline) return WaitResult::Timeout;
  }
}

// spinUntil is spinFor without a deadline: false on abort.
template <typename Pred>
__device__ __forceinline__ bool spinUntil(const DevComm& c, Pred pred) {
  return spinFor(c, noDeadline, pred) == WaitResult::Ok;
}

// Polling back-off of waitWord: after waitFastPolls polls, each further
// one sleeps about waitSleepNs first.
constexpr u32 waitFastPolls = 64;
constexpr u32 waitSleepNs = 128;

// waitWord waits until the low bits of *w reach least (rolling, mask m).
// It polls with relaxed loads and takes one acquire load once the value is
// there (the acquire pairs with the signaller's release; coherence makes it
// see at least the polled value). After waitFastPolls polls it sleeps
// between polls: blocks polling back to back slow the NVLink puts of other
// blocks (moe/gpu's normal dispatch, scripts/moe_gpu_device.sh, shows it);
// the sleep costs a wait that was going to be long anyway at most a poll
// interval.
// A deadline (noDeadline: none) ends it with WaitResult::Timeout.
__device__ __forceinline__ WaitResult waitWord(const DevComm& c, const u64* w, u64 least, u64 m, u64 deadline) {
  least &= m;
  u32 polls = 0;
  const WaitResult r = spinFor(c, deadline, [&] {
    if (rollingLE(least, ldRelaxedSys(w) & m, m)) return true;
    if (++polls > waitFastPolls) __nanosleep(waitSleepNs);
    return false;
  });
  if (r == WaitResult::Ok) (void)ldAcquireSys(w);
  return r;
}

// worldRank maps team member peer to a world rank, or -1 (recorded).
__device__ __forceinline__ int worldRank(const DevComm& c, Team t, int peer) {
  int w = c.rank + (peer - t.rank) * t.stride;
  if (peer < 0 || peer >= t.nRanks || w < 0 || w >= c.size) {
    fail(c, ErrPeerOutOfRange, (u32)peer);
    return -1;
  }
  return w;
}

// inBounds: [off, off+n) inside a window of size bytes, without overflow.
__device__ __forceinline__ bool inBounds(const DevComm& c, Window w, u64 off, u64 n) {
  if (w == nullptr || off > w->size || n > w->size - off) {
    fail(c, ErrOutOfBounds, (u32)off);
    return false;
  }
  return true;
}

// bcastResult hands coop rank 0's wait result to the whole coop; also a
// sync point.
__device__ __forceinline__ WaitResult bcastResult(CoopThread, WaitResult v) { return v; }
__device__ __forceinline__ WaitResult bcastResult(CoopWarp, WaitResult v) {
  return (WaitResult)__shfl_sync(0xffffffffu, (u32)v, 0);
}
__device__ __forceinline__ WaitResult bcastResult(CoopBlock c, WaitResult v) {
  __shared__ u32 slot;
  c.sync();
  if (c.rank() == 0) slot = (u32)v;
  c.sync();
  return (WaitResult)slot;
}

// Remote and local actions, decoded.
struct Remote {
  u32 kind;  // RemoteNone, RemoteInc, RemoteAdd
  u32 signal;
  u64 value;
};
__device__ __forceinline__ Remote remoteOf(None) { return Remote{RemoteNone, 0, 0}; }
__device__ __forceinline__ Remote remoteOf(SignalInc a) { return Remote{RemoteInc, a.signal, 1}; }
__device__ __forceinline__ Remote remoteOf(SignalAdd a) { return Remote{RemoteAdd, a.signal, a.value}; }
__device__ __forceinline__ int localOf(None) { return -1; }
__device__ __forceinline__ int localOf(CounterInc a) { return (int)a.counter; }

// signalOK checks a user signal index (barrier signals are internal).
__device__ __forceinline__ bool signalOK(const DevComm& c, const Remote& r) {
  if (r.kind != RemoteNone && r.signal >= (u32)c.nSignals) {
    fail(c, ErrUnknownSignal, r.signal);
    return false;
  }
  return true;
}
__device__ __forceinline__ bool counterOK(const DevComm& c, int ctr) {
  if (ctr >= c.nCounters) {
    fail(c, ErrUnknownCounter, (u32)ctr);
    return false;
  }
  return true;
}

__device__ __forceinline__ u64* signalWord(const DevComm& c, u32 s) { return reinterpret_cast<u64*>(c.signals) + s; }
__device__ __forceinline__ u64* counterWord(const DevComm& c, u32 n) { return reinterpret_cast<u64*>(c.counters) + n; }

}  // namespace impl

// ---- teams and coops ----

__device__ __forceinline__ Team teamWorld(const DevComm& c) { return Team{c.rank, c.size, 1}; }
__device__ __forceinline__ Team teamLsa(const DevComm& c) { return Team{c.rank % c.lsaSize, c.lsaSize, 1}; }

__device__ __forceinline__ int CoopThread::size() const { return 1; }
__device__ __forceinline__ int CoopThread::rank() const { return 0; }
__device__ __forceinline__ void CoopThread::sync() const {}
__device__ __forceinline__ int CoopWarp::size() const { return 32; }
__device__ __forceinline__ int CoopWarp::rank() const { return impl::linearTid() & 31; }
__device__ __forceinline__ void CoopWarp::sync() const { __syncwarp(); }
__device__ __forceinline__ int CoopBlock::size() const { return blockDim.x * blockDim.y * blockDim.z; }
__device__ __forceinline__ int CoopBlock::rank() const { return impl::linearTid(); }
__device__ __forceinline__ void CoopBlock::sync() const { __syncthreads(); }

__device__ __forceinline__ void* localPointer(Window w, u64 offset) {
  return reinterpret_cast<char*>(w->local) + offset;
}

__device__ __forceinline__ void waitPrior() {
#if defined(__CUDA_ARCH__) && __CUDA_ARCH__ >= 900
  asm volatile("griddepcontrol.wait;" ::: "memory");
#endif
}

__device__ __forceinline__ void launchDependents() {
#if defined(__CUDA_ARCH__) && __CUDA_ARCH__ >= 900
  asm volatile("griddepcontrol.launch_dependents;" ::: "memory");
#endif
}

__device__ __forceinline__ void* lsaPointer(const DevComm& c, Window w, Team t, int peer, u64 offset) {
  if (c.path != impl::PathLSA || peer < 0 || peer >= t.nRanks) return nullptr;
  int r = c.rank + (peer - t.rank) * t.stride;
  if (r < 0 || r >= c.size) return nullptr;
  return reinterpret_cast<char*>(reinterpret_cast<const u64*>(w->peers)[r]) + offset;
}

}  // namespace rdmactor

#include "rdmactor/impl/gin__lsa.cuh"
#include "rdmactor/impl/gin__proxy.cuh"

namespace rdmactor {

__device__ __forceinline__ Gin::Gin(const DevComm& comm, int contextIndex)
    : comm_(&comm), ctx_(contextIndex), issued_(0) {}

__device__ __forceinline__ bool Gin::aborted() const { return impl::abortSet(*comm_); }

template <typename R, typename L, typename Coop>
__device__ __forceinline__ void Gin::put(Team team, int peer, Window dst, u64 dstOffset, Window src, u64 srcOffset,
                                         u64 bytes, R remote, L local, Coop coop) {
  const DevComm& c = *comm_;
  impl::Remote r = impl::remoteOf(remote);
  int ctr = impl::localOf(local);
  int w = impl::worldRank(c, team, peer);
  // Every thread of the coop checks the same arguments, so all skip alike.
  if (w < 0 || !impl::inBounds(c, dst, dstOffset, bytes) || !impl::inBounds(c, src, srcOffset, bytes) ||
      !impl::signalOK(c, r) || !impl::counterOK(c, ctr))
    return;
  if (c.path == impl::PathLSA) {
    impl::lsaPut(c, coop, w, dst, dstOffset, src, srcOffset, bytes, r, ctr);  // waits for prior work itself
  } else {
    waitPrior();
    impl::proxyPut(*this, coop, w, dst, dstOffset, src, srcOffset, bytes, r, ctr);
  }
}

template <typename L, typename Coop>
__device__ __forceinline__ void Gin::get(Team team, int peer, Window dst, u64 dstOffset, Window src, u64 srcOffset,
                                         u64 bytes, L local, Coop coop) {
  const DevComm& c = *comm_;
  int ctr = impl::localOf(local);
  int w = impl::worldRank(c, team, peer);
  if (w < 0 || !impl::inBounds(c, dst, dstOffset, bytes) || !impl::inBounds(c, src, srcOffset, bytes) ||
      !impl::counterOK(c, ctr))
    return;
  if (c.path == impl::PathLSA) {
    impl::lsaGet(c, coop, w, dst, dstOffset, src, srcOffset, bytes, ctr);  // waits for prior work itself
  } else {
    waitPrior();
    impl::proxyGet(*this, coop, w, dst, dstOffset, src, srcOffset, bytes, ctr);
  }
}

template <typename T, typename R, typename Coop>
__device__ __forceinline__ void Gin::putValue(Team team, int peer, Window dst, u64 dstOffset, T value, R remote,
                                              Coop coop) {
  typedef impl::u8 u8;
  static_assert(sizeof(T) == 1 || sizeof(T) == 2 || sizeof(T) == 4 || sizeof(T) == 8, "putValue: 1, 2, 4 or 8 bytes");
  const DevComm& c = *comm_;
  impl::Remote r = impl::remoteOf(remote);
  int w = impl::worldRank(c, team, peer);
  if (w < 0 || !impl::inBounds(c, dst, dstOffset, sizeof(T)) || !impl::signalOK(c, r)) return;
  u64 bits = 0;
  const u8* b = reinterpret_cast<const u8*>(&value);
  for (u32 i = 0; i < sizeof(T); i++) bits |= (u64)b[i] << (8 * i);
  waitPrior();
  if (c.path == impl::PathLSA)
    impl::lsaPutValue(c, coop, w, dst, dstOffset, bits, (u32)sizeof(T), r);
  else
    impl::proxyPutValue(*this, coop, w, dst, dstOffset, bits, (u32)sizeof(T), r);
}

template <typename R, typename Coop>
__device__ __forceinline__ void Gin::signal(Team team, int peer, R remote, Coop coop) {
  const DevComm& c = *comm_;
  impl::Remote r = impl::remoteOf(remote);
  int w = impl::worldRank(c, team, peer);
  if (w < 0 || !impl::signalOK(c, r)) return;
  if (r.kind == impl::RemoteNone) {
    impl::fail(c, impl::ErrBadArgument, 0);
    return;
  }
  waitPrior();
  if (c.path == impl::PathLSA)
    impl::lsaSignal(c, coop, w, r);
  else
    impl::proxySignal(*this, coop, w, r);
}

namespace impl {
// flushBy is Gin::flush with a %globaltimer deadline.
template <typename Coop>
__device__ __forceinline__ WaitResult flushBy(Gin& g, Coop coop, u64 deadline) {
  waitPrior();
  if (g.comm_->path == PathLSA) {
    coop.sync();  // every copy of the coop is done: sources are free, gets landed
    return abortSet(*g.comm_) ? WaitResult::Aborted : WaitResult::Ok;
  }
  return proxyFlush(g, coop, deadline);
}
}  // namespace impl

template <typename Coop>
__device__ __forceinline__ bool Gin::flush(Coop coop) {
  return impl::flushBy(*this, coop, impl::noDeadline) == WaitResult::Ok;
}

template <typename Coop>
__device__ __forceinline__ WaitResult Gin::flush(Coop coop, Timeout t) {
  return impl::flushBy(*this, coop, impl::deadlineOf(t));
}

__device__ __forceinline__ u64 Gin::readSignal(Signal s, int bits) const {
  if (s >= (u32)comm_->nSignals) {
    impl::fail(*comm_, impl::ErrUnknownSignal, s);
    return 0;
  }
  waitPrior();
  return impl::ldAcquireSys(impl::signalWord(*comm_, s)) & impl::mask(bits);
}

template <typename Coop>
__device__ __forceinline__ WaitResult Gin::waitSignal(Coop coop, Signal s, u64 least, Timeout t, int bits) {
  if (s >= (u32)comm_->nSignals) {
    impl::fail(*comm_, impl::ErrUnknownSignal, s);
    return WaitResult::Invalid;
  }
  waitPrior();
  WaitResult r = WaitResult::Ok;
  if (coop.rank() == 0)
    r = impl::waitWord(*comm_, impl::signalWord(*comm_, s), least, impl::mask(bits), impl::deadlineOf(t));
  return impl::bcastResult(coop, r);
}

template <typename Coop>
__device__ __forceinline__ bool Gin::waitSignal(Coop coop, Signal s, u64 least, int bits) {
  return waitSignal(coop, s, least, Timeout::forever(), bits) == WaitResult::Ok;
}

__device__ __forceinline__ void Gin::resetSignal(Signal s) {
  if (s >= (u32)comm_->nSignals) {
    impl::fail(*comm_, impl::ErrUnknownSignal, s);
    return;
  }
  waitPrior();
  impl::stRelaxedSys(impl::signalWord(*comm_, s), 0);
  reinterpret_cast<u64*>(comm_->shadows)[s] = 0;
}

__device__ __forceinline__ u64 Gin::readCounter(Counter n, int bits) const {
  if (n >= (u32)comm_->nCounters) {
    impl::fail(*comm_, impl::ErrUnknownCounter, n);
    return 0;
  }
  waitPrior();
  return impl::ldAcquireSys(impl::counterWord(*comm_, n)) & impl::mask(bits < 56 ? bits : 56);
}

template <typename Coop>
__device__ __forceinline__ WaitResult Gin::waitCounter(Coop coop, Counter n, u64 least, Timeout t, int bits) {
  if (n >= (u32)comm_->nCounters) {
    impl::fail(*comm_, impl::ErrUnknownCounter, n);
    return WaitResult::Invalid;
  }
  waitPrior();
  WaitResult r = WaitResult::Ok;
  if (coop.rank() == 0)
    r = impl::waitWord(*comm_, impl::counterWord(*comm_, n), least, impl::mask(bits < 56 ? bits : 56),
                       impl::deadlineOf(t));
  return impl::bcastResult(coop, r);
}

template <typename Coop>
__device__ __forceinline__ bool Gin::waitCounter(Coop coop, Counter n, u64 least, int bits) {
  return waitCounter(coop, n, least, Timeout::forever(), bits) == WaitResult::Ok;
}

__device__ __forceinline__ void Gin::resetCounter(Counter n) {
  if (n >= (u32)comm_->nCounters) {
    impl::fail(*comm_, impl::ErrUnknownCounter, n);
    return;
  }
  waitPrior();
  impl::stRelaxedSys(impl::counterWord(*comm_, n), 0);
}

// ---- barrier ----

template <typename Coop>
__device__ __forceinline__ BarrierSession<Coop>::BarrierSession(Coop, Gin& gin, Team team, u32 index)
    : gin_(&gin), team_(team), signal_((u32)gin.comm_->nSignals + index) {
  if (index >= (u32)gin.comm_->nBarriers) {
    impl::fail(*gin.comm_, impl::ErrUnknownSignal, signal_);
    signal_ = ~0u;
  }
}

// sync: every member adds 1 to the barrier signal of every other member,
// in rotated order (rank+1, rank+2, ...), and with FencePut adds selfLane
// to its own, after them; then it waits until its own signal reached the
// sum kept in the signal's shadow, which only this rank changes, so no
// reset is ever needed (rolling compare over 64 bits). A peer is never
// more than one round ahead of a member still waiting (it cannot leave a
// round before every member entered it), so the peers' part of the sum
// cannot be met early by their next round; the own arrival is counted in
// a lane of its own (selfLane, far above n-1 peer arrivals) because the
// peers do not wait for it: one word holds both without the next round's
// peer arrivals standing in for a self-signal still in flight (on the
// proxy path a loopback signal and the peers' are posted apart). Every
// update is SignalAdd, so gin's mode check sees one mode. FenceGet then
// flushes this rank's gets, after the arrivals (NCCL's order).
template <typename Coop>
__device__ __forceinline__ WaitResult BarrierSession<Coop>::sync(Coop coop, Fence fence, Timeout t) {
  const DevComm& c = *gin_->comm_;
  if (signal_ == ~0u) return WaitResult::Invalid;
  const u64 deadline = impl::deadlineOf(t);
  WaitResult r = WaitResult::Ok;
  waitPrior();
  coop.sync();  // the coop's earlier work is done before anyone signals
  if (coop.rank() == 0) {
    constexpr u64 selfLane = 1ull << 32;
    const bool self = (fence & FencePut) != 0;
    u64* shadow = reinterpret_cast<u64*>(c.shadows) + signal_;
    const u64 want = *shadow + (u64)(team_.nRanks - 1) + (self ? selfLane : 0);
    *shadow = want;
    for (int i = 1; i < team_.nRanks + (self ? 1 : 0); i++) {
      int p = team_.rank + i;
      if (p >= team_.nRanks) p -= team_.nRanks;
      const int w = impl::worldRank(c, team_, p);
      if (w < 0) {
        r = WaitResult::Invalid;
        break;
      }
      const impl::Remote rm{impl::RemoteAdd, signal_, p == team_.rank ? selfLane : 1};
      if (c.path == impl::PathLSA)
        impl::lsaSignal(c, CoopThread{}, w, rm);
      else
        impl::proxySignal(*gin_, CoopThread{}, w, rm);
    }
    if (r == WaitResult::Ok) r = impl::waitWord(c, impl::signalWord(c, signal_), want, ~0ull, deadline);
  }
  r = impl::bcastResult(coop, r);
  if (r == WaitResult::Ok && (fence & FenceGet)) r = impl::flushBy(*gin_, coop, deadline);
  return r;
}

template <typename Coop>
__device__ __forceinline__ bool BarrierSession<Coop>::sync(Coop coop, Fence fence) {
  return sync(coop, fence, Timeout::forever()) == WaitResult::Ok;
}

template <typename Coop>
__device__ __forceinline__ bool BarrierSession<Coop>::sync(Coop coop) {
  return sync(coop, FenceNone, Timeout::forever()) == WaitResult::Ok;
}

}  // namespace rdmactor

// impl/gin__proxy.cuh: the proxy path. The kernel builds WQE descriptors in
// a pinned, device-mapped SQ ring of its context and a CPU proxy posts them
// on the CPU provider, as NVSHMEM's IBGDA transport (used by DeepEP) rings a
// NIC's send queue from a kernel:
//
//   1. reserve: base = atomicAdd(&reserved, n)          (device memory)
//   2. room:    wait until base + n - consumed <= depth  (consumed: host)
//   3. write:   the 64-byte WQEs into slots base.. % depth (host memory)
//   4. publish in order: wait until ready == base; store doorbell = base+n
//      with release at system scope (the WQEs are visible to the CPU
//      first); then ready = base + n (release, GPU scope) hands the turn on.
// n is 1 for a lone thread, up to 32 for lanes of a warp posting together.
//
// Because each doorbell store happens before the next publisher's turn,
// the CPU sees the doorbell only grow. One WQE per put, whatever its
// length: the provider splits nothing (gin's MaxPutSize bounds it).
#pragma once

namespace rdmactor {
namespace impl {

struct WQE {
  u64 w[8];
};

__device__ __forceinline__ WQE makeWQE(u32 op, const Remote& r, int ctr, u32 valueSize, int world, u32 dstWin,
                                       u32 srcWin, u64 dstOff, u64 srcOff, u64 bytesOrValue) {
  WQE e;
  e.w[0] = ((u64)op << 32) | ((u64)r.kind << 40) | ((u64)(ctr >= 0 ? 1 : 0) << 48) | ((u64)valueSize << 56);
  e.w[1] = (u64)(u32)world | ((u64)r.signal << 32);
  e.w[2] = (u64)dstWin | ((u64)srcWin << 32);
  e.w[3] = (u64)(u32)(ctr >= 0 ? ctr : 0);
  e.w[4] = dstOff;
  e.w[5] = srcOff;
  e.w[6] = bytesOrValue;
  e.w[7] = r.value;
  return e;
}

__device__ __forceinline__ const RingDesc& ringOf(const DevComm& c, int ctx) {
  return reinterpret_cast<const RingDesc*>(c.rings)[ctx];
}

__device__ __forceinline__ unsigned laneId() {
  unsigned l;
  asm("mov.u32 %0, %%laneid;" : "=r"(l));
  return l;
}

// proxyPost reserves, writes and publishes e on the ring of g's context.
// Lanes of a warp that post to the same ring at the same time are
// aggregated (as NVSHMEM IBGDA's warp-level puts): the lowest lane
// reserves n slots with one atomicAdd and publishes all n with one
// doorbell store, so the system-scope release (a fence over PCIe) is paid
// once per batch, not per WQE; each lane writes its own entry. Returns
// false on abort (the ring is then unusable: the host tears down).
__device__ __forceinline__ bool proxyPost(Gin& g, WQE e) {
  const DevComm& c = *g.comm_;
  if (g.ctx_ < 0 || g.ctx_ >= c.nContexts) {
    fail(c, ErrBadArgument, (u32)g.ctx_);
    return false;
  }
  const RingDesc& rd = ringOf(c, g.ctx_);
  u64* dev = reinterpret_cast<u64*>(rd.dev);
  char* host = reinterpret_cast<char*>(rd.host);
  u64* reserved = dev + RingDevReserved / 8;
  u64* ready = dev + RingDevReady / 8;
  const u64* consumed = reinterpret_cast<const u64*>(host + RingConsumed);
  const u64 depth = rd.depth;

  const unsigned active = __activemask();
  const unsigned group = __match_any_sync(active, g.ctx_);
  const unsigned lane = laneId();
  const int leader = __ffs(group) - 1;
  const u32 n = __popc(group);
  const u32 idx = __popc(group & ((1u << lane) - 1u));
  u64 base = 0;
  int ok = 1;
  if ((int)lane == leader) {
    base = atomAddRelaxedGpu(reserved, n);
    ok = spinUntil(c, [&] { return base + n - ldAcquireSys(consumed) <= depth; });
  }
  base = __shfl_sync(group, base, leader);
  if (!__shfl_sync(group, ok, leader)) return false;
  const u64 seq = base + idx;
  e.w[0] |= (u64)(u32)(seq + 1);
  uint4* slot = reinterpret_cast<uint4*>(host + RingEntries + (seq & (depth - 1)) * WQEBytes);
#pragma unroll
  for (int k = 0; k < 4; k++)
    slot[k] = make_uint4((u32)e.w[2 * k], (u32)(e.w[2 * k] >> 32), (u32)e.w[2 * k + 1], (u32)(e.w[2 * k + 1] >> 32));
  __syncwarp(group);  // every lane's entry is written before the leader publishes
  if ((int)lane == leader) {
    ok = spinUntil(c, [&] { return ldAcquireGpu(ready) == base; });
    if (ok) {
      stReleaseSys(reinterpret_cast<u64*>(host + RingDoorbell), base + n);
      stReleaseGpu(ready, base + n);
    }
  }
  if (!__shfl_sync(group, ok, leader)) return false;
  g.issued_ = base + n;
  return true;
}

template <typename Coop>
__device__ __forceinline__ void proxyPut(Gin& g, Coop coop, int world, Window dst, u64 dstOff, Window src, u64 srcOff,
                                         u64 bytes, const Remote& r, int ctr) {
  coop.sync();  // every thread of the coop wrote its part of the source
  if (coop.rank() == 0) proxyPost(g, makeWQE(OpPut, r, ctr, 0, world, dst->id, src->id, dstOff, srcOff, bytes));
}

// proxyGet: the proxy reads into dst, flushes, then ticks the counter and
// completes the WQE, so both say the bytes have landed.
template <typename Coop>
__device__ __forceinline__ void proxyGet(Gin& g, Coop coop, int world, Window dst, u64 dstOff, Window src, u64 srcOff,
                                         u64 bytes, int ctr) {
  coop.sync();
  if (coop.rank() == 0) proxyPost(g, makeWQE(OpGet, remoteOf(None{}), ctr, 0, world, dst->id, src->id, dstOff, srcOff, bytes));
}

template <typename Coop>
__device__ __forceinline__ void proxyPutValue(Gin& g, Coop coop, int world, Window dst, u64 dstOff, u64 bits, u32 size,
                                              const Remote& r) {
  if (coop.rank() == 0) proxyPost(g, makeWQE(OpPutValue, r, -1, size, world, dst->id, 0, dstOff, 0, bits));
}

template <typename Coop>
__device__ __forceinline__ void proxySignal(Gin& g, Coop coop, int world, const Remote& r) {
  coop.sync();
  if (coop.rank() == 0) proxyPost(g, makeWQE(OpSignal, r, -1, 0, world, 0, 0, 0, 0, 0));
}

// proxyFlush waits until the proxy completed every WQE up to coop rank
// 0's last one, or the deadline (noDeadline: none) passed.
template <typename Coop>
__device__ __forceinline__ WaitResult proxyFlush(Gin& g, Coop coop, u64 deadline) {
  const DevComm& c = *g.comm_;
  WaitResult r = WaitResult::Ok;
  if (coop.rank() == 0 && g.issued_ != 0) {
    const u64* completed = reinterpret_cast<const u64*>(reinterpret_cast<char*>(ringOf(c, g.ctx_).host) + RingCompleted);
    const u64 want = g.issued_;
    r = spinFor(c, deadline, [&] { return ldAcquireSys(completed) >= want; });
  }
  return bcastResult(coop, r);
}

}  // namespace impl
}  // namespace rdmactor

// impl/gin__lsa.cuh: the LSA path. Peers' windows and signal words are
// mapped into this kernel's address space (peer access in one process,
// CUDA IPC across processes), so a put is a cooperative copy into the peer
// window and a signal is a system-scope release add on the peer's word
// (the same pattern as NCCL's LSA puts and NVSHMEM's NVLink transport).
#pragma once

namespace rdmactor {
namespace impl {

// coopCopy copies bytes from src to dst with every thread of coop: 16-byte
// vectors when both are 16-byte aligned (four loads in flight per thread
// before their stores), then 8-byte words while both are 8-aligned, then
// bytes for the rest.
template <typename Coop>
__device__ __forceinline__ void coopCopy(Coop coop, char* dst, const char* src, u64 bytes) {
  const u64 n = (u64)coop.size(), r = (u64)coop.rank();
  const u64 align = ((u64)dst | (u64)src);
  u64 done = 0;
  if ((align & 15) == 0) {
    const uint4* s = reinterpret_cast<const uint4*>(src);
    uint4* d = reinterpret_cast<uint4*>(dst);
    const u64 nv = bytes >> 4;
    u64 i = r;
    for (; i + 3 * n < nv; i += 4 * n) {
      uint4 a = s[i], b = s[i + n], e = s[i + 2 * n], f = s[i + 3 * n];
      d[i] = a;
      d[i + n] = b;
      d[i + 2 * n] = e;
      d[i + 3 * n] = f;
    }
    for (; i < nv; i += n) d[i] = s[i];
    done = nv << 4;
  }
  if ((align & 7) == 0) {
    const u64* s = reinterpret_cast<const u64*>(src);
    u64* d = reinterpret_cast<u64*>(dst);
    const u64 nw = bytes >> 3;
    for (u64 i = (done >> 3) + r; i < nw; i += n) d[i] = s[i];
    done = nw << 3;
  }
  for (u64 j = done + r; j < bytes; j += n) dst[j] = src[j];
}

__device__ __forceinline__ char* lsaPeer(Window w, int world) {
  return reinterpret_cast<char*>(reinterpret_cast<const u64*>(w->peers)[world]);
}

// lsaSignalWord: the release add on the peer's signal. Release at system
// scope orders this thread's earlier writes, and those it synchronized
// with through the coop's barrier, before the add (PTX memory model,
// cumulativity of release patterns).
__device__ __forceinline__ void lsaSignalWord(const DevComm& c, int world, const Remote& r) {
  u64* sig = reinterpret_cast<u64*>(reinterpret_cast<const u64*>(c.peerSignals)[world]) + r.signal;
  redAddReleaseSys(sig, r.value);
}

// lsaPut resolves both ends from the descriptors first, then waits for
// the work ahead of an overlapped kernel (waitPrior), so those dependent
// loads overlap that work's tail instead of delaying the copy.
template <typename Coop>
__device__ __forceinline__ void lsaPut(const DevComm& c, Coop coop, int world, Window dst, u64 dstOff, Window src,
                                       u64 srcOff, u64 bytes, const Remote& r, int ctr) {
  char* d = lsaPeer(dst, world) + dstOff;
  const char* s = reinterpret_cast<const char*>(src->local) + srcOff;
  waitPrior();
  coopCopy(coop, d, s, bytes);
  if (r.kind == RemoteNone && ctr < 0) return;
  coop.sync();  // every thread's part of the copy is written
  if (coop.rank() == 0) {
    if (r.kind != RemoteNone) lsaSignalWord(c, world, r);
    if (ctr >= 0) redAddReleaseGpu(counterWord(c, (u32)ctr), 1);
  }
}

// lsaGet: a cooperative copy out of the peer's window; the counter ticks
// once every thread's part has landed.
template <typename Coop>
__device__ __forceinline__ void lsaGet(const DevComm& c, Coop coop, int world, Window dst, u64 dstOff, Window src,
                                       u64 srcOff, u64 bytes, int ctr) {
  char* d = reinterpret_cast<char*>(dst->local) + dstOff;
  const char* s = lsaPeer(src, world) + srcOff;
  waitPrior();
  coopCopy(coop, d, s, bytes);
  if (ctr < 0) return;
  coop.sync();
  if (coop.rank() == 0) redAddReleaseGpu(counterWord(c, (u32)ctr), 1);
}

template <typename Coop>
__device__ __forceinline__ void lsaPutValue(const DevComm& c, Coop coop, int world, Window dst, u64 dstOff, u64 bits,
                                            u32 size, const Remote& r) {
  if (coop.rank() != 0) return;
  char* d = lsaPeer(dst, world) + dstOff;
  if (((u64)d & (size - 1)) == 0) {
    switch (size) {
      case 1: *reinterpret_cast<volatile u8*>(d) = (u8)bits; break;
      case 2: *reinterpret_cast<volatile unsigned short*>(d) = (unsigned short)bits; break;
      case 4: *reinterpret_cast<volatile u32*>(d) = (u32)bits; break;
      default: *reinterpret_cast<volatile u64*>(d) = bits; break;
    }
  } else {
    for (u32 i = 0; i < size; i++) reinterpret_cast<volatile u8*>(d)[i] = (u8)(bits >> (8 * i));
  }
  if (r.kind != RemoteNone) lsaSignalWord(c, world, r);
}

template <typename Coop>
__device__ __forceinline__ void lsaSignal(const DevComm& c, Coop coop, int world, const Remote& r) {
  coop.sync();
  if (coop.rank() == 0) lsaSignalWord(c, world, r);
}

}  // namespace impl
}  // namespace rdmactor

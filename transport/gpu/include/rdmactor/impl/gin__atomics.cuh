// impl/gin__atomics.cuh: the memory operations of the device API, as PTX
// with explicit semantics and scope (PTX ISA, "Memory Consistency Model";
// sm_70 and later). Scope .sys is used for every word another agent (a
// peer GPU, the CPU proxy, the host) reads or writes; .gpu for words only
// this GPU's threads touch (the ring's reserve and ready indices).
#pragma once

namespace rdmactor {
namespace impl {

__device__ __forceinline__ u64 ldAcquireSys(const u64* p) {
  u64 v;
  asm volatile("ld.acquire.sys.global.u64 %0, [%1];" : "=l"(v) : "l"(p) : "memory");
  return v;
}
__device__ __forceinline__ u64 ldRelaxedSys(const u64* p) {
  u64 v;
  asm volatile("ld.relaxed.sys.global.u64 %0, [%1];" : "=l"(v) : "l"(p) : "memory");
  return v;
}
__device__ __forceinline__ u64 ldAcquireGpu(const u64* p) {
  u64 v;
  asm volatile("ld.acquire.gpu.global.u64 %0, [%1];" : "=l"(v) : "l"(p) : "memory");
  return v;
}
__device__ __forceinline__ void stReleaseSys(u64* p, u64 v) {
  asm volatile("st.release.sys.global.u64 [%0], %1;" ::"l"(p), "l"(v) : "memory");
}
__device__ __forceinline__ void stRelaxedSys(u64* p, u64 v) {
  asm volatile("st.relaxed.sys.global.u64 [%0], %1;" ::"l"(p), "l"(v) : "memory");
}
__device__ __forceinline__ void stReleaseGpu(u64* p, u64 v) {
  asm volatile("st.release.gpu.global.u64 [%0], %1;" ::"l"(p), "l"(v) : "memory");
}
// redAddReleaseSys adds v to *p (no result) with release semantics at
// system scope: every write this thread did, or observed before a barrier
// with the writers, is visible to whoever observes the add.
__device__ __forceinline__ void redAddReleaseSys(u64* p, u64 v) {
  asm volatile("red.release.sys.global.add.u64 [%0], %1;" ::"l"(p), "l"(v) : "memory");
}
__device__ __forceinline__ void redAddReleaseGpu(u64* p, u64 v) {
  asm volatile("red.release.gpu.global.add.u64 [%0], %1;" ::"l"(p), "l"(v) : "memory");
}
__device__ __forceinline__ u64 atomAddRelaxedGpu(u64* p, u64 v) {
  u64 old;
  asm volatile("atom.relaxed.gpu.global.add.u64 %0, [%1], %2;" : "=l"(old) : "l"(p), "l"(v) : "memory");
  return old;
}

}  // namespace impl
}  // namespace rdmactor

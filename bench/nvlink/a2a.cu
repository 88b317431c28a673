// All-to-all over NVLink between N GPUs with copy kernels: every GPU moves
// a chunk of B bytes to or from every other at once, pushing (stores to
// the peers) or pulling (loads from them, as moe/gpu's combine and
// low-latency dispatch do) with several load forms and block shapes. The
// grids start together at a gate the host opens once all are launched;
// a round's time is %globaltimer from a GPU's first block start to its
// last block's end (its stores performed), the slowest GPU's; median of
// 20 rounds. GB/s are the bytes a GPU receives per second.
//
//   nvcc -arch=sm_90 -O3 -o a2a bench/nvlink/a2a.cu && ./a2a [gpus] [bytes per pair...]
#include <cstdio>
#include <cstdlib>
#include <vector>
#include <algorithm>
#include <cuda_runtime.h>
#define CK(x) do { cudaError_t e = (x); if (e != cudaSuccess) { printf("%s:%d %s\n", __FILE__, __LINE__, cudaGetErrorString(e)); exit(1);} } while (0)
typedef unsigned long long u64;

enum Ld { LdPlain, LdNoAlloc, LdNC, LdL2_256, LdRelaxedSys, LdCG };

template <int L>
__device__ __forceinline__ uint4 load(const uint4* p) {
  uint4 v;
  if constexpr (L == LdPlain) {
    v = *p;
  } else if constexpr (L == LdNoAlloc) {
    asm volatile("ld.global.L1::no_allocate.v4.u32 {%0,%1,%2,%3}, [%4];" : "=r"(v.x), "=r"(v.y), "=r"(v.z), "=r"(v.w) : "l"(p));
  } else if constexpr (L == LdNC) {
    asm volatile("ld.global.nc.L1::no_allocate.v4.u32 {%0,%1,%2,%3}, [%4];" : "=r"(v.x), "=r"(v.y), "=r"(v.z), "=r"(v.w) : "l"(p));
  } else if constexpr (L == LdL2_256) {
    asm volatile("ld.global.L1::no_allocate.L2::256B.v4.u32 {%0,%1,%2,%3}, [%4];" : "=r"(v.x), "=r"(v.y), "=r"(v.z), "=r"(v.w) : "l"(p));
  } else if constexpr (L == LdRelaxedSys) {
    asm volatile("ld.relaxed.sys.global.v4.u32 {%0,%1,%2,%3}, [%4];" : "=r"(v.x), "=r"(v.y), "=r"(v.z), "=r"(v.w) : "l"(p));
  } else {
    asm volatile("ld.global.cg.v4.u32 {%0,%1,%2,%3}, [%4];" : "=r"(v.x), "=r"(v.y), "=r"(v.z), "=r"(v.w) : "l"(p));
  }
  return v;
}

struct Ptrs { uint4* p[8]; };

__device__ __forceinline__ u64 gtime() {
  u64 t;
  asm volatile("mov.u64 %0, %globaltimer;" : "=l"(t));
  return t;
}

// start holds every GPU's grid until the host opens the gate, so the
// chunks move at once, and records the first block's start in times[0].
// Block 0 alone polls the host's gate (host memory reads queue on PCIe)
// and opens the grid's own in device memory, times[2].
__device__ __forceinline__ void start(const volatile int* gate, int round, u64* times) {
  if (threadIdx.x == 0) {
    volatile u64* open = times + 2;
    if (blockIdx.x == 0) {
      while (*gate != round) {
      }
      *open = round;
    } else {
      while (*open != (u64)round) {
      }
    }
    atomicMin(&times[0], gtime());
  }
  __syncthreads();
}

// finish records the block's end, its stores performed, in times[1].
__device__ __forceinline__ void finish(u64* times) {
  __threadfence_system();
  __syncthreads();
  if (threadIdx.x == 0) atomicMax(&times[1], gtime());
}

// a2a: the grid splits the (n-1) peer chunks of nv vectors each; a pull
// reads peer q's chunk for this GPU (src[q] + me*nv) into dst + q*nv, a
// push writes this GPU's chunk for q (src_local + q*nv) into dst[q] + me*nv.
template <int U, int L, bool Pull>
__global__ void __launch_bounds__(1024) a2a(Ptrs peerSrc, Ptrs peerDst, const uint4* __restrict__ mySrc, uint4* __restrict__ myDst,
                                            int me, int n, u64 nv, const volatile int* gate, int round, u64* times) {
  start(gate, round, times);
  const u64 total = (u64)(n - 1) * nv, per = (total + gridDim.x - 1) / gridDim.x;
  const u64 b0 = per * blockIdx.x, b1 = min(total, b0 + per), bs = blockDim.x;
  for (u64 base = b0 + threadIdx.x; base < b1; base += U * bs) {
    uint4 v[U];
    const uint4* s[U];
    uint4* d[U];
#pragma unroll
    for (int k = 0; k < U; k++) {
      const u64 it = base + k * bs;
      s[k] = nullptr;
      if (it < b1) {
        const int c = (int)(it / nv), q = (me + 1 + c) % n;
        const u64 o = it - (u64)c * nv;
        if (Pull) {
          s[k] = peerSrc.p[q] + (u64)me * nv + o;
          d[k] = myDst + (u64)q * nv + o;
        } else {
          s[k] = mySrc + (u64)q * nv + o;
          d[k] = peerDst.p[q] + (u64)me * nv + o;
        }
        v[k] = Pull ? load<L>(s[k]) : *s[k];
      }
    }
#pragma unroll
    for (int k = 0; k < U; k++)
      if (s[k]) *d[k] = v[k];
  }
  finish(times);
}

// a2aTMA pulls with the Tensor Memory Accelerator: block b takes a slice
// of one peer's chunk and thread 0 streams it through NS shared-memory
// stages of CH bytes, a bulk load from the peer (cp.async.bulk, completing
// on the stage's mbarrier), then a bulk store into the local destination.
template <int NS, int CH>
__global__ void __launch_bounds__(128) a2aTMA(Ptrs peerSrc, Ptrs peerDst, const uint4* __restrict__ mySrc, uint4* __restrict__ myDst,
                                              int me, int n, u64 nv, const volatile int* gate, int round, u64* times) {
  extern __shared__ __align__(128) unsigned char sm[];
  __shared__ __align__(8) u64 bar[NS];
  start(gate, round, times);
  const int per = gridDim.x / (n - 1);
  if (threadIdx.x == 0 && (int)blockIdx.x < per * (n - 1)) {
    const int q = (me + 1 + (int)blockIdx.x % (n - 1)) % n, sl = (int)blockIdx.x / (n - 1);
    const u64 bytes = nv * 16, o0 = (bytes * sl / per) & ~15ull, o1 = (bytes * (sl + 1) / per) & ~15ull;
    const char* src = reinterpret_cast<const char*>(peerSrc.p[q] + (u64)me * nv) + o0;
    char* dst = reinterpret_cast<char*>(myDst + (u64)q * nv) + o0;
    const u64 len = o1 - o0;
    const int nch = (int)((len + CH - 1) / CH);
    for (int s2 = 0; s2 < NS; s2++) {
      unsigned a = (unsigned)__cvta_generic_to_shared(&bar[s2]);
      asm volatile("mbarrier.init.shared::cta.b64 [%0], 1;" ::"r"(a));
    }
    asm volatile("fence.mbarrier_init.release.cluster;" ::: "memory");
    auto load = [&](int i) {
      const int st = i % NS;
      const unsigned sz = (unsigned)min((u64)CH, len - (u64)i * CH);
      unsigned a = (unsigned)__cvta_generic_to_shared(&bar[st]);
      unsigned d = (unsigned)__cvta_generic_to_shared(sm + st * CH);
      asm volatile("mbarrier.arrive.expect_tx.shared::cta.b64 _, [%0], %1;" ::"r"(a), "r"(sz) : "memory");
      asm volatile("cp.async.bulk.shared::cluster.global.mbarrier::complete_tx::bytes [%0], [%1], %2, [%3];" ::"r"(d),
                   "l"(src + (u64)i * CH), "r"(sz), "r"(a)
                   : "memory");
    };
    for (int i = 0; i < NS && i < nch; i++) load(i);
    for (int i = 0; i < nch; i++) {
      const int st = i % NS;
      const unsigned par = (unsigned)((i / NS) & 1);
      unsigned a = (unsigned)__cvta_generic_to_shared(&bar[st]);
      unsigned done = 0;
      while (!done)
        asm volatile(
            "{ .reg .pred p; mbarrier.try_wait.parity.shared::cta.b64 p, [%1], %2; selp.u32 %0, 1, 0, p; }"
            : "=r"(done)
            : "r"(a), "r"(par)
            : "memory");
      const unsigned sz = (unsigned)min((u64)CH, len - (u64)i * CH);
      unsigned sp = (unsigned)__cvta_generic_to_shared(sm + st * CH);
      asm volatile("cp.async.bulk.global.shared::cta.bulk_group [%0], [%1], %2;" ::"l"(dst + (u64)i * CH), "r"(sp), "r"(sz)
                   : "memory");
      asm volatile("cp.async.bulk.commit_group;" ::: "memory");
      if (i + NS < nch) {
        asm volatile("cp.async.bulk.wait_group.read 0;" ::: "memory");
        load(i + NS);
      }
    }
    asm volatile("cp.async.bulk.wait_group 0;" ::: "memory");
  }
  finish(times);
}

int main(int argc, char** argv) {
  int n = argc > 1 ? atoi(argv[1]) : 4;
  std::vector<u64> sizes;
  for (int i = 2; i < argc; i++) sizes.push_back(strtoull(argv[i], 0, 10) & ~255ull);
  if (sizes.empty()) sizes = {1658880ull, 53125120ull};
  int nd;
  CK(cudaGetDeviceCount(&nd));
  if (nd < n) { printf("need %d GPUs, have %d\n", n, nd); return 1; }
  u64 maxB = *std::max_element(sizes.begin(), sizes.end());
  Ptrs src{}, dst{};
  std::vector<cudaStream_t> st(n);
  int sms = 0;
  CK(cudaDeviceGetAttribute(&sms, cudaDevAttrMultiProcessorCount, 0));
  for (int g = 0; g < n; g++) {
    CK(cudaSetDevice(g));
    for (int q = 0; q < n; q++)
      if (q != g) CK(cudaDeviceEnablePeerAccess(q, 0));
    CK(cudaMalloc(&src.p[g], maxB * n));
    CK(cudaMalloc(&dst.p[g], maxB * n));
    CK(cudaMemset(src.p[g], g + 1, maxB * n));
    CK(cudaStreamCreateWithFlags(&st[g], cudaStreamNonBlocking));
  }
  int* gate;
  CK(cudaHostAlloc(&gate, sizeof(int), cudaHostAllocMapped | cudaHostAllocPortable));
  *gate = 0;
  std::vector<u64*> times(n);
  for (int g = 0; g < n; g++) {
    CK(cudaSetDevice(g));
    CK(cudaMalloc(&times[g], 24));
    CK(cudaMemset(times[g], 0, 24));
  }
  int round = 0;
  typedef void (*K)(Ptrs, Ptrs, const uint4*, uint4*, int, int, u64, const volatile int*, int, u64*);
  struct V { const char* name; K k; int threads, blocksPerSM; int smem = 0; };
  std::vector<V> vs = {
      {"push U4", a2a<4, LdPlain, false>, 1024, 1},
      {"push U4 2x512", a2a<4, LdPlain, false>, 512, 2},
      {"pull U4 plain", a2a<4, LdPlain, true>, 1024, 1},
      {"pull U4 2x512", a2a<4, LdPlain, true>, 512, 2},
      {"pull U8 plain", a2a<8, LdPlain, true>, 1024, 1},
      {"pull U2 plain", a2a<2, LdPlain, true>, 1024, 1},
      {"pull U4 noalloc", a2a<4, LdNoAlloc, true>, 1024, 1},
      {"pull U4 nc", a2a<4, LdNC, true>, 1024, 1},
      {"pull U4 L2::256B", a2a<4, LdL2_256, true>, 1024, 1},
      {"pull U4 relaxed.sys", a2a<4, LdRelaxedSys, true>, 1024, 1},
      {"pull U4 cg", a2a<4, LdCG, true>, 1024, 1},
      {"pull U8 noalloc", a2a<8, LdNoAlloc, true>, 1024, 1},
      {"pull TMA 4x16K", a2aTMA<4, 16384>, 128, 1, 4 * 16384},
      {"pull TMA 8x16K", a2aTMA<8, 16384>, 128, 1, 8 * 16384},
      {"pull TMA 4x32K", a2aTMA<4, 32768>, 128, 1, 4 * 32768},
      {"pull TMA 2x8K 2/SM", a2aTMA<2, 8192>, 128, 2, 2 * 8192},
      {"pull TMA 4x4K", a2aTMA<4, 4096>, 128, 1, 4 * 4096},
  };
  for (auto& x : vs)
    if (x.smem > 0)
      for (int g = 0; g < n; g++) {
        CK(cudaSetDevice(g));
        CK(cudaFuncSetAttribute(x.k, cudaFuncAttributeMaxDynamicSharedMemorySize, x.smem));
      }
  printf("%d GPUs, %d SMs\n", n, sms);
  for (u64 B : sizes) {
    u64 nv = B / 16;
    printf("bytes per pair %llu (%.2f MB received per GPU)\n", B, (double)B * (n - 1) / 1e6);
    for (auto& x : vs) {
      std::vector<float> t;
      for (int rep = 0; rep < 22; rep++) {
        for (int g = 0; g < n; g++) { CK(cudaSetDevice(g)); CK(cudaDeviceSynchronize()); }
        round++;
        for (int g = 0; g < n; g++) {
          CK(cudaSetDevice(g));
          u64 init[2] = {~0ull, 0};
          CK(cudaMemcpy(times[g], init, 16, cudaMemcpyHostToDevice));
          x.k<<<sms * x.blocksPerSM, x.threads, x.smem, st[g]>>>(src, dst, src.p[g], dst.p[g], g, n, nv, gate, round, times[g]);
        }
        __atomic_store_n(gate, round, __ATOMIC_SEQ_CST);
        float worst = 0;
        for (int g = 0; g < n; g++) {
          CK(cudaSetDevice(g));
          CK(cudaStreamSynchronize(st[g]));
          CK(cudaGetLastError());
          u64 tt[2];
          CK(cudaMemcpy(tt, times[g], 16, cudaMemcpyDeviceToHost));
          worst = std::max(worst, (float)((tt[1] - tt[0]) * 1e-6));
        }
        if (rep >= 2) t.push_back(worst);
      }
      std::sort(t.begin(), t.end());
      float med = t[t.size() / 2];
      printf("  %-22s %9.2f us %8.1f GB/s\n", x.name, med * 1e3, (double)B * (n - 1) / (med * 1e-3) / 1e9);
    }
  }
  return 0;
}

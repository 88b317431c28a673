// NVLink copy bandwidth between GPUs 0 and 1: copy kernels (16-byte loads
// and stores, as moe/gpu's kernels move rows) against cudaMemcpyPeerAsync,
// one way and both ways at once, pushing (stores to the peer) and pulling
// (loads from it). "mix" is the normal dispatch's shape: 4 of 5 blocks put
// to the peer, 1 copies locally, as 1024-thread blocks (one per SM) or as
// 512-thread blocks (two per SM). Median of 10 rounds, the slower GPU.
//
//   nvcc -arch=sm_90 -O3 -o copybw bench/nvlink/copybw.cu && ./copybw [bytes]
#include <cstdio>
#include <cstdlib>
#include <vector>
#include <algorithm>
#include <cuda_runtime.h>
#define CK(x) do { cudaError_t e = (x); if (e != cudaSuccess) { printf("%s:%d %s\n", __FILE__, __LINE__, cudaGetErrorString(e)); exit(1);} } while (0)
typedef unsigned long long u64;

// span copies vectors [b0, b1) of s to d with the whole block, U loads in
// flight per thread.
template <int U>
__device__ __forceinline__ void span(uint4* __restrict__ d, const uint4* __restrict__ s, u64 b0, u64 b1) {
  const u64 n = blockDim.x;
  u64 i = b0 + threadIdx.x;
  for (; i + (U - 1) * n < b1; i += U * n) {
    uint4 v[U];
#pragma unroll
    for (int k = 0; k < U; k++) v[k] = s[i + k * n];
#pragma unroll
    for (int k = 0; k < U; k++) d[i + k * n] = v[k];
  }
  for (; i < b1; i += n) d[i] = s[i];
}

// copyRows: blocks < gr copy their share of nv vectors from s to rd, the
// others theirs to ld (gr = the grid: a plain copy to rd).
template <int U>
__global__ void __launch_bounds__(1024) copyRows(uint4* __restrict__ rd, uint4* __restrict__ ld, const uint4* __restrict__ s, u64 nv, int gr) {
  int b = blockIdx.x, g = gr;
  uint4* d = rd;
  if (b >= gr) { b -= gr; g = gridDim.x - gr; d = ld; }
  u64 per = (nv + g - 1) / g, b0 = per * b, b1 = min(nv, b0 + per);
  span<U>(d, s, b0, b1);
}

int main(int argc, char** argv) {
  u64 bytes = argc > 1 ? strtoull(argv[1], 0, 10) : 58480000ull;
  bytes &= ~4095ull;
  int nd; CK(cudaGetDeviceCount(&nd));
  if (nd < 2) { printf("need 2 GPUs\n"); return 1; }
  char *a[2], *b[2];  // a[g]: source on g, b[g]: destination on g
  cudaStream_t st[2];
  cudaEvent_t e0[2], e1[2];
  int sms = 0;
  CK(cudaDeviceGetAttribute(&sms, cudaDevAttrMultiProcessorCount, 0));
  for (int g = 0; g < 2; g++) {
    CK(cudaSetDevice(g));
    CK(cudaDeviceEnablePeerAccess(1 - g, 0));
    CK(cudaMalloc(&a[g], bytes));
    CK(cudaMalloc(&b[g], bytes));
    CK(cudaMemset(a[g], g + 1, bytes));
    CK(cudaStreamCreateWithFlags(&st[g], cudaStreamNonBlocking));
    CK(cudaEventCreate(&e0[g]));
    CK(cudaEventCreate(&e1[g]));
  }
  // mode 0: GPU 0 pushes to GPU 1; 1: both push; 2: GPU 0 pulls from GPU 1; 3: both pull
  auto launch = [&](int kind, int g, char* dst, const char* src, int grid, int gr) {
    u64 nv = bytes / 16;
    switch (kind) {
      case 0: cudaMemcpyPeerAsync(dst, 1 - g, src, g, bytes, st[g]); break;
      case 1: copyRows<4><<<grid, 1024, 0, st[g]>>>((uint4*)dst, nullptr, (const uint4*)src, nv, grid); break;
      case 2: copyRows<4><<<grid, 1024, 0, st[g]>>>((uint4*)dst, (uint4*)b[g], (const uint4*)src, nv, gr); break;
      case 3: copyRows<8><<<grid, 512, 0, st[g]>>>((uint4*)dst, (uint4*)b[g], (const uint4*)src, nv, gr); break;
    }
  };
  auto timeit = [&](int kind, int mode, int grid, int gr) -> float {
    std::vector<float> v;
    for (int rep = 0; rep < 12; rep++) {
      for (int g = 0; g < 2; g++) { CK(cudaSetDevice(g)); CK(cudaDeviceSynchronize()); }
      int ng = (mode == 1 || mode == 3) ? 2 : 1;
      for (int g = 0; g < ng; g++) {
        CK(cudaSetDevice(g));
        CK(cudaEventRecord(e0[g], st[g]));
        if (mode >= 2) launch(kind, g, b[g], a[1 - g], grid, gr);  // pull: read peer's a into own b
        else launch(kind, g, b[1 - g], a[g], grid, gr);            // push: own a into peer's b
        CK(cudaEventRecord(e1[g], st[g]));
      }
      float worst = 0;
      for (int g = 0; g < ng; g++) {
        CK(cudaSetDevice(g));
        CK(cudaEventSynchronize(e1[g]));
        CK(cudaGetLastError());
        float ms; CK(cudaEventElapsedTime(&ms, e0[g], e1[g]));
        worst = std::max(worst, ms);
      }
      if (rep >= 2) v.push_back(worst);
    }
    std::sort(v.begin(), v.end());
    return bytes / (v[v.size() / 2] * 1e-3) / 1e9;
  };
  printf("bytes %llu, SMs %d\n", bytes, sms);
  struct V { const char* name; int kind, grid, gr; };  // gr: blocks that put (mix)
  std::vector<V> vs = {
      {"cudaMemcpyPeer", 0, 0, 0},
      {"copy 132x1024", 1, sms, 0},
      {"copy 106x1024", 1, sms * 4 / 5, 0},
      {"mix 1024: 4+1", 2, sms, sms - sms / 5},
      {"mix 2x512: 4+1", 3, 2 * sms, 2 * sms - 2 * sms / 5},
  };
  printf("%-18s %9s %9s %9s %9s  (GB/s per direction)\n", "variant", "push-1way", "push-2way", "pull-1way", "pull-2way");
  for (auto& x : vs) {
    float u = timeit(x.kind, 0, x.grid, x.gr);
    float bi = timeit(x.kind, 1, x.grid, x.gr);
    float p = x.kind != 1 ? 0 : timeit(x.kind, 2, x.grid, x.gr);  // pulls: the plain copy only
    float pb = x.kind != 1 ? 0 : timeit(x.kind, 3, x.grid, x.gr);
    if (x.kind == 1)
      printf("%-18s %9.1f %9.1f %9.1f %9.1f\n", x.name, u, bi, p, pb);
    else
      printf("%-18s %9.1f %9.1f %9s %9s\n", x.name, u, bi, "-", "-");
  }
  return 0;
}

// kernels.cu: MoE dispatch and combine on the device-side gin API
// (rdmactor/gin.cuh, the twin of ncclGin), LSA path. Package gpumoe
// (moe/gpu) compiles it with NVRTC and launches it; doc.go there states the
// contract, plan.go the layout of Args and of the window.
//
// Algorithms: the CPU version's (package moe: layout.go, dispatch.go,
// combine.go, lowlatency.go), with the data movement done by kernels and
// every phase on the GPU (no host round trip between phases):
//
//   layout          token -> rank masks, send positions, tokens per rank
//                   and per expert (DeepEP's get_dispatch_layout), then
//                   this rank's count header put to every rank with
//                   SignalAdd(cnt[me], 1) (DeepEP's notify_dispatch). Every
//                   block of moe_dispatch computes a share (gridLayout: a
//                   warp per 32 tokens; the last block done puts the
//                   header), or, when traced, moe_layout alone in one
//                   block (layout).
//   moe_dispatch    normal mode: waits for every rank's counts; each block
//                   counts its send positions (the layout's per-chunk
//                   counts before its range) and
//                   streams a contiguous token range to one destination:
//                   runs of rows and their routing entries straight into the
//                   receiver's buffers (prefix sums over lower ranks give the
//                   place); one signal per destination, SignalAdd(data[me], 1),
//                   from the last block done (blockFinish).
//   moe_combine     each rank tells every other that its expert outputs are
//                   ready (one signal each), waits for theirs, then sums each
//                   token's rows in float32, pulling the remote ones through
//                   the LSA mapping, and rounds once to bf16.
//   moe_ll_dispatch low latency: each rank stages its rows (FP8 e4m3 with
//                   per-128-channel scales, or bf16 as they are) and writes
//                   its routing (each pair's expert and slot, in token
//                   order) and its pairs per expert to every rank as route
//                   words that carry the round (no signal; a release where
//                   rows were staged); each rank pulls every token routed
//                   to it once and stores it into the slot of each local
//                   expert it chose.
//   moe_ll_combine  each rank sends its weights to every rank (8-byte words
//                   with the round), sums each source token's rows over
//                   its own experts in float32 and writes that partial row
//                   into the source's window (where it holds one pair of
//                   the token, that expert's bf16 row instead), a flag
//                   word per slice after it (one system fence per block
//                   and step); each source adds each slice's partials, at
//                   most one per rank, once their flags are there, and
//                   rounds once to bf16.
//
// "One signal per destination" across the grid (blockFinish): when a block
// has put all its share, it syncs, one warp fences the block's writes at
// system scope (fence.acq_rel.sys: cumulative over the writes the block
// barrier ordered before it) and adds 1 to each destination's completion
// counter in device memory (atom.acq_rel.gpu); the block that brings a
// counter to gridDim.x issues that destination's signal. Release/acquire
// through the counter puts every block's puts before that thread's
// red.release.sys on the peer's signal, so gin's strong-signal promise (the
// signal implies the data) holds for the whole destination. One fence per
// block, not per put: a system fence waits for the NVLink writes to drain.
//
// Kernels that wait on peers need every block of the grid resident at once
// (a block may wait for a signal that another block of the same grid sends):
// the host launches at most one 1024-thread block per SM.

#include "rdmactor/gin.cuh"

#if !defined(MOE_ARGS_WORDS) || !defined(MOE_MAX_RANKS) || !defined(MOE_MAX_TOPK)
#error "MOE_ARGS_WORDS, MOE_MAX_RANKS, MOE_MAX_TOPK: compile kernels.cu through package moe/gpu"
#endif

using namespace rdmactor;

namespace moe {

typedef unsigned long long u64;
typedef long long i64;
typedef unsigned int u32;
typedef unsigned short u16;
typedef unsigned char u8;

// Args: the handle as kernels see it, every field 8 bytes, in the order of
// plan.go's argWords. Passed by value (__grid_constant__).
struct Args {
  Window win;  // the handle's window
  u64 rank, n, hidden, topk, experts, local, maxT, maxLL, rs, ew, hdrB, sigBase, fp8, slotB, groups, routeB, flagS;
  // window regions (byte offsets)
  u64 offInput, offCnt, offMetaStage, offRecvMeta, offRecvX;
  u64 offLLStage, offLLX, offLLSrc, offLLCount, offLLY, offLLRoute, offLLW, offLLPart, offLLFlag;
  // device state (this rank only)
  u32* masks;          // [maxT] token -> rank bits
  int* pos;            // [maxT][n] send positions, -1: not sent there
  int* tokPerExpert;   // [E]
  int* tokPerRank;     // [n]
  u32* finish;         // [2][n] dispatch completion per destination
  u32* lay;            // the fused layout's scratch (gridLayout: Lay)
  int* llSlotOf;       // [maxLL][K] slot each pair got, -1 none
  u64* err;            // first error: code << 32 | detail
  int* recvTokPerExpert;  // [L] normal mode, rows per local expert received
  int* llTokPerExpert;    // [L] low latency, rows per local expert received
};
static_assert(sizeof(Args) == 8 * MOE_ARGS_WORDS, "Args: moe/gpu/plan.go and kernels.cu disagree");

// Error codes (errors.go: errBadRouting ...).
enum { ErrBadRouting = 1, ErrPeerBadRouting = 2, ErrSlotOverflow = 3, ErrAborted = 4 };

// Bounds of Config (config.go: maxRanks, maxTopK).
enum { maxRanks = MOE_MAX_RANKS, maxTopK = MOE_MAX_TOPK };



// Trace, compiled in with -DMOE_TRACE only (kernels.go: RDMACTOR_MOE_TRACE):
// %globaltimer at fixed points of a low-latency round, the earliest block's
// (trDStart, trCStart) or the latest block's (the others), read and reset
// by moe_trace_dump (Handle.TraceLL; lowlatency.go names them).
enum { trSyncEnd, trDStart, trDEntry, trDPull, trDEnd, trCStart, trCStores, trCFlags, trCEnd, trSlots };
static_assert(trSlots == MOE_TRACE_SLOTS, "trace slots: moe/gpu/lowlatency.go and kernels.cu disagree");
__device__ u64 moeTrace[trSlots];
#ifdef MOE_TRACE
__device__ __forceinline__ u64 gtime() {
  u64 t;
  asm volatile("mov.u64 %0, %%globaltimer;" : "=l"(t));
  return t;
}
#define TRACE_MIN(i) (void)(threadIdx.x == 0 && (atomicMin(&moeTrace[i], gtime()), 0))
#define TRACE_MAX(i) (void)(threadIdx.x == 0 && (atomicMax(&moeTrace[i], gtime()), 0))
#define TRACE_BAR_MAX(i) (__syncthreads(), TRACE_MAX(i))
#else
#define TRACE_MIN(i) (void)0
#define TRACE_MAX(i) (void)0
#define TRACE_BAR_MAX(i) (void)0
#endif

__device__ __forceinline__ void fail(const Args& a, u32 code, u32 detail) {
  atomicCAS(a.err, 0ull, ((u64)code << 32) | detail);
}

__device__ __forceinline__ int lane() { return threadIdx.x & 31; }
__device__ __forceinline__ int warp() { return threadIdx.x >> 5; }
__device__ __forceinline__ int warps() { return blockDim.x >> 5; }

// Signal indices, from Args.sigBase (plan.go: signals).
__device__ __forceinline__ u32 sigCnt(const Args& a, int s) { return (u32)(a.sigBase + s); }
__device__ __forceinline__ u32 sigData(const Args& a, int s) { return (u32)(a.sigBase + a.n + s); }
__device__ __forceinline__ u32 sigComb(const Args& a, int s) { return (u32)(a.sigBase + 2 * a.n + s); }
__device__ __forceinline__ u32 sigLLComb(const Args& a, int s) { return (u32)(a.sigBase + 3 * a.n + s); }

__device__ __forceinline__ char* local(const Args& a) { return reinterpret_cast<char*>(localPointer(a.win, 0)); }
// peerAt is rank r's window at off (this rank's own memory for r == me).
__device__ __forceinline__ char* peerAt(const DevComm& comm, const Args& a, Team world, int r, u64 off) {
  return r == (int)a.rank ? local(a) + off : reinterpret_cast<char*>(lsaPointer(comm, a.win, world, r, off));
}

__device__ __forceinline__ u32 atomAddAcqRel(u32* p, u32 v) {
  u32 old;
  asm volatile("atom.acq_rel.gpu.global.add.u32 %0, [%1], %2;" : "=r"(old) : "l"(p), "r"(v) : "memory");
  return old;
}

// blockFenceSys: the block's writes so far, fenced once at system scope
// by warp 0 (cumulative over what the barrier ordered before it).
__device__ __forceinline__ void blockFenceSys() {
  __syncthreads();
  if (warp() == 0) asm volatile("fence.acq_rel.sys;" ::: "memory");
  __syncthreads();
}

// blockFinish: every thread of the block is done putting; one warp fences
// the block's writes at system scope (fence.acq_rel.sys: cumulative over
// what the barrier ordered before it), then threads add 1 to counters[0..count) in
// parallel; for each counter brought to gridDim.x (every block done),
// onLast(i) runs in the thread that did (CoopThread calls only). Every
// block of the grid calls it once per kernel, with the same count.
template <typename OnLast>
__device__ __forceinline__ void blockFinish(u32* counters, int count, OnLast onLast) {
  blockFenceSys();
  for (int i = threadIdx.x; i < count; i += blockDim.x)
    if (atomAddAcqRel(&counters[i], 1) == gridDim.x - 1) onLast(i);
}

// blockCopy copies bytes (even) from src to dst with the whole block: 16-byte
// vectors, U loads in flight per thread, when both are 16-byte aligned;
// else bf16 by bf16 (rows of odd sizes, not the fast path). Plain stores:
// dst may be a peer's window (lsaPointer); blockFinish's fence orders them
// before the signal.
template <int U = 4>
__device__ void blockCopy(char* dst, const char* src, u64 bytes) {
  const u64 n = blockDim.x, r = threadIdx.x;
  if ((((u64)dst | (u64)src) & 15) == 0) {
    const uint4* s = reinterpret_cast<const uint4*>(src);
    uint4* d = reinterpret_cast<uint4*>(dst);
    const u64 nv = bytes >> 4;
    u64 i = r;
    for (; i + (U - 1) * n < nv; i += U * n) {
      uint4 v[U];
#pragma unroll
      for (int k = 0; k < U; k++) v[k] = s[i + k * n];
#pragma unroll
      for (int k = 0; k < U; k++) d[i + k * n] = v[k];
    }
    for (; i < nv; i += n) d[i] = s[i];
    for (u64 j = (nv << 4) + 2 * r; j < bytes; j += 2 * n)
      *reinterpret_cast<u16*>(dst + j) = *reinterpret_cast<const u16*>(src + j);
    return;
  }
  for (u64 j = 2 * r; j < bytes; j += 2 * n) *reinterpret_cast<u16*>(dst + j) = *reinterpret_cast<const u16*>(src + j);
}

// ---- bf16 and FP8 e4m3 (moe/gpu/fp8.go is the Go twin, bit for bit) ----

// bf16 rounds to nearest, ties to even; NaN stays a quiet NaN (moe.BF16).
__device__ __forceinline__ u16 bf16(float f) {
  u32 b = __float_as_uint(f);
  if ((b & 0x7fffffffu) > 0x7f800000u) return (u16)((b >> 16) | 0x40);
  b += 0x7fffu + ((b >> 16) & 1u);
  return (u16)(b >> 16);
}
__device__ __forceinline__ float bf16f(u16 h) { return __uint_as_float((u32)h << 16); }

// e4m3: round to nearest even, saturating to +-448 (satfinite); NaN 0x7f.
__device__ __forceinline__ u8 e4m3sw(float x) {
  u32 b = __float_as_uint(x);
  u8 s = (u8)((b >> 24) & 0x80);
  float a = fabsf(x);
  if (a != a) return s | 0x7f;
  if (a >= 448.f) return s | 0x7e;
  if (a < 0.015625f) return s | (u8)rintf(a * 512.f);  // subnormal quantum 2^-9; 8 = min normal
  int ex = (int)((b >> 23) & 0xff) - 127;
  float q = rintf(ldexpf(a, 3 - ex));  // [8, 16]
  u32 code = (u32)(ex + 7) << 3;
  if (q >= 16.f) {
    code += 8;
    q = 8.f;
  }
  code |= (u32)q - 8;
  return s | (u8)(code > 0x7e ? 0x7e : code);
}
__device__ __forceinline__ float e4m3fsw(u8 v) {
  u32 e = (v >> 3) & 15, m = v & 7;
  if (e == 15 && m == 7) return __uint_as_float(0x7fc00000u);
  float f = e == 0 ? (float)m * (1.f / 512.f) : ldexpf(1.f + (float)m * 0.125f, (int)e - 7);
  return (v & 0x80) ? -f : f;
}
// Two at a time: lo in the low byte. Hardware conversions on sm_89+.
__device__ __forceinline__ u16 e4m3x2(float lo, float hi) {
#if __CUDA_ARCH__ >= 890
  u16 r;
  asm("cvt.rn.satfinite.e4m3x2.f32 %0, %1, %2;" : "=h"(r) : "f"(hi), "f"(lo));
  return r;
#else
  return (u16)e4m3sw(lo) | ((u16)e4m3sw(hi) << 8);
#endif
}
__device__ __forceinline__ float e4m3f(u8 v) {
#if __CUDA_ARCH__ >= 890
  u32 h2;
  u16 in = v, lo;
  asm("cvt.rn.f16x2.e4m3x2 %0, %1;" : "=r"(h2) : "h"(in));
  lo = (u16)(h2 & 0xffff);
  float f;
  asm("cvt.f32.f16 %0, %1;" : "=f"(f) : "h"(lo));
  return f;
#else
  return e4m3fsw(v);
#endif
}

// ---- block helpers ----

// blockExclusiveScan returns the sum of v over lower threads of the block
// and sets *total to the block's sum. Every thread calls it; it syncs.
__device__ int blockExclusiveScan(int v, int* scratch /* [33] shared */, int* total) {
  int x = v;
#pragma unroll
  for (int d = 1; d < 32; d <<= 1) {
    int y = __shfl_up_sync(0xffffffffu, x, d);
    if (lane() >= d) x += y;
  }
  __syncthreads();  // scratch free from a previous call
  if (lane() == 31) scratch[warp()] = x;
  __syncthreads();
  if (warp() == 0) {
    int w = lane() < warps() ? scratch[lane()] : 0;
#pragma unroll
    for (int d = 1; d < 32; d <<= 1) {
      int y = __shfl_up_sync(0xffffffffu, w, d);
      if (lane() >= d) w += y;
    }
    scratch[lane()] = w;  // inclusive over warps
    if (lane() == 31) scratch[32] = w;
  }
  __syncthreads();
  int before = warp() > 0 ? scratch[warp() - 1] : 0;
  *total = scratch[32];
  return before + x - v;
}

// Counts of the round: C[s][r] = rows rank s sends rank r, from the count
// headers every rank put here (parity of the round). A header of -1 (a rank
// with bad routing) makes every count 0 on every rank alike.
__device__ bool loadCounts(const Args& a, int parity, i64* C /* shared [n][n] */) {
  const int n = (int)a.n;
  __shared__ int bad;
  if (threadIdx.x == 0) bad = 0;
  __syncthreads();
  const char* base = local(a);
  for (int i = threadIdx.x; i < n * n; i += blockDim.x) {
    int s = i / n, r = i % n;
    i64 v = reinterpret_cast<const i64*>(base + a.offCnt + ((u64)parity * n + s) * a.hdrB)[r];
    C[i] = v;
    if (v < 0) bad = 1;
  }
  __syncthreads();
  if (bad)
    for (int i = threadIdx.x; i < n * n; i += blockDim.x) C[i] = 0;
  __syncthreads();
  return bad != 0;
}

// recvOffset: where rank s's rows start in rank r's receive buffer (rows):
// sum over q < s of C[q][r] (moe.CountMatrix.RecvOffset).
__device__ __forceinline__ i64 recvOffset(const i64* C, int n, int s, int r) {
  i64 o = 0;
  for (int q = 0; q < s; q++) o += C[q * n + r];
  return o;
}
// waitAll waits, with the whole block, until signal sig(s) of every rank s
// (except skip) reached least. False if aborted (recorded).
template <typename SigOf>
__device__ bool waitAll(const Args& a, Gin& gin, SigOf sig, int skip, u64 least) {
  for (int s = 0; s < (int)a.n; s++) {
    if (s == skip) continue;
    if (!gin.waitSignal(CoopBlock{}, sig(s), least)) {
      if (threadIdx.x == 0) fail(a, ErrAborted, sig(s));
      return false;
    }
  }
  return true;
}

// ---- layout (normal mode) ----

// blockSignal: every thread of the block is done writing; thread r adds
// value to signal sig at rank r, for every rank. No fence of its own: the
// barrier orders the block's writes before the add, whose system-scope
// release is cumulative over them (gin's LSA signal; PTX memory model).
// A fence here cost 0.6-0.8 us of the low-latency dispatch (docs/moe_gpu.md).
__device__ __forceinline__ void blockSignal(const Args& a, Gin& gin, Team world, u32 sig, u64 value) {
  __syncthreads();
  if ((int)threadIdx.x < (int)a.n) gin.signal(world, threadIdx.x, SignalAdd{sig, value}, CoopThread{});
}

// putHeader writes this rank's count header straight into every rank's
// window (this one too; cnt, the round's parity, slot me): to rank r, n
// i64 tokens per rank (count(q); -1 each where bad) then L i32 tokens for
// r's experts (expert(e), e = r*L + le; 0 where bad); then signals cnt[me]
// at every rank (blockSignal). The whole block calls it.
template <typename Count, typename Expert>
__device__ __forceinline__ void putHeader(const DevComm& comm, const Args& a, int parity, bool bad, Count count,
                                          Expert expert) {
  const int n = (int)a.n, me = (int)a.rank, L = (int)a.local;
  Gin gin(comm, 0);
  Team world = teamWorld(comm);
  const u64 at = a.offCnt + ((u64)parity * n + me) * a.hdrB;
  for (int i = threadIdx.x; i < n * n; i += blockDim.x) {
    const int r = i / n, q = i % n;
    reinterpret_cast<i64*>(peerAt(comm, a, world, r, at))[q] = bad ? -1 : (i64)count(q);
  }
  for (int e = threadIdx.x; e < n * L; e += blockDim.x)
    reinterpret_cast<int*>(peerAt(comm, a, world, e / L, at + 8 * n))[e % L] = bad ? 0 : expert(e);
  blockSignal(a, gin, world, sigCnt(a, me), 1);
}

// tokenMask returns the ranks that token t's experts live on, a bit per
// rank, calling count(e) for each expert e it chose; bad gets the index
// into idx ([T][K]) of its first expert id outside [-1, E), or -1. Ids are
// loaded 8 at a time, so that independent loads are in flight together.
template <typename Count>
__device__ __forceinline__ u32 tokenMask(const int* __restrict__ idx, int t, int K, int E, int L, Count count,
                                         int* bad) {
  u32 m = 0;
  *bad = -1;
  for (int k0 = 0; k0 < K; k0 += 8) {
    int ids[8];
#pragma unroll
    for (int j = 0; j < 8; j++) ids[j] = k0 + j < K ? idx[t * K + k0 + j] : -1;
#pragma unroll
    for (int j = 0; j < 8; j++) {
      const int e = ids[j];
      if (e < -1 || e >= E) {
        if (*bad < 0) *bad = t * K + k0 + j;
      } else if (e >= 0) {
        count(e);
        m |= 1u << (e / L);
      }
    }
  }
  return m;
}

// layout: the layout of a round, by one block of 1024 threads (moe_layout's
// grid; a fused moe_dispatch runs gridLayout instead). idx is [T][K]
// expert ids (-1: dropped); dyn is (E + n + 40) ints of shared memory.
__device__ void layout(const DevComm& comm, const Args& a, const int* __restrict__ idx, int T, u64 round, int* dyn) {
  const int n = (int)a.n, K = (int)a.topk, E = (int)a.experts, L = (int)a.local, me = (int)a.rank;
  const int parity = (int)(round & 1);
  const int tid = threadIdx.x, bs = blockDim.x;
  int* sExp = dyn;           // [E]
  int* sRank = sExp + E;     // [n]
  int* sScan = sRank + n;    // [33]
  int* sBad = sScan + 33;    // [1]: lowest bad (t*K+k), INT_MAX none
  for (int i = tid; i < E; i += bs) sExp[i] = 0;
  for (int i = tid; i < n; i += bs) {
    sRank[i] = 0;
    // The next round's completion counters (used last two rounds ago).
    a.finish[(parity ^ 1) * n + i] = 0;
  }
  if (tid == 0) *sBad = 0x7fffffff;
  __syncthreads();

  // 1. masks and expert counts.
  for (int t = tid; t < T; t += bs) {
    int bad;
    a.masks[t] = tokenMask(idx, t, K, E, L, [&](int e) { atomicAdd(&sExp[e], 1); }, &bad);
    if (bad >= 0) atomicMin(sBad, bad);
  }
  __syncthreads();

  // 2. send positions: per rank, a block scan over contiguous token chunks.
  const int per = (T + bs - 1) / bs;
  const int t0 = min(T, tid * per), t1 = min(T, t0 + per);
  for (int r = 0; r < n; r++) {
    int c = 0;
    for (int t = t0; t < t1; t++) c += (a.masks[t] >> r) & 1;
    int total;
    int p = blockExclusiveScan(c, sScan, &total);
    for (int t = t0; t < t1; t++) a.pos[t * n + r] = ((a.masks[t] >> r) & 1) ? p++ : -1;
    if (tid == 0) sRank[r] = total;
  }
  __syncthreads();

  // 3. the header to every rank.
  const bool bad = *sBad != 0x7fffffff;
  for (int i = tid; i < E; i += bs) a.tokPerExpert[i] = sExp[i];
  for (int i = tid; i < n; i += bs) a.tokPerRank[i] = sRank[i];
  if (tid == 0 && bad) fail(a, ErrBadRouting, (u32)*sBad);
  putHeader(comm, a, parity, bad, [&](int q) { return sRank[q]; }, [&](int e) { return sExp[e]; });
}

// moe_layout: the layout alone, one block of 1024 threads, before a
// moe_dispatch launched with fused = 0 (Handle.Trace times it apart).
// Dynamic shared memory: (E + n + 40) ints.
extern "C" __global__ void __launch_bounds__(1024, 1)
    moe_layout(const __grid_constant__ DevComm comm, const __grid_constant__ Args a, const int* __restrict__ idx, int T,
               u64 round) {
  extern __shared__ int dyn[];
  layout(comm, a, idx, T, round, dyn);
}

// ---- dispatch (normal mode) ----

// writeEntry writes the routing entry of token t for rank r: t, then K
// local expert ids (-1 where the expert is elsewhere or dropped), then K
// weights (0 there), then zero padding to ew words (moe's block entry).
__device__ __forceinline__ void writeEntry(const Args& a, u32* e, const int* idx, const float* w, int t, int r) {
  const int K = (int)a.topk, L = (int)a.local;
  e[0] = (u32)t;
  for (int k0 = 0; k0 < K; k0 += 8) {
    int ids[8];
    float ws[8];
#pragma unroll
    for (int j = 0; j < 8; j++) {
      ids[j] = k0 + j < K ? idx[t * K + k0 + j] : -1;
      ws[j] = k0 + j < K ? w[t * K + k0 + j] : 0.f;
    }
#pragma unroll
    for (int j = 0; j < 8; j++) {
      if (k0 + j >= K) break;
      int id = ids[j];
      float wt = 0.f;
      if (id >= 0 && id / L == r) {
        wt = ws[j];
        id %= L;
      } else {
        id = -1;
      }
      e[1 + k0 + j] = (u32)id;
      e[1 + K + k0 + j] = __float_as_uint(wt);
    }
  }
  for (int j = 1 + 2 * K; j < (int)a.ew; j++) e[j] = 0;
}

// BlockDest: the destination a block of the normal dispatch serves and its
// share of the tokens: block j of the g blocks serving rank r. Remote
// destinations get 4 blocks for each one that copies locally (NVLink is
// slower than HBM), every destination at least one (the host launches at
// least n blocks).
struct BlockDest {
  int r, j, g;
};
__device__ __forceinline__ BlockDest blockDest(int b, int G, int n, int me) {
  if (n == 1) return BlockDest{me, b, G};
  const int gs = min(max(1, G / (4 * (n - 1) + 1)), G - (n - 1));  // local copy
  const int gr = G - gs;                                            // remote destinations
  if (b >= gr) return BlockDest{me, b - gr, gs};
  for (int q = 0;; q++) {
    const int lo = (int)((i64)gr * q / (n - 1)), hi = (int)((i64)gr * (q + 1) / (n - 1));
    if (b < hi) return BlockDest{(me + 1 + q) % n, b - lo, hi - lo};
  }
}

// Lay: the scratch of the fused layout in device state (plan.go: lay), u32
// words: [2 parity][E][layLine] tokens per expert, one 128-byte line each
// so that the grid's reductions on them spread over L2 slices (32 experts
// to a line, the 32K reductions of 4096 tokens at top-8 held the header
// back about 7 us: docs/moe_gpu.md), [2] arrival counters, [2] bad words
// (~index of the lowest bad routing slot; 0: none), then
// [ceil(MaxTokens/32)][n] tokens per 32-token chunk and rank. A round
// uses its parity's words and zeroes the other parity's for the next
// (nextLay); the chunk counts are written before they are read in the
// same round.
enum { layLine = 32 };
struct Lay {
  u32 *exp, *arrive, *bad, *chunk;  // exp: stride layLine
};
__device__ __forceinline__ Lay lay(const Args& a, int parity) {
  const u64 X = 2 * a.experts * layLine;
  return Lay{a.lay + parity * a.experts * layLine, a.lay + X + parity, a.lay + X + 2 + parity, a.lay + X + 4};
}

// nextLay: the last block of moe_dispatch zeroes the next round's layout
// scratch and completion counters (that parity was last used two rounds
// ago, by kernels that have returned).
__device__ void nextLay(const Args& a, int parity) {
  if (blockIdx.x != gridDim.x - 1) return;
  const Lay nx = lay(a, parity ^ 1);
  for (int i = threadIdx.x; i < (int)a.experts; i += blockDim.x) nx.exp[i * layLine] = 0;
  for (int i = threadIdx.x; i < (int)a.n; i += blockDim.x) a.finish[(parity ^ 1) * a.n + i] = 0;
  if (threadIdx.x == 0) {
    *nx.arrive = 0;
    *nx.bad = 0;
  }
}

__device__ __forceinline__ u32 warpSum(u32 v) {
#pragma unroll
  for (int d = 16; d > 0; d >>= 1) v += __shfl_xor_sync(0xffffffffu, v, d);
  return v;
}

// gridLayout: the layout of a round computed by every block of a fused
// moe_dispatch: the same masks, counts and header as layout, in 32-token
// chunks spread over the grid's warps (chunk c: block c % G, warp c / G);
// layout's one block takes about 20 us for 4096 tokens at top-8
// (docs/moe_gpu.md), all of it before any row moves. Each chunk's warp
// writes its tokens' masks, adds its tokens' experts to the expert counts
// (global reductions) and writes its rows per rank (Lay.chunk); every
// block then adds 1 to the arrival counter, and the block that brings it
// to G sums the chunk counts, writes the header and puts it to every
// rank as layout does (SignalAdd cnt[me]). Send positions are not
// computed here: each block of the dispatch counts its own (the chunk
// counts before its token range, then a ballot per 32 tokens) and writes
// them (Args.pos) for the combine.
__device__ void gridLayout(const DevComm& comm, const Args& a, const int* __restrict__ idx, int T, u64 round) {
  const int n = (int)a.n, K = (int)a.topk, E = (int)a.experts, L = (int)a.local, me = (int)a.rank;
  const int parity = (int)(round & 1);
  const int G = gridDim.x;
  const Lay ly = lay(a, parity);
  const int nch = (T + 31) / 32;
  for (int c = warp() * G + blockIdx.x; c < nch; c += warps() * G) {
    const int t = c * 32 + lane();
    u32 m = 0, bad = 0;
    if (t < T) {
      int b;
      m = tokenMask(idx, t, K, E, L, [&](int e) { atomicAdd(&ly.exp[e * layLine], 1u); }, &b);
      if (b >= 0) bad = ~(u32)b;
    }
    if (bad != 0) atomicMax(ly.bad, bad);
    if (t < T) a.masks[t] = m;
    for (int r = 0; r < n; r++) {
      const u32 b = __ballot_sync(0xffffffffu, (m >> r) & 1);
      if (lane() == r) ly.chunk[c * n + r] = __popc(b);
    }
  }

  // The last block to arrive (acquire: every block's writes above, which
  // its barrier ordered before its release) writes and puts the header.
  __shared__ int sLast;
  __shared__ int sTot[maxRanks];
  __syncthreads();
  if (threadIdx.x == 0) sLast = atomAddAcqRel(ly.arrive, 1) == (u32)G - 1;
  __syncthreads();
  if (!sLast) return;
  // The expert counts (up to one per thread) and the bad word load beside
  // the chunk sums: one memory round trip.
  const int e0 = (int)threadIdx.x < E ? (int)__ldcg(&ly.exp[threadIdx.x * layLine]) : 0;
  const u32 badw = __ldcg(ly.bad);
  for (int r = warp(); r < n; r += warps()) {
    u32 v = 0;
    for (int c = lane(); c < nch; c += 32) v += __ldcg(&ly.chunk[c * n + r]);
    v = warpSum(v);
    if (lane() == 0) sTot[r] = (int)v;
  }
  const bool bad = badw != 0;
  for (int i = threadIdx.x; i < E; i += blockDim.x)
    a.tokPerExpert[i] = i == (int)threadIdx.x ? e0 : (int)__ldcg(&ly.exp[i * layLine]);
  __syncthreads();  // sTot; tokPerExpert beyond the first blockDim experts
  for (int i = threadIdx.x; i < n; i += blockDim.x) a.tokPerRank[i] = sTot[i];
  if (threadIdx.x == 0 && bad) fail(a, ErrBadRouting, ~badw);
  // putHeader's thread e writes expert e's count first: e0 where it has it.
  putHeader(comm, a, parity, bad, [&](int q) { return sTot[q]; },
            [&](int e) { return e == (int)threadIdx.x ? e0 : a.tokPerExpert[e]; });
}

// awaitLayout: the blocks of a fused moe_dispatch wait for the header
// put of gridLayout (this rank's count signal, which every block's chunk
// counts and masks precede) polling fast for a few microseconds, then
// once a microsecond: 131 blocks polling every 128 ns (gin's waitSignal)
// slow a block that computes meanwhile (one block computing the whole
// layout of 4096 tokens, the dispatch took 368 us instead of 200:
// docs/moe_gpu.md). waitAll follows, and ends the wait on abort.
__device__ void awaitLayout(const Args& a, Gin& gin, u64 round) {
  if (threadIdx.x == 0)
    for (u32 i = 1; gin.readSignal(sigCnt(a, (int)a.rank)) < round; i++) {
      __nanosleep(i <= 32 ? 128 : 1000);
      if ((i & 63) == 0 && gin.aborted()) break;
    }
  __syncthreads();
}

// moe_dispatch: grid of at most two 512-thread blocks per SM (plan.go:
// dispatchThreads), at least n, every block resident at once.
// With fused (the default launch), its blocks first compute the round's
// layout (gridLayout; one kernel boundary less than moe_layout: about
// 2 us at 128 tokens, docs/moe_gpu.md) and wait for this rank's header
// (awaitLayout); else moe_layout ran before it. Then every block waits
// for every rank's counts. Dynamic shared memory: n*n i64.
extern "C" __global__ void __launch_bounds__(512, 2)
    moe_dispatch(const __grid_constant__ DevComm comm, const __grid_constant__ Args a, const char* __restrict__ x,
                 u64 xStride, const int* __restrict__ idx, const float* __restrict__ wts, int T, u64 round,
                 int fused) {
  const int n = (int)a.n, me = (int)a.rank, L = (int)a.local;
  const int parity = (int)(round & 1);
  extern __shared__ i64 C[];  // [n][n]
  Gin gin(comm, 0);
  Team world = teamWorld(comm);

  // Dispatch launches the kernel overlapped (programmatic dependent
  // launch): the routing, the rows and the state come from the work ahead.
  waitPrior();
  // 0. This rank's layout (every block): its counts to every rank.
  nextLay(a, parity);
  if (fused) {
    gridLayout(comm, a, idx, T, round);
    awaitLayout(a, gin, round);
  }
  // 1. every rank's counts.
  if (!waitAll(a, gin, [&](int s) { return sigCnt(a, s); }, -1, round)) return;
  const bool bad = loadCounts(a, parity, C);
  if (bad && blockIdx.x == 0 && threadIdx.x == 0) fail(a, ErrPeerBadRouting, 0);
  if (blockIdx.x == 0) {  // rows per local expert this rank receives
    const char* base = local(a);
    for (int le = threadIdx.x; le < L; le += blockDim.x) {
      int sum = 0;
      for (int s = 0; s < n && !bad; s++)
        sum += reinterpret_cast<const int*>(base + a.offCnt + ((u64)parity * n + s) * a.hdrB + 8 * n)[le];
      a.recvTokPerExpert[le] = sum;
    }
  }

  // 2. each block streams one contiguous token range to one destination
  // (blockDest), in sub-chunks of 32 tokens: a put per run of consecutive
  // tokens (contiguous at both ends) and one of their routing entries, with
  // the whole block (the transport's fastest pattern: one contiguous
  // stream per SM).
  __shared__ u32 sBits;
  __shared__ int sP0;
  const BlockDest bd = blockDest(blockIdx.x, gridDim.x, n, me);
  const int r = bd.r;
  const int tb0 = (int)((i64)T * bd.j / bd.g), tb1 = (int)((i64)T * (bd.j + 1) / bd.g);
  const i64 base0 = recvOffset(C, n, me, r);
  const u64 ewB = a.ew * 4;
  char* base = local(a);
  // Fused: warp 0 counts the send positions itself, from the chunk counts
  // before tb0 and the masks of tb0's chunk (run: rows before the next
  // sub-chunk), and writes those of its range.
  u32 run = 0;
  if (fused && warp() == 0 && !bad) {
    const Lay ly = lay(a, parity);
    const int cb = tb0 / 32, t = cb * 32 + lane();
    for (int c = lane(); c < cb; c += 32) run += __ldcg(&ly.chunk[c * n + r]);
    if (t < tb0) run += (__ldcg(&a.masks[t]) >> r) & 1;
    run = warpSum(run);
  }
  for (int c0 = tb0; c0 < tb1 && !bad; c0 += 32) {
    if (warp() == 0) {
      const int t = c0 + lane();
      const bool in = t < tb1 && ((__ldcg(&a.masks[t]) >> r) & 1);
      const u32 bits = __ballot_sync(0xffffffffu, in);
      const int j = __popc(bits & ((1u << lane()) - 1));
      int p0;
      if (fused) {
        p0 = (int)run;
        run += __popc(bits);
        if (t < tb1) a.pos[t * n + r] = in ? p0 + j : -1;
      } else {
        p0 = bits ? __shfl_sync(0xffffffffu, in ? a.pos[t * n + r] : 0, __ffs(bits) - 1) : 0;
      }
      if (in)  // routing entries, staged at their place for r
        writeEntry(a, reinterpret_cast<u32*>(base + a.offMetaStage + ((u64)r * a.maxT + p0 + j) * ewB), idx, wts, t, r);
      if (lane() == 0) {
        sBits = bits;
        sP0 = p0;
      }
    }
    __syncthreads();
    const u32 bits = sBits;
    const i64 row0 = base0 + sP0;  // this sub-chunk's first row at r
    u64 rest = bits;
    while (rest) {
      const int s0 = __ffsll(rest) - 1;
      const int len = __ffsll(~(rest >> s0)) - 1;
      const int j = __popc(bits & ((1u << s0) - 1));
      const u64 at = a.offRecvX + (u64)(row0 + j) * a.rs;
      char* dst = r == me ? base + at : reinterpret_cast<char*>(lsaPointer(comm, a.win, world, r, at));
      const char* src = x + (u64)(c0 + s0) * xStride;
      if (xStride == a.rs)  // one stream for the run
        blockCopy<8>(dst, src, (u64)len * a.rs);
      else
        for (int q = 0; q < len; q++) blockCopy<8>(dst + (u64)q * a.rs, src + (u64)q * xStride, a.hidden * 2);
      rest &= ~(((1ull << len) - 1) << s0);
    }
    if (bits)
      gin.put(world, r, a.win, a.offRecvMeta + (u64)row0 * ewB, a.win, a.offMetaStage + ((u64)r * a.maxT + sP0) * ewB,
              (u64)__popc(bits) * ewB, None{}, None{}, CoopBlock{});
    __syncthreads();  // sBits, sP0 free
  }
  // Completion: the last block done signals every destination.
  blockFinish(a.finish + parity * n, n, [&](int r) { gin.signal(world, r, SignalAdd{sigData(a, me), 1}, CoopThread{}); });

  // 3. every rank's rows are here: one block waits, the others are done
  // (the kernel ends when the last block does, and blocks polling beside
  // blocks still putting slow those puts down).
  if (blockIdx.x == 0) waitAll(a, gin, [&](int s) { return sigData(a, s); }, -1, round);
}

// ---- combine (normal mode) ----

// accumulate8 adds the 8 bf16 of v to acc.
__device__ __forceinline__ void accumulate8(float* acc, uint4 v, float w) {
  const u32 q[4] = {v.x, v.y, v.z, v.w};
#pragma unroll
  for (int i = 0; i < 4; i++) {
    acc[2 * i] += w * __uint_as_float(q[i] << 16);
    acc[2 * i + 1] += w * __uint_as_float(q[i] & 0xffff0000u);
  }
}
__device__ __forceinline__ void accumulate4(float* acc, uint2 v, float w) {
  acc[0] += w * __uint_as_float(v.x << 16);
  acc[1] += w * __uint_as_float(v.x & 0xffff0000u);
  acc[2] += w * __uint_as_float(v.y << 16);
  acc[3] += w * __uint_as_float(v.y & 0xffff0000u);
}
// addScaled4 adds w * v (4 bf16) to acc, each product rounded to float32
// on its own (__fmul_rn is never contracted into an FMA): the value of a
// partial sum of that single product (moe_ll_combine, step 4).
__device__ __forceinline__ void addScaled4(float* acc, uint2 v, float w) {
  acc[0] += __fmul_rn(w, __uint_as_float(v.x << 16));
  acc[1] += __fmul_rn(w, __uint_as_float(v.x & 0xffff0000u));
  acc[2] += __fmul_rn(w, __uint_as_float(v.y << 16));
  acc[3] += __fmul_rn(w, __uint_as_float(v.y & 0xffff0000u));
}
__device__ __forceinline__ uint4 pack8(const float* acc) {
  uint4 v;
  v.x = (u32)bf16(acc[0]) | ((u32)bf16(acc[1]) << 16);
  v.y = (u32)bf16(acc[2]) | ((u32)bf16(acc[3]) << 16);
  v.z = (u32)bf16(acc[4]) | ((u32)bf16(acc[5]) << 16);
  v.w = (u32)bf16(acc[6]) | ((u32)bf16(acc[7]) << 16);
  return v;
}

// reduceRow: out (hidden bf16) = bf16(sum over j < nsrc of w[j] * src[j]),
// in float32, for the columns of slice sl of S, by one warp; null sources
// are skipped. src and w are the warp's slots in shared memory, written
// before a __syncwarp. Slices are whole 16-byte vectors where rows allow.
//
// With at most 4 sources (2 and 4 ranks), a lane loads every source's
// vectors of 8/nsrc positions before it sums any: 8 loads in flight, most
// over NVLink (with 4 ranks, loading two sources at a time made the
// combine of 4096 tokens 2 % slower on 4 x H200).
template <int P>
__device__ __forceinline__ void reduceWide(uint4* o, int v0, int v1, int nsrc, const u16* const* src, const float* w) {
  constexpr int J = 8 / P;  // sources
  const uint4 z = make_uint4(0, 0, 0, 0);
  const uint4* s[J];
#pragma unroll
  for (int j = 0; j < J; j++) s[j] = j < nsrc ? reinterpret_cast<const uint4*>(src[j]) : nullptr;
  for (int v = v0 + lane(); v < v1; v += 32 * P) {
    uint4 x[J * P];
#pragma unroll
    for (int j = 0; j < J; j++)
#pragma unroll
      for (int q = 0; q < P; q++) x[j * P + q] = s[j] != nullptr && v + 32 * q < v1 ? s[j][v + 32 * q] : z;
#pragma unroll
    for (int q = 0; q < P; q++) {
      if (v + 32 * q >= v1) break;
      float acc[8] = {0, 0, 0, 0, 0, 0, 0, 0};
#pragma unroll
      for (int j = 0; j < J; j++)
        if (s[j] != nullptr) accumulate8(acc, x[j * P + q], w[j]);
      o[v + 32 * q] = pack8(acc);
    }
  }
}

__device__ __forceinline__ void reduceRow(u16* out, int hidden, int sl, int S, int nsrc, const u16* const* src,
                                          const float* w) {
  if (((u64)out & 15) == 0 && (hidden & 7) == 0) {
    const int nv = hidden >> 3, v0 = (int)((i64)nv * sl / S), v1 = (int)((i64)nv * (sl + 1) / S);
    if (nsrc <= 2) return reduceWide<4>(reinterpret_cast<uint4*>(out), v0, v1, nsrc, src, w);
    if (nsrc <= 4) return reduceWide<2>(reinterpret_cast<uint4*>(out), v0, v1, nsrc, src, w);
    const uint4 z = make_uint4(0, 0, 0, 0);
    for (int v = v0 + lane(); v < v1; v += 64) {
      float acc0[8] = {0, 0, 0, 0, 0, 0, 0, 0}, acc1[8] = {0, 0, 0, 0, 0, 0, 0, 0};
      const bool two = v + 32 < v1;
      // Two sources at a time: their four loads in flight together, then
      // the sums in source order.
      for (int j = 0; j < nsrc; j += 2) {
        const uint4* s0 = reinterpret_cast<const uint4*>(src[j]);
        const uint4* s1 = j + 1 < nsrc ? reinterpret_cast<const uint4*>(src[j + 1]) : nullptr;
        uint4 a0 = z, a1 = z, b0 = z, b1 = z;
        if (s0 != nullptr) {
          a0 = s0[v];
          if (two) a1 = s0[v + 32];
        }
        if (s1 != nullptr) {
          b0 = s1[v];
          if (two) b1 = s1[v + 32];
        }
        if (s0 != nullptr) {
          accumulate8(acc0, a0, w[j]);
          if (two) accumulate8(acc1, a1, w[j]);
        }
        if (s1 != nullptr) {
          accumulate8(acc0, b0, w[j + 1]);
          if (two) accumulate8(acc1, b1, w[j + 1]);
        }
      }
      reinterpret_cast<uint4*>(out)[v] = pack8(acc0);
      if (two) reinterpret_cast<uint4*>(out)[v + 32] = pack8(acc1);
    }
    return;
  }
  const int c0 = (int)((i64)hidden * sl / S), c1 = (int)((i64)hidden * (sl + 1) / S);
  for (int i = c0 + lane(); i < c1; i += 32) {
    float acc = 0.f;
    for (int j = 0; j < nsrc; j++)
      if (src[j] != nullptr) acc += w[j] * bf16f(src[j][i]);
    out[i] = bf16(acc);
  }
}

// slicesPerToken: how many warps share a token's row in a reduction, so
// that few tokens still keep the grid's warps busy (at least 64 columns
// per warp).
__device__ __forceinline__ int slicesPerToken(int T, int hidden, int nw) {
  return max(1, min(nw / max(T, 1), hidden / 64));
}

// Per-warp source slots of reduceRow, for blocks of up to 1024 threads
// (moe_ll_combine's; moe_combine runs 512).
struct ReduceSlots {
  const u16* src[32][32];
  float w[32][32];
};

// moe_combine: out is [T][hidden] bf16. Dynamic shared memory: n*n i64.
// The sources pull: block 0 tells every other rank that this rank's expert
// outputs (recv.X, written by kernels queued before this one) are there to
// read, signal comb[me]; each rank waits for every other's, then sums each
// token's rows in float32, loading those at other ranks straight from
// their recv.X through the LSA mapping (lsaPointer, as ncclGetLsaPointer)
// and rounds once to bf16. No rows are staged, and no block waits while
// another moves data (on 2 x H200, blocks polling a signal beside blocks
// putting over NVLink slowed the puts 2-4x). A rank's recv.X is next
// written by the next dispatch, which starts after every rank's next
// layout, so after every rank's combine is done reading.
extern "C" __global__ void __launch_bounds__(512, 2)
    moe_combine(const __grid_constant__ DevComm comm, const __grid_constant__ Args a, int T, u64 round, u16* out) {
  const int n = (int)a.n, me = (int)a.rank, H = (int)a.hidden;
  const int parity = (int)(round & 1);
  extern __shared__ i64 C[];  // [n][n]
  Gin gin(comm, 0);
  Team world = teamWorld(comm);
  waitPrior();  // launched overlapped (Combine): the outputs come from the experts' kernels ahead

  // 1. this rank's outputs are ready (the counts load while the signals
  // fly); every other rank's are.
  if (blockIdx.x == 0 && threadIdx.x < n && (int)threadIdx.x != me)
    gin.signal(world, threadIdx.x, SignalAdd{sigComb(a, me), 1}, CoopThread{});
  loadCounts(a, parity, C);
  if (!waitAll(a, gin, [&](int s) { return sigComb(a, s); }, me, round)) return;

  // 2. out[t] = sum over ranks r that t went to of its row at r, in float32.
  __shared__ ReduceSlots slots;
  const char* lb = local(a);
  // Items go round the blocks first, so that with fewer items than warps
  // every SM still pulls (4096 tokens on 264 x 16 warps: every block has
  // 15 or 16 warps pulling).
  const int gw = warp() * gridDim.x + blockIdx.x, nw = gridDim.x * warps();
  const int S = slicesPerToken(T, H, nw);
  for (int it = gw; it < T * S; it += nw) {
    const int t = it / S;
    if (lane() < n) {
      const int r = lane();
      const int p = a.pos[t * n + r];
      const u16* src = nullptr;
      if (p >= 0 && C[me * n + r] > 0) {
        const u64 off = a.offRecvX + (u64)(recvOffset(C, n, me, r) + p) * a.rs;
        src = reinterpret_cast<const u16*>(r == me ? lb + off : lsaPointer(comm, a.win, world, r, off));
      }
      slots.src[warp()][r] = src;
      slots.w[warp()][r] = 1.f;
    }
    __syncwarp();
    reduceRow(out + (u64)t * H, H, it % S, S, n, slots.src[warp()], slots.w[warp()]);
    __syncwarp();
  }
}

// ---- low latency ----

// quantize stages token t's FP8 slot: align16(H) e4m3 bytes, then one
// float32 scale per 128 channels (DeepEP: amax from 1e-4, scale 448/amax,
// stored scale_inv = amax * (1/448)). All warps of the block; a warp takes
// groups g and g + warps() together and loads both before it stores
// either (the compiler must assume x and slot alias), so a row of up to
// 2 * warps() * 128 channels costs one memory round trip, not two.
__device__ void quantize(const Args& a, const u16* x, u8* slot) {
  const int H = (int)a.hidden, G = (int)a.groups, nw = warps();
  float* scales = reinterpret_cast<float*>(slot + ((H + 15) & ~15));
  const bool vec = ((u64)x & 7) == 0;
  for (int g0 = warp(); g0 < G; g0 += 2 * nw) {
    uint2 raw[2];  // a lane's 4 channels of each group, bf16 pairs (0 past H)
#pragma unroll
    for (int h = 0; h < 2; h++) {
      const int c0 = (g0 + h * nw) * 128 + lane() * 4;
      if (vec && c0 + 4 <= H) {
        raw[h] = *reinterpret_cast<const uint2*>(x + c0);
      } else {
        u32 b[4];
#pragma unroll
        for (int i = 0; i < 4; i++) b[i] = c0 + i < H ? x[c0 + i] : 0u;
        raw[h] = make_uint2(b[0] | b[1] << 16, b[2] | b[3] << 16);
      }
    }
#pragma unroll
    for (int h = 0; h < 2; h++) {
      const int g = g0 + h * nw;
      if (g >= G) break;  // the warp's lanes agree
      const int c0 = g * 128 + lane() * 4;
      const float v[4] = {bf16f((u16)raw[h].x), bf16f((u16)(raw[h].x >> 16)), bf16f((u16)raw[h].y),
                          bf16f((u16)(raw[h].y >> 16))};
      float amax = 1e-4f;
#pragma unroll
      for (int i = 0; i < 4; i++) amax = fmaxf(amax, fabsf(v[i]));
#pragma unroll
      for (int d = 16; d > 0; d >>= 1) amax = fmaxf(amax, __shfl_xor_sync(0xffffffffu, amax, d));
      const float s = 448.f / amax;
      const u16 lo = e4m3x2(v[0] * s, v[1] * s), hi = e4m3x2(v[2] * s, v[3] * s);
      if (c0 + 4 <= H) {
        *reinterpret_cast<u32*>(slot + c0) = (u32)lo | ((u32)hi << 16);
      } else {
        const u8 b[4] = {(u8)lo, (u8)(lo >> 8), (u8)hi, (u8)(hi >> 8)};
        for (int i = 0; i < 4; i++)
          if (c0 + i < H) slot[c0 + i] = b[i];
      }
      if (lane() == 0) scales[g] = amax * (1.f / 448.f);
    }
  }
}

// Low-latency slots are in token order at every expert: the slot of pair
// (t, k) of a source is the number of that source's pairs before it (in
// t*K+k order) routed to the same expert. The source computes it, keeps it
// for CombineLL and sends it to the expert's rank with the routing (entry
// words). A block takes a contiguous token range: it counts the pairs
// before it per expert into hist (shared, E words; moe_ll_dispatch, step
// 3), then batches of up to 32 tokens get their slots in parallel
// (batchSlots, a warp per token) and are added to hist (batchCount). Ids
// outside [0, E) get none.
// batchSlots: warp j of the batch (tokens t0..t0+nb-1, their routing in
// sRoute) gives lane k < K its pair's expert in *e (-1: none) and its slot
// (unbounded): hist, plus the batch's pairs before it with the same expert.
__device__ __forceinline__ int batchSlots(const int* sRoute, int j, int K, int E, const u32* hist, int* e) {
  const int x = lane() < K ? sRoute[j * K + lane()] : -1;
  const bool in = x >= 0 && x < E;
  int c = 0;
  if (in)
    for (int q = 0; q < j * K + lane(); q++) c += sRoute[q] == x;
  *e = in ? x : -1;
  return in ? (int)hist[x] + c : -1;
}

// batchCount adds the batch's pairs to hist (whole block; the caller syncs
// before hist is read again).
__device__ __forceinline__ void batchCount(const int* sRoute, int nb, int K, int E, u32* hist) {
  for (int i = threadIdx.x; i < nb * K; i += blockDim.x) {
    const int e = sRoute[i];
    if (e >= 0 && e < E) atomicAdd(&hist[e], 1u);
  }
}

// llRoute returns source s's route words in this rank's window (plan.go:
// llRoute), 8 bytes each: T, then [MaxLLTokens][K] entry words from word
// llEntry on, then its pairs per expert ([E], from word llPairs on).
__device__ __forceinline__ const u64* llRoute(const Args& a, int s) {
  return reinterpret_cast<const u64*>(local(a) + a.offLLRoute + (u64)s * a.routeB);
}
enum { llT = 0, llEntry = 1 };
__device__ __forceinline__ u64 llPairs(const Args& a) { return llEntry + a.maxLL * a.topk; }

// Route words carry their round: the routing block writes each value with
// one 8-byte store, the value in the low half and the round's low 32 bits
// (the flag) in the high half, so a reader that sees this round's flag
// sees this round's value, and the routing needs neither a fence nor a
// signal (NCCL's LL protocol). A system-scope release before a signal
// cost 1.1 us of the low-latency dispatch (docs/moe_gpu.md).
__device__ __forceinline__ void llPut(u64* p, u32 v, u64 round) {
  asm volatile("st.relaxed.sys.global.u64 [%0], %1;" ::"l"(p), "l"((u64)v | round << 32) : "memory");
}

// An entry word is a pair's expert and its slot there, as the source
// computed it for CombineLL (receivers need no pass over the routing before
// their tokens): e+1 in the low 13 bits (0: dropped or not an expert id),
// slot+1 above them (0: past MaxLLTokens, ErrSlotOverflow). Config bounds
// NumExperts to 4096 and MaxLLTokens to 65536.
__device__ __forceinline__ u32 llEntryWord(int e, int slot) { return (u32)(e + 1) | (u32)(slot + 1) << 13; }
__device__ __forceinline__ int llEntryExpert(u32 v) { return (int)(v & 0x1fff) - 1; }
__device__ __forceinline__ int llEntrySlot(u32 v) { return (int)(v >> 13) - 1; }

// llWord waits until route word p carries round's flag and returns its
// value; if the host aborts first, it records ErrAborted and returns dflt.
// It polls and sleeps ~64 ns between polls after the first 8: receivers
// poll while rows still land in their memory over NVLink, and back-to-back
// polls slow those writes (gin__funcs.cuh: waitWord). With Acquire, every
// poll is an acquire load (pairs with a system fence and llPut after it):
// the value is there on the first poll or soon after, and an acquire load
// after the relaxed poll that saw it cost a round trip more.
template <bool Acquire>
__device__ u32 llWordT(const Args& a, const Gin& gin, const u64* p, u64 round, u32 dflt) {
  u64 v;
  for (u32 i = 0;; i++) {
    if (Acquire)
      asm volatile("ld.acquire.sys.global.u64 %0, [%1];" : "=l"(v) : "l"(p) : "memory");
    else
      asm volatile("ld.relaxed.sys.global.u64 %0, [%1];" : "=l"(v) : "l"(p) : "memory");
    if ((u32)(v >> 32) == (u32)round) return (u32)v;
    if ((i & 255) == 255 && gin.aborted()) {
      fail(a, ErrAborted, 0);
      return dflt;
    }
    if (i >= 8) __nanosleep(64);
  }
}
__device__ __forceinline__ u32 llWord(const Args& a, const Gin& gin, const u64* p, u64 round, u32 dflt) {
  return llWordT<false>(a, gin, p, round, dflt);
}
__device__ __forceinline__ u32 llWordAcquire(const Args& a, const Gin& gin, const u64* p, u64 round, u32 dflt) {
  return llWordT<true>(a, gin, p, round, dflt);
}

// pullRows copies each pair's row (nb pairs, V 16-byte vectors a row,
// from src[j]) into its m[j] slots dst(j, q), with the whole block: every
// thread issues up to four loads (NVLink reads, most of them) before its
// stores, so a block has its reads in flight at once.
template <typename Dst>
__device__ __forceinline__ void pullRows(int nb, int V, const uint4* const* src, const int* m, Dst dst) {
  const int total = nb * V, bs = blockDim.x;
  for (int base = threadIdx.x; base < total; base += 4 * bs) {
    uint4 val[4];
    int jj[4];
#pragma unroll
    for (int u = 0; u < 4; u++) {
      const int it = base + u * bs;
      jj[u] = -1;
      if (it < total) {
        const int j = it / V;
        if (m[j] > 0) {
          jj[u] = j;
          val[u] = src[j][it - j * V];
        }
      }
    }
#pragma unroll
    for (int u = 0; u < 4; u++) {
      const int j = jj[u];
      if (j < 0) continue;
      const int v = base + u * bs - j * V;
      for (int q = 0; q < m[j]; q++) reinterpret_cast<uint4*>(dst(j, q))[v] = val[u];
    }
  }
}

// moe_ll_dispatch: grid of at most one 1024-thread block per SM, the same
// grid G on every rank (New agrees on it). Dynamic shared memory: E u32
// (per-expert counts of the slot computations).
//
// Sources publish, receivers pull, and the routing travels as route words
// that carry the round, read as they land (no signal). The last block (R,
// the routing block) writes this rank's T and its pairs per expert into
// every rank's route region and then counts the rows each local expert
// gets; the others (the workers) each take the same token range
// [maxLL*b/W, maxLL*(b+1)/W) as source and as receiver. As a source, worker
// b stages its tokens' rows where receivers read them (FP8 slots quantized
// into llStage; bf16 rows copied into Input unless x is Input), computes
// its pairs' slots (token order at every expert) for CombineLL and writes
// them to every rank as entry words; tokens past T get entry words too (no
// expert), so receivers need not know T first. Where it staged, each
// thread that writes entry words fences once at system scope after the
// barrier that follows the staging and then writes them relaxed (a
// release pattern), so a receiver that reads one (ld.acquire.sys) reads
// the row.
// As a receiver, worker b reads the entry words of its range of every
// source (this rank's own among them) and pulls each token routed here
// once, through the LSA mapping, storing it from registers into the slot
// of every local expert it chose: a row crosses NVLink once per receiving
// rank, not once per expert (4x fewer bytes at top-8 over 2 ranks), and a
// block's reads of every source are in flight at once. No block waits on a
// signal, and each waits only for the blocks with the same range at the
// other ranks, which start together.
// Reuse: a source's rows and route words at a rank stay put until its
// next dispatch, which comes after its combine; that combine waited for
// the partial sum of every token a rank pulled, sent after that rank's
// dispatch returned; and the route words wait for every block of every
// rank's last combine (lastCombine below).
extern "C" __global__ void __launch_bounds__(1024, 1)
    moe_ll_dispatch(const __grid_constant__ DevComm comm, const __grid_constant__ Args a, const char* __restrict__ x,
                    u64 xStride, const int* __restrict__ idx, int T, u64 round) {
  const int n = (int)a.n, me = (int)a.rank, K = (int)a.topk, E = (int)a.experts, L = (int)a.local;
  const int maxLL = (int)a.maxLL, lo = me * L;
  // R, the last block, routes; the W others (all of a 1-block grid) stage,
  // compute this rank's slots and pull.
  const int G = gridDim.x, R = G - 1, W = G > 1 ? G - 1 : 1;
  const int b = blockIdx.x;
  const bool worker = b < W;
  Gin gin(comm, 0);
  Team world = teamWorld(comm);
  char* lb = local(a);
  extern __shared__ u32 hist[];         // [E]
  __shared__ int sRoute[32 * maxTopK];  // a batch's routing
  __shared__ u64* sTo[maxRanks];        // this source's route words at every rank
  __shared__ u16 sLe[32][maxTopK];      // a chunk's local experts per token
  __shared__ int sSlot[32][maxTopK];    // and their slots
  __shared__ int sN[32];                // local pairs per token
  __shared__ const uint4* sSrc[32];     // where each token's row is
  const int t0 = (int)((i64)maxLL * b / W), t1 = (int)((i64)maxLL * (b + 1) / W);
  const int u0 = min(t0, T), u1 = min(t1, T);
  const bool staged = a.fp8 || x != lb + a.offInput;
  // A worker's routing up to the end of its first batch (the pairs before
  // its range, then its first 32 tokens; tokens past T have none), loaded
  // right after the wait for the work ahead: one memory round trip, under
  // the waits below.
  const int nb0 = worker ? min(32, t1 - t0) : 0, pfx = worker ? u0 * K : 0, nld = pfx + nb0 * K;
  auto routeAt = [&](int i) {
    const int j = i < pfx ? i : t0 * K + (i - pfx);
    return j < T * K ? idx[j] : -1;
  };
  if ((int)threadIdx.x < n)
    sTo[threadIdx.x] = reinterpret_cast<u64*>(peerAt(comm, a, world, threadIdx.x, a.offLLRoute + (u64)me * a.routeB));
  // DispatchLL launches the kernel overlapped (programmatic dependent
  // launch): the blocks may start while the kernel ahead of it on the
  // stream still runs. Up to here they read only arguments and the
  // window's descriptor, which no kernel writes; the routing, the rows and
  // every write of this kernel come after the wait for that kernel.
  waitPrior();
  TRACE_MIN(trDStart);
  const int i0 = threadIdx.x, i1 = threadIdx.x + blockDim.x;
  const int e0 = i0 < nld ? routeAt(i0) : -1, e1 = i1 < nld ? routeAt(i1) : -1;
  // lastCombine: every block of the other ranks' last combine is done with
  // the route words this source wrote there (llComb; this rank's own is
  // done: stream order). Thread 32 + r of warp 1 waits for rank r (beside
  // warp 0's pointer loads above); the block syncs before route words go to
  // other ranks.
  const int wr = (int)threadIdx.x - 32;
  // One acquire load where it is there already (the usual case), else
  // gin's wait.
  if (wr >= 0 && wr < n && wr != me && round > 1 && gin.readSignal(sigLLComb(a, wr)) < (round - 1) * (u64)G &&
      !gin.waitSignal(CoopThread{}, sigLLComb(a, wr), (round - 1) * (u64)G))
    fail(a, ErrAborted, sigLLComb(a, wr));

  // 1. The routing block R: T and the pairs per expert into every rank's
  // route words for this source (receivers need no pass to count rows).
  if (b == R) {
    for (int i = threadIdx.x; i < E; i += blockDim.x) hist[i] = 0;
    __syncthreads();
    if ((int)threadIdx.x < n) llPut(sTo[threadIdx.x] + llT, (u32)T, round);
    for (int i = threadIdx.x; i < T * K; i += blockDim.x) {
      const int e = idx[i];
      if (e >= E || e < -1)
        fail(a, ErrBadRouting, (u32)i);
      else if (e >= 0)
        atomicAdd(&hist[e], 1u);
    }
    __syncthreads();
    for (int i = threadIdx.x; i < n * E; i += blockDim.x) {
      const int r = i / E, e = i - r * E;
      llPut(sTo[r] + llPairs(a) + e, hist[e], round);
    }
  }

  const u64 rowOff = a.fp8 ? a.offLLStage : a.offInput;  // a rank's rows, slotB bytes apart
  if (worker) {
    // 2. This rank's rows of the range, where receivers read them.
    if (a.fp8)
      for (int t = u0; t < u1; t++)
        quantize(a, reinterpret_cast<const u16*>(x + (u64)t * xStride),
                 reinterpret_cast<u8*>(lb + a.offLLStage + (u64)t * a.slotB));
    else if (staged)
      for (int t = u0; t < u1; t++) blockCopy(lb + a.offInput + (u64)t * a.rs, x + (u64)t * xStride, a.hidden * 2);

    // 3. The range's slots, for CombineLL and as entry words at every rank
    // (the barrier below orders the staging before the fence): the
    // pairs before the range counted per expert into hist, then batches
    // of 32 tokens.
    if (b == R) __syncthreads();  // a grid of one block: hist free
    for (int i = threadIdx.x; i < E; i += blockDim.x) hist[i] = 0;
    __syncthreads();
    // Where it staged, each thread that writes entry words fences once at
    // system scope here, after the barrier that follows the staging
    // (fence.acq_rel.sys is cumulative over the writes the barrier ordered
    // before it), and every entry word it writes later is a relaxed store:
    // a fence followed in program order by a strong write is a release
    // pattern (PTX ISA 8.x, memory consistency model), so a receiver that
    // acquires the word reads the row. The fence waits for the staging to
    // land while the block counts the prefix; a release per entry word
    // would wait again for the previous rank's NVLink store (n - 1 waits
    // a token).
    if (staged && warp() < min(32, t1 - t0) && lane() < K) asm volatile("fence.acq_rel.sys;" ::: "memory");
    auto place = [&](int i, int e) {
      if (i >= pfx)
        sRoute[i - pfx] = e;
      else if (e >= 0 && e < E)
        atomicAdd(&hist[e], 1u);
    };
    if (i0 < nld) place(i0, e0);
    if (i1 < nld) place(i1, e1);
    for (int i = threadIdx.x + 2 * blockDim.x; i < nld; i += blockDim.x) place(i, routeAt(i));
    __syncthreads();
    for (int c0 = t0; c0 < t1; c0 += 32) {
      const int nb = min(32, t1 - c0);
      if (c0 > t0) {
        for (int i = threadIdx.x; i < nb * K; i += blockDim.x) sRoute[i] = c0 + i / K < T ? idx[c0 * K + i] : -1;
        __syncthreads();
      }
      if (warp() < nb && lane() < K) {
        int rel;
        int slot = batchSlots(sRoute, warp(), K, E, hist, &rel);
        if (slot >= maxLL) {
          fail(a, ErrSlotOverflow, (u32)rel);
          slot = -1;
        }
        const int q = (c0 + warp()) * K + lane();
        if (c0 + warp() < T) a.llSlotOf[q] = slot;
        const u32 v = llEntryWord(rel, slot);
        for (int r = 0; r < n; r++) llPut(sTo[r] + llEntry + q, v, round);  // after the fence above
      }
      __syncthreads();
      batchCount(sRoute, nb, K, E, hist);
      __syncthreads();
    }
  }

  if (worker) TRACE_MAX(trDEntry);
  // 4. Rows per (local expert, source), from the sources' pairs per expert.
  if (b == R) {
    u32* cnt = reinterpret_cast<u32*>(lb + a.offLLCount);
    for (int le = threadIdx.x; le < L; le += blockDim.x) {
      u32 tot = 0;
      for (int s = 0; s < n; s++) {
        const u32 c = min((u32)maxLL, llWord(a, gin, llRoute(a, s) + llPairs(a) + lo + le, round, 0));
        cnt[le * n + s] = c;
        tot += c;
      }
      a.llTokPerExpert[le] = (int)tot;
    }
    __syncthreads();
  }
  if (!worker) return;

  // 5. Pull: every source's tokens of the range, 32 (source, token) at a
  // time, this rank's own first: a warp reads a token's entry words, then
  // the block loads each row routed here once (every thread issues its
  // loads, most of them NVLink reads, before its stores) and stores it into
  // every local slot it goes to.
  u32* srcOf = reinterpret_cast<u32*>(lb + a.offLLSrc);
  const int V = (int)(a.slotB / 16);  // 16-byte vectors of a row (a bf16 slot is rs bytes)
  const int w = t1 - t0, items = n * w;
  for (int c0 = 0; c0 < items; c0 += 32) {
    const int nb = min(32, items - c0);
    if (warp() < nb) {
      const int i = c0 + warp(), s = (me + i / w) % n, t = t0 + i % w;
      int le = -1, slot = -1;
      if (lane() < K) {
        const u32 v = llWordAcquire(a, gin, llRoute(a, s) + llEntry + t * K + lane(), round, 0);
        const int e = llEntryExpert(v);
        if (e >= lo && e < lo + L) {
          le = e - lo;
          slot = llEntrySlot(v);
        }
      }
      const bool ok = le >= 0 && slot >= 0 && slot < maxLL;
      if (le >= 0 && !ok) fail(a, ErrSlotOverflow, (u32)(lo + le));
      const u32 bits = __ballot_sync(0xffffffffu, ok);
      if (ok) {
        const int at = __popc(bits & ((1u << lane()) - 1));
        sLe[warp()][at] = (u16)le;
        sSlot[warp()][at] = slot;
        srcOf[((u64)le * n + s) * maxLL + slot] = (u32)(t * K + lane());
      }
      if (lane() == 0) {
        sN[warp()] = __popc(bits);
        sSrc[warp()] = reinterpret_cast<const uint4*>(peerAt(comm, a, world, s, rowOff + (u64)t * a.slotB));
      }
    }
    __syncthreads();
    if (c0 == 0) TRACE_MAX(trDPull);
    pullRows(nb, V, sSrc, sN, [&](int j, int q) {
      const int s = (me + (c0 + j) / w) % n;
      return lb + a.offLLX + (((u64)sLe[j][q] * n + s) * maxLL + sSlot[j][q]) * a.slotB;
    });
    __syncthreads();  // the chunk's tables
  }
  TRACE_MAX(trDEnd);
}

// moe_ll_combine: wts [T][K] float32; out [T][hidden] bf16. The experts'
// ranks reduce, the sources add: moving a row per (token, k) across NVLink
// (7.3 MB a rank at DeepEP's sizes) took 25 us of 36; a partial sum per
// (token, rank) in float32 is half of that, pushed (NVLink writes beat
// reads).
//  1. This rank's weights, as 8-byte words that carry the round (llPut),
//     into every rank's llW region for this source.
//  2. Work items are (token, slice of S, source), the source fastest, so
//     every block writes to every rank. For each, a warp sums w * y over
//     the pairs of the token at this rank's experts (entry words of the
//     dispatch give expert and slot, llW the weight), in k order in
//     float32 and writes that slice of the partial row into the source's
//     llPart region for this rank. Where the token has one pair here, the
//     warp writes that expert's bf16 row there instead (half the bytes,
//     no weight to wait for), and the source multiplies it by the weight:
//     the partial sum of one pair is 0 + w * y, w * y rounded once to
//     float32 (fused or not), and the source adds w * y rounded alike
//     (addScaled4) at the same place of its sum, which starts at +0, so
//     even a zero product's sign changes nothing: the same bits. A
//     block's warps take items in step; after each step one thread fences
//     the block's writes at system scope and writes a flag word per slice
//     into the sources' llFlag regions (a reader that acquires it sees
//     the slice).
//  3. Each block adds 1 to llComb[me] at every rank once it is done with
//     step 2 (the last step that reads what other ranks write here): the
//     next dispatch waits for it before it writes into that rank's window
//     again; the add's latency overlaps step 4.
//  4. out[t] = bf16(sum over the ranks holding pairs of t of
//     partial[r][t]), in rank order, slice by slice, each as soon as its
//     flags are there: no grid-wide wait between the partial sums and the
//     adds. A rank holding one pair of t (the source's own routing says
//     which) sent its row: partial[r][t] = w * y there, w from wts.
// Reuse: a source's route words, rows and weights at an expert rank are
// next written by its next dispatch and combine, which come after that
// dispatch saw every block of this combine at that rank done (llComb); an
// expert rank writes a source's partials and flags again in its next
// combine, after its next dispatch, which waits for the source's next
// entry words, written after this combine read its partials.
extern "C" __global__ void __launch_bounds__(1024, 1)
    moe_ll_combine(const __grid_constant__ DevComm comm, const __grid_constant__ Args a, const float* __restrict__ wts,
                   int T, u64 round, u16* out) {
  const int n = (int)a.n, me = (int)a.rank, K = (int)a.topk, L = (int)a.local, H = (int)a.hidden;
  const int maxLL = (int)a.maxLL;
  const u64 prs = (u64)((4 * H + 15) & ~15);
  Gin gin(comm, 0);
  Team world = teamWorld(comm);
  char* lb = local(a);
  waitPrior();  // launched overlapped (CombineLL): the weights and Y come from the work ahead
  TRACE_MIN(trCStart);

  // 1. Weights to every rank.
  for (int i = blockIdx.x * blockDim.x + threadIdx.x; i < n * T * K; i += gridDim.x * blockDim.x) {
    const int r = i / (T * K), q = i - r * (T * K);
    u64* dst = reinterpret_cast<u64*>(peerAt(comm, a, world, r, a.offLLW + ((u64)me * maxLL * K + q) * 8));
    llPut(dst, __float_as_uint(wts[q]), round);
  }

  // 2. Partial rows at the experts.
  __shared__ int sT[maxRanks];
  if ((int)threadIdx.x < n)
    sT[threadIdx.x] = (int)min((u32)maxLL, llWord(a, gin, llRoute(a, threadIdx.x) + llT, round, 0));
  __syncthreads();
  const int gw = blockIdx.x * warps() + warp(), nw = gridDim.x * warps();
  // Slices are whole quads (4 columns) where rows allow: a lane then loads
  // 8 bytes of each bf16 row and stores 16 contiguous bytes of float32, so
  // a warp's stores cover whole lines across NVLink. Both phases slice
  // alike (the flags are per slice).
  const bool vec = (H & 3) == 0;
  const int S = slicesPerToken(n * maxLL, H, nw), fs = (int)a.flagS;
  auto cols = [&](int sl, int* c0, int* c1) {
    if (vec) {
      const int nq = H >> 2;
      *c0 = 4 * (int)((i64)nq * sl / S), *c1 = 4 * (int)((i64)nq * (sl + 1) / S);
    } else {
      *c0 = (int)((i64)H * sl / S), *c1 = (int)((i64)H * (sl + 1) / S);
    }
  };
  __shared__ ReduceSlots slots;
  __shared__ u64* sFlag[2][32];  // per warp, the flag of its item (null: none), by round parity
  // item: warp item it; returns the flag word to publish, or null where
  // the source reads no partial from this rank.
  auto item = [&](int it) -> u64* {
    const int s = it % n, t = it / (n * S), sl = (it / n) % S;
    if (t >= sT[s]) return nullptr;  // the warp's lanes agree
    // The token's rows here (entry words of the dispatch), listed in k
    // order; their weights are read after the first loads are issued.
    const u16* src = nullptr;
    const u64* wp = nullptr;
    if (lane() < K) {
      const u32 v = llWord(a, gin, llRoute(a, s) + llEntry + t * K + lane(), round, 0);
      const int e = llEntryExpert(v), slot = llEntrySlot(v);
      if (e >= me * L && e < me * L + L && slot >= 0 && slot < maxLL) {
        src = reinterpret_cast<const u16*>(lb + a.offLLY + (((u64)(e - me * L) * n + s) * maxLL + slot) * a.rs);
        wp = reinterpret_cast<const u64*>(lb + a.offLLW) + ((u64)s * maxLL + t) * K + lane();
      }
    }
    const u32 has = __ballot_sync(0xffffffffu, src != nullptr);
    if (has == 0) return nullptr;  // no pair of t here: s reads no partial
    const int m = __popc(has), at = __popc(has & ((1u << lane()) - 1));
    if (src != nullptr) slots.src[warp()][at] = src;
    __syncwarp();
    const u16* const* rs = slots.src[warp()];
    const float* ws = slots.w[warp()];
    float* dst = reinterpret_cast<float*>(peerAt(comm, a, world, s, a.offLLPart + ((u64)me * maxLL + t) * prs));
    int c0, c1;
    cols(sl, &c0, &c1);
    u64* const flag = reinterpret_cast<u64*>(peerAt(comm, a, world, s, a.offLLFlag + (((u64)me * maxLL + t) * fs + sl) * 8));
    if (m == 1) {
      // One pair here: its bf16 row goes as it is, half the bytes of a
      // float32 partial, and the source multiplies it by the weight
      // (step 4). No weight to wait for.
      if (vec) {
        const uint2* y = reinterpret_cast<const uint2*>(rs[0]);
        uint2* d = reinterpret_cast<uint2*>(dst);
        const int q1 = c1 >> 2;
        for (int qa = (c0 >> 2) + lane(); qa < q1; qa += 64) {
          const int qb = qa + 32;
          const uint2 ya = y[qa], yb = qb < q1 ? y[qb] : make_uint2(0, 0);
          d[qa] = ya;
          if (qb < q1) d[qb] = yb;
        }
      } else {
        u16* d = reinterpret_cast<u16*>(dst);
        for (int c = c0 + lane(); c < c1; c += 32) d[c] = rs[0][c];
      }
      __syncwarp();  // slots free
      return flag;
    }
    bool needW = true;
    auto weights = [&] {  // once, warp-uniform
      if (!needW) return;
      if (src != nullptr) slots.w[warp()][at] = __uint_as_float(llWord(a, gin, wp, round, 0));
      __syncwarp();
      needW = false;
    };
    if (vec) {
      // A lane's two quads of up to four rows loaded at once, then added
      // in k order.
      const int q1 = c1 >> 2;
      for (int qw = c0 >> 2; qw < q1; qw += 64) {
        const int qa = qw + lane(), qb = qa + 32;
        float acc0[4] = {0, 0, 0, 0}, acc1[4] = {0, 0, 0, 0};
        for (int j0 = 0; j0 < m; j0 += 4) {
          uint2 xa[4], xb[4];
#pragma unroll
          for (int jj = 0; jj < 4; jj++) {
            const uint2* r2 = j0 + jj < m ? reinterpret_cast<const uint2*>(rs[j0 + jj]) : nullptr;
            xa[jj] = r2 != nullptr && qa < q1 ? r2[qa] : make_uint2(0, 0);
            xb[jj] = r2 != nullptr && qb < q1 ? r2[qb] : make_uint2(0, 0);
          }
          weights();
#pragma unroll
          for (int jj = 0; jj < 4; jj++) {
            if (j0 + jj >= m) break;
            accumulate4(acc0, xa[jj], ws[j0 + jj]);
            accumulate4(acc1, xb[jj], ws[j0 + jj]);
          }
        }
        if (qa < q1) reinterpret_cast<float4*>(dst)[qa] = make_float4(acc0[0], acc0[1], acc0[2], acc0[3]);
        if (qb < q1) reinterpret_cast<float4*>(dst)[qb] = make_float4(acc1[0], acc1[1], acc1[2], acc1[3]);
      }
    } else {
      weights();
      for (int c = c0 + lane(); c < c1; c += 32) {
        float acc = 0.f;
        for (int j = 0; j < m; j++) acc += ws[j] * bf16f(rs[j][c]);
        dst[c] = acc;
      }
    }
    __syncwarp();  // slots free
    return flag;
  };
  // The block's warps take items in step, and thread 0 publishes each
  // step's flags with one system fence for the whole block (cumulative
  // over the partial rows the barrier ordered before it), then relaxed
  // flag words: a reader that acquires a flag sees its slice. A release
  // per item (a system fence per warp) held each warp about 5 us
  // (docs/moe_gpu.md, "Where the time goes").
  const int items = n * maxLL * S;
  for (int base = blockIdx.x * warps(), p = 0; base < items; base += nw, p ^= 1) {
    u64* f = base + warp() < items ? item(base + warp()) : nullptr;
    if (lane() == 0) sFlag[p][warp()] = f;
#ifdef MOE_TRACE
    if (lane() == 0 && f != nullptr) atomicMax(&moeTrace[trCStores], gtime());
#endif
    __syncthreads();
    if (threadIdx.x == 0) {
      asm volatile("fence.acq_rel.sys;" ::: "memory");
      for (int w = 0; w < warps(); w++)
        if (sFlag[p][w] != nullptr) llPut(sFlag[p][w], 0, round);
    }
  }

  // 3. This block is done with every source's words and rows here (step 4
  // reads this rank's own routing, and the partials and flags that the
  // other ranks write in their next combine, after their next dispatch
  // read this rank's next entry words).
  blockSignal(a, gin, world, sigLLComb(a, me), 1);
  TRACE_MAX(trCFlags);

  // 4. This rank's tokens, each slice in Hs parts (every warp busy): add
  // the partials of the ranks holding their pairs once their flags are
  // there, in rank order, each lane's loads of every rank in flight
  // together.
  const u64* route = llRoute(a, me) + llEntry;  // the routing of the dispatch (its own route words)
  const u64* flags = reinterpret_cast<const u64*>(lb + a.offLLFlag);
  const int Hs = max(1, min(nw / max(T * S, 1), (vec ? H / 4 : H) / (32 * S)));
  for (int it = gw; it < T * S * Hs; it += nw) {
    const int t = it / (S * Hs), sl = (it / Hs) % S, h = it % Hs;
    // m: the ranks holding pairs of t; one: those holding exactly one,
    // which sent that expert's bf16 row (step 2), lane r loading its
    // weight into ws[r] (under the wait for the flag).
    int rk = -1;
    if (lane() < K) {
      const int e = llEntryExpert((u32)route[t * K + lane()]);
      if (e >= 0 && e < (int)a.experts && a.llSlotOf[t * K + lane()] >= 0) rk = e / L;
    }
    u32 m = 0, one = 0;
    int k1 = 0;
    for (int r = 0; r < n; r++) {
      const u32 b = __ballot_sync(0xffffffffu, rk == r);
      if (b != 0) m |= 1u << r;
      if (__popc(b) == 1) {
        one |= 1u << r;
        if (lane() == r) k1 = __ffs(b) - 1;
      }
    }
    float* ws = slots.w[warp()];
    if (lane() < n && (m >> lane() & 1)) {
      const float w1 = one >> lane() & 1 ? wts[t * K + k1] : 0.f;
      (void)llWordAcquire(a, gin, flags + ((u64)lane() * maxLL + t) * fs + sl, round, 0);
      ws[lane()] = w1;
    }
    __syncwarp();
    u16* o = out + (u64)t * H;
    int c0, c1;
    cols(sl, &c0, &c1);
    if (vec && ((u64)o & 7) == 0) {
      const int nq = (c1 - c0) >> 2, q0 = (c0 >> 2) + (int)((i64)nq * h / Hs), q1 = (c0 >> 2) + (int)((i64)nq * (h + 1) / Hs);
      for (int q = q0 + lane(); q < q1; q += 64) {
        const bool two = q + 32 < q1;
        float acc0[4] = {0, 0, 0, 0}, acc1[4] = {0, 0, 0, 0};
        for (int r = 0; r < n; r++) {
          if (!(m >> r & 1)) continue;
          const char* p = lb + a.offLLPart + ((u64)r * maxLL + t) * prs;
          if (one >> r & 1) {
            const uint2* y = reinterpret_cast<const uint2*>(p);
            const uint2 y0 = y[q], y1 = two ? y[q + 32] : make_uint2(0, 0);
            addScaled4(acc0, y0, ws[r]);
            addScaled4(acc1, y1, ws[r]);
          } else {
            const float4* x = reinterpret_cast<const float4*>(p);
            const float4 x0 = x[q], x1 = two ? x[q + 32] : make_float4(0, 0, 0, 0);
            acc0[0] += x0.x, acc0[1] += x0.y, acc0[2] += x0.z, acc0[3] += x0.w;
            acc1[0] += x1.x, acc1[1] += x1.y, acc1[2] += x1.z, acc1[3] += x1.w;
          }
        }
        reinterpret_cast<uint2*>(o)[q] = make_uint2((u32)bf16(acc0[0]) | ((u32)bf16(acc0[1]) << 16),
                                                    (u32)bf16(acc0[2]) | ((u32)bf16(acc0[3]) << 16));
        if (two)
          reinterpret_cast<uint2*>(o)[q + 32] = make_uint2((u32)bf16(acc1[0]) | ((u32)bf16(acc1[1]) << 16),
                                                           (u32)bf16(acc1[2]) | ((u32)bf16(acc1[3]) << 16));
      }
    } else {
      const int n1 = c1 - c0, d0 = c0 + (int)((i64)n1 * h / Hs), d1 = c0 + (int)((i64)n1 * (h + 1) / Hs);
      for (int c = d0 + lane(); c < d1; c += 32) {
        float acc = 0.f;
        for (int r = 0; r < n; r++) {
          if (!(m >> r & 1)) continue;
          const char* p = lb + a.offLLPart + ((u64)r * maxLL + t) * prs;
          acc += one >> r & 1 ? __fmul_rn(ws[r], bf16f(reinterpret_cast<const u16*>(p)[c]))
                              : reinterpret_cast<const float*>(p)[c];
        }
        o[c] = bf16(acc);
      }
    }
    __syncwarp();  // ws free
  }
  TRACE_BAR_MAX(trCEnd);
}

// ---- stand-in experts (tests, examples): expert e multiplies by f(e) ----

// expertScale: mode 0 identity, 1 scaled (1 + e%4, as examples/moe).
__device__ __forceinline__ float expertScale(int mode, int e) { return mode == 0 ? 1.f : (float)(1 + e % 4); }

// moe_expert_normal: each received row, in place: y = bf16(sum over its
// local experts of w * f(e) * x).
extern "C" __global__ void __launch_bounds__(1024, 1)
    moe_expert_normal(const __grid_constant__ Args a, u64 round, int mode) {
  const int n = (int)a.n, me = (int)a.rank, K = (int)a.topk, L = (int)a.local, H = (int)a.hidden;
  extern __shared__ i64 C[];
  loadCounts(a, (int)(round & 1), C);
  i64 rows = 0;
  for (int s = 0; s < n; s++) rows += C[s * n + me];
  char* lb = local(a);
  const int gw = blockIdx.x * warps() + warp(), nw = gridDim.x * warps();
  for (i64 i = gw; i < rows; i += nw) {
    const u32* e = reinterpret_cast<const u32*>(lb + a.offRecvMeta + (u64)i * a.ew * 4);
    float coef = 0.f;
    for (int k = 0; k < K; k++) {
      const int le = (int)e[1 + k];
      if (le >= 0) coef += __uint_as_float(e[1 + K + k]) * expertScale(mode, me * L + le);
    }
    u16* x = reinterpret_cast<u16*>(lb + a.offRecvX + (u64)i * a.rs);
    for (int c = lane(); c < H; c += 32) x[c] = bf16(coef * bf16f(x[c]));
  }
}

// moe_expert_ll: each received slot: y = bf16(f(e) * x), x dequantized
// from FP8 where the handle carries FP8.
extern "C" __global__ void __launch_bounds__(1024, 1) moe_expert_ll(const __grid_constant__ Args a, int mode) {
  const int n = (int)a.n, me = (int)a.rank, L = (int)a.local, H = (int)a.hidden, maxLL = (int)a.maxLL;
  char* lb = local(a);
  const u32* count = reinterpret_cast<const u32*>(lb + a.offLLCount);
  for (int ls = blockIdx.x; ls < L * n; ls += gridDim.x) {
    const int le = ls / n;
    const int c = min(maxLL, (int)count[ls]);
    const float f = expertScale(mode, me * L + le);
    for (int j = warp(); j < c; j += warps()) {
      const u64 at = (u64)ls * maxLL + j;
      u16* y = reinterpret_cast<u16*>(lb + a.offLLY + at * a.rs);
      if (a.fp8) {
        const u8* q = reinterpret_cast<const u8*>(lb + a.offLLX + at * a.slotB);
        const float* sc = reinterpret_cast<const float*>(q + ((H + 15) & ~15));
        for (int i = lane(); i < H; i += 32) y[i] = bf16(f * (e4m3f(q[i]) * sc[i >> 7]));
      } else {
        for (int i = lane(); i < H; i += 32) y[i] = bf16(f * bf16f(y[i]));
      }
    }
  }
}

// ---- helpers ----

// moe_sync: waits until *gate (pinned host memory) is nonzero, when gate is
// set, then meets every rank at a device barrier: the start line of a
// timed round. One block.
extern "C" __global__ void __launch_bounds__(1024, 1) moe_sync(const __grid_constant__ DevComm comm, const volatile u64* gate) {
  Gin gin(comm, 0);
  __shared__ int ok;
  if (threadIdx.x == 0) {
    ok = 1;
    if (gate != nullptr)
      for (u32 i = 1; *gate == 0; i++)
        if ((i & 1023) == 0 && gin.aborted()) {
          ok = 0;
          break;
        }
  }
  __syncthreads();
  if (!ok) return;
  BarrierSession<CoopBlock> bar(CoopBlock{}, gin, teamWorld(comm), 0);
  bar.sync(CoopBlock{});
  TRACE_MAX(trSyncEnd);
}

// moe_trace_dump copies the trace to dst (trSlots words) and resets it:
// the earliest-of slots to ~0, the latest-of to 0. One block.
extern "C" __global__ void moe_trace_dump(u64* dst) {
  for (int i = threadIdx.x; i < trSlots; i += blockDim.x) {
    dst[i] = moeTrace[i];
    moeTrace[i] = (i == trDStart || i == trCStart) ? ~0ull : 0ull;
  }
}

}  // namespace moe

// bench.cu: kernels of the GPU benchmarks (bench_test.go).
#include "rdmactor/gin.cuh"

using namespace rdmactor;

__device__ __forceinline__ u64 globaltimer() {
  u64 t;
  asm volatile("mov.u64 %0, %%globaltimer;" : "=l"(t));
  return t;
}

// put_bw: every block puts its share of bytes (16-byte aligned chunks)
// from this rank's part of win to peer's part, at the same offsets, with
// the whole block (CoopBlock) and no signal, reps times (reps > 1: the
// steady state of a kernel that keeps putting, no launch between puts).
// Kernel completion is the copies' completion. Launched overlapped
// (gpu.Comm.LaunchOverlapped), its launch and the put's descriptor loads
// overlap the kernel ahead; the put waits for that kernel (waitPrior)
// before it copies.
extern "C" __global__ void put_bw(const __grid_constant__ DevComm comm, Window win, int peer, unsigned long long bytes,
                                  int reps) {
  Gin gin(comm, 0);
  u64 chunk = ((bytes + gridDim.x - 1) / gridDim.x + 15) & ~15ull;
  u64 off = chunk * blockIdx.x;
  if (off >= bytes) return;
  u64 n = bytes - off < chunk ? bytes - off : chunk;
  for (int r = 0; r < reps; r++) gin.put(teamWorld(comm), peer, win, off, win, off, n, None{}, None{}, CoopBlock{});
}

// gate holds a stream until the host sets *flag (pinned host memory), so
// that a batch of operations queued behind it runs back to back on the GPU
// and events around them time the GPU alone, not the host's launches.
extern "C" __global__ void gate(const volatile unsigned long long* flag) {
  while (*flag == 0) __nanosleep(1000);
}

// pingpong: rank 0 puts 8 bytes with SignalInc{0} to rank 1 and waits for
// the reply; rank 1 answers each. With value != 0 the 8 bytes go by
// putValue (no source read) instead of put. Signal values continue from
// base. out[0] = ns for iters round trips (rank 0), out[1] = 1 if aborted.
extern "C" __global__ void pingpong(const __grid_constant__ DevComm comm, Window win, int iters, int value,
                                    unsigned long long base, unsigned long long* out) {
  Gin gin(comm, 0);
  Team world = teamWorld(comm);
  CoopThread t;
  const int peer = comm.rank ^ 1;
  u64* payload = (u64*)localPointer(win, 0);
  u64 start = globaltimer();
  for (int i = 1; i <= iters; i++) {
    if (comm.rank == 0) {
      if (value) {
        gin.putValue(world, peer, win, 64, base + i, SignalInc{0}, t);
      } else {
        *payload = base + i;
        gin.put(world, peer, win, 64, win, 0, 8, SignalInc{0}, None{}, t);
      }
      if (!gin.waitSignal(t, 0, base + i)) {
        out[1] = 1;
        return;
      }
    } else {
      if (!gin.waitSignal(t, 0, base + i)) {
        out[1] = 1;
        return;
      }
      if (value) {
        gin.putValue(world, peer, win, 64, base + i, SignalInc{0}, t);
      } else {
        *payload = base + i;
        gin.put(world, peer, win, 64, win, 0, 8, SignalInc{0}, None{}, t);
      }
    }
  }
  out[0] = globaltimer() - start;
  // The last payload from the peer is there (signal implies data).
  if (*(volatile u64*)localPointer(win, 64) != base + iters) out[1] = 2;
}

// raw_pingpong: the floor the put+signal ping-pong is measured against: a
// hand-written peer store of 8 bytes, a system fence and a flag store into
// the peer's memory, and a spin on the local flag (what a kernel does
// without any library). Flags at offset 128 continue from base. Same
// abort check as gin's waits (every 64 polls).
extern "C" __global__ void raw_pingpong(const __grid_constant__ DevComm comm, Window win, int iters,
                                        unsigned long long base, unsigned long long* out) {
  const int peer = comm.rank ^ 1;
  Team world = teamWorld(comm);
  volatile u64* peerData = (volatile u64*)lsaPointer(comm, win, world, peer, 192);
  volatile u64* peerFlag = (volatile u64*)lsaPointer(comm, win, world, peer, 128);
  volatile u64* myFlag = (volatile u64*)localPointer(win, 128);
  const volatile u64* abortFlag = (const volatile u64*)comm.abortFlag;
  u64 start = globaltimer();
  for (int i = 1; i <= iters; i++) {
    const u64 v = base + i;
    if (comm.rank == 0) {
      *peerData = v;
      __threadfence_system();
      *peerFlag = v;
    }
    for (u32 k = 1; *myFlag < v; k++) {
      if ((k & 63) == 0 && *abortFlag) {
        out[1] = 1;
        return;
      }
    }
    if (comm.rank == 1) {
      *peerData = v;
      __threadfence_system();
      *peerFlag = v;
    }
  }
  out[0] = globaltimer() - start;
}

// msgrate: rank 0's threads post n putValues of 8 bytes with SignalInc{1}
// (each thread its share, CoopThread: one WQE each on the proxy path);
// rank 1 waits until all n arrived. Signal values continue from base.
extern "C" __global__ void msgrate(const __grid_constant__ DevComm comm, Window win, int n, unsigned long long base,
                                   unsigned long long* out) {
  Gin gin(comm, 0);
  Team world = teamWorld(comm);
  if (comm.rank == 0) {
    for (int i = threadIdx.x; i < n; i += blockDim.x)
      gin.putValue(world, 1, win, 256 + 8 * (u64)(i % 64), (u64)i, SignalInc{1}, CoopThread{});
    if (!gin.flush(CoopThread{})) out[1] = 1;
  } else if (threadIdx.x == 0) {
    u64 start = globaltimer();
    if (!gin.waitSignal(CoopThread{}, 1, base + n)) out[1] = 1;
    out[0] = globaltimer() - start;
  }
}

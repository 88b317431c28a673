// pingpong.cu: the kernel of examples/gpu_putsignal. Ranks pair up (rank ^
// 1). In round i, the even rank fills its outgoing block with pattern i,
// puts it to its partner with SignalInc{0} and waits for the answer; the
// odd rank waits for the signal, checks every byte of the block (signal
// implies data), writes its answer and puts it back the same way.
#include "rdmactor/gin.cuh"

using namespace rdmactor;

__device__ __forceinline__ unsigned char pat(int rank, int round, u64 i) { return (unsigned char)(rank * 31 + round * 7 + i); }

__device__ __forceinline__ u64 now() {
  u64 t;
  asm volatile("mov.u64 %0, %%globaltimer;" : "=l"(t));
  return t;
}

// Window: [0, bytes) outgoing, [bytes, 2 bytes) incoming.
// out[0] = ns for all rounds, out[1] = wrong bytes, out[2] = 1 if aborted.
extern "C" __global__ void pingpong(const __grid_constant__ DevComm comm, Window win, int iters, unsigned long long bytes,
                                    unsigned long long* out) {
  CoopBlock coop;
  Gin gin(comm, 0);
  Team world = teamWorld(comm);
  const int peer = comm.rank ^ 1;
  const bool first = (comm.rank & 1) == 0;
  unsigned char* mine = (unsigned char*)localPointer(win, 0);
  const volatile unsigned char* got = (const volatile unsigned char*)localPointer(win, bytes);
  __shared__ unsigned long long wrong;
  if (coop.rank() == 0) wrong = 0;
  u64 start = now();
  for (int i = 1; i <= iters; i++) {
    if (!first) {
      if (!gin.waitSignal(coop, 0, i)) break;
      for (u64 k = coop.rank(); k < bytes; k += coop.size())
        if (got[k] != pat(peer, i, k)) atomicAdd(&wrong, 1ull);
    }
    for (u64 k = coop.rank(); k < bytes; k += coop.size()) mine[k] = pat(comm.rank, i, k);
    gin.put(world, peer, win, bytes, win, 0, bytes, SignalInc{0}, None{}, coop);
    if (first) {
      if (!gin.waitSignal(coop, 0, i)) break;
      for (u64 k = coop.rank(); k < bytes; k += coop.size())
        if (got[k] != pat(peer, i, k)) atomicAdd(&wrong, 1ull);
    }
  }
  coop.sync();
  if (coop.rank() == 0) {
    out[0] = now() - start;
    out[1] = wrong;
    out[2] = gin.aborted() ? 1 : 0;
  }
}

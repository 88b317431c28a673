// barrier.cu: the kernel of examples/gpu_barrier. Each round, every rank
// stamps (rank, round) into its right neighbour's window with putValue,
// enters a BarrierSession, checks the stamp from its left neighbour, and
// enters the barrier again (so no stamp of the next round overtakes the
// check).
#include "rdmactor/gin.cuh"

using namespace rdmactor;

__device__ __forceinline__ u64 now() {
  u64 t;
  asm volatile("mov.u64 %0, %%globaltimer;" : "=l"(t));
  return t;
}

// out[0] = ns for all rounds, out[1] = wrong stamps, out[2] = 1 if aborted.
extern "C" __global__ void barrier_rounds(const __grid_constant__ DevComm comm, Window win, int rounds,
                                          unsigned long long* out) {
  CoopBlock coop;
  Gin gin(comm, 0);
  Team world = teamWorld(comm);
  BarrierSession<CoopBlock> bar(coop, gin, world, blockIdx.x);
  const int right = (comm.rank + 1) % comm.size, left = (comm.rank + comm.size - 1) % comm.size;
  const volatile u64* stamp = (const volatile u64*)localPointer(win, 0);
  u64 wrong = 0, start = now();
  bool ok = true;
  for (int k = 1; k <= rounds && ok; k++) {
    gin.putValue(world, right, win, 0, ((u64)comm.rank << 32) | (u64)k, None{}, coop);
    ok = bar.sync(coop);
    if (ok && coop.rank() == 0 && *stamp != (((u64)left << 32) | (u64)k)) wrong++;
    ok = ok && bar.sync(coop);
  }
  if (coop.rank() == 0) {
    out[0] = now() - start;
    out[1] = wrong;
    out[2] = ok ? 0 : 1;
  }
}

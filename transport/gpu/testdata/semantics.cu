// semantics.cu: the device-side twin of gin's semantics suite
// (gin/conformance). Each kernel checks one sentence of the contract from
// inside a kernel and reports through res[]: res[0] = number of wrong
// values, res[1] = first wrong index, res[2] = 1 if a wait was aborted,
// res[3] = a value the Go side checks too.
//
// Ranks run the same kernel; each sends to its right neighbour
// (rank + 1) % size and receives from its left neighbour, so one kernel per
// rank covers both directions with two or more ranks.
#include "rdmactor/gin.cuh"

using namespace rdmactor;

namespace {

__device__ __forceinline__ u32 pattern(int sender, int k, u64 i) { return (u32)(sender * 0x9E3779B1u + k * 0x85EBCA77u + (u32)i * 0xC2B2AE3Du); }

__device__ void fillBlock(CoopBlock coop, u32* p, u64 words, int sender, int k) {
  for (u64 i = coop.rank(); i < words; i += coop.size()) p[i] = pattern(sender, k, i);
  coop.sync();
}

// checkBlock counts wrong words into res (block-wide).
__device__ void checkBlock(CoopBlock coop, const u32* p, u64 words, int sender, int k, unsigned long long* res) {
  for (u64 i = coop.rank(); i < words; i += coop.size()) {
    u32 v = *(volatile const u32*)(p + i);
    if (v != pattern(sender, k, i)) {
      if (atomicAdd(&res[0], 1ull) == 0) res[1] = (u64)k << 32 | (u32)i;
    }
  }
  coop.sync();
}

__device__ __forceinline__ int right(const DevComm& c) { return (c.rank + 1) % c.size; }
__device__ __forceinline__ int left(const DevComm& c) { return (c.rank + c.size - 1) % c.size; }

__device__ void noteAbort(CoopBlock coop, bool ok, unsigned long long* res) {
  if (!ok && coop.rank() == 0) res[2] = 1;
}

}  // namespace

// OFF is offsetof without <cstddef> (NVRTC has no standard headers).
#define OFF(T, m) ((unsigned long long)&(reinterpret_cast<T*>(0)->m))

// layout_twin writes sizes and offsets of the shared layouts, in the order
// TestLayoutTwin expects.
extern "C" __global__ void layout_twin(unsigned long long* out) {
  using namespace rdmactor::impl;
  int i = 0;
  out[i++] = sizeof(DevComm);
  out[i++] = OFF(DevComm, rank);
  out[i++] = OFF(DevComm, size);
  out[i++] = OFF(DevComm, lsaSize);
  out[i++] = OFF(DevComm, path);
  out[i++] = OFF(DevComm, nSignals);
  out[i++] = OFF(DevComm, nCounters);
  out[i++] = OFF(DevComm, nBarriers);
  out[i++] = OFF(DevComm, nContexts);
  out[i++] = OFF(DevComm, signals);
  out[i++] = OFF(DevComm, peerSignals);
  out[i++] = OFF(DevComm, counters);
  out[i++] = OFF(DevComm, shadows);
  out[i++] = OFF(DevComm, abortFlag);
  out[i++] = OFF(DevComm, status);
  out[i++] = OFF(DevComm, rings);
  out[i++] = sizeof(WindowDesc);
  out[i++] = OFF(WindowDesc, size);
  out[i++] = OFF(WindowDesc, local);
  out[i++] = OFF(WindowDesc, peers);
  out[i++] = OFF(WindowDesc, id);
  out[i++] = sizeof(RingDesc);
  out[i++] = OFF(RingDesc, dev);
  out[i++] = OFF(RingDesc, host);
  out[i++] = OFF(RingDesc, depth);
  out[i++] = RingDevReserved;
  out[i++] = RingDevReady;
  out[i++] = RingDevBytes;
  out[i++] = RingDoorbell;
  out[i++] = RingConsumed;
  out[i++] = RingCompleted;
  out[i++] = RingStatus;
  out[i++] = RingEntries;
  out[i++] = WQEBytes;
  out[i++] = PathLSA;
  out[i++] = PathProxy;
  out[i++] = ErrOutOfBounds;
  out[i++] = ErrPeerOutOfRange;
  out[i++] = ErrUnknownSignal;
  out[i++] = ErrUnknownCounter;
  out[i++] = ErrBadArgument;
  out[i++] = (u64)WaitResult::Ok;
  out[i++] = (u64)WaitResult::Aborted;
  out[i++] = (u64)WaitResult::Timeout;
  out[i++] = (u64)WaitResult::Invalid;
  // The WQE as the device packs it: a put with every field distinct.
  impl::Remote r{RemoteAdd, 0x66, 0xdd};
  impl::WQE e = impl::makeWQE(OpPut, r, 0x99, 4, 0x55, 0x77, 0x88, 0xaa, 0xbb, 0xcc);
  e.w[0] |= 0x11223344u;
  for (int k = 0; k < 8; k++) out[i++] = e.w[k];
}

// rolling_twin evaluates the device's rolling comparison for n cases.
extern "C" __global__ void rolling_twin(const unsigned long long* a, const unsigned long long* b, const int* bits,
                                        int n, int* out) {
  for (int i = threadIdx.x; i < n; i += blockDim.x) out[i] = impl::rollingLE(a[i], b[i], impl::mask(bits[i]));
}

// ordering: rounds puts of block bytes to the right neighbour, every
// fourth with SignalInc{0}, then a data-less signal on {1}. The receiver
// checks, after each signal, that the data of the signalled put and of
// every earlier one is there (strong signal: gin.h, "implies the
// visibility of the put data it is attached to and all the preceding
// puts"). Window: [0, rounds*block) outgoing, [rounds*block, 2*rounds*block)
// incoming.
extern "C" __global__ void ordering(const __grid_constant__ DevComm comm, Window win, int rounds, int block,
                                    unsigned long long* res) {
  CoopBlock coop;
  Gin gin(comm, 0);
  Team world = teamWorld(comm);
  const u64 in = (u64)rounds * block;
  u32* out = (u32*)localPointer(win, 0);
  for (int k = 0; k < rounds; k++) {
    fillBlock(coop, out + (u64)k * block / 4, block / 4, comm.rank, k);
    if (k % 4 == 3)
      gin.put(world, right(comm), win, in + (u64)k * block, win, (u64)k * block, block, SignalInc{0}, None{}, coop);
    else
      gin.put(world, right(comm), win, in + (u64)k * block, win, (u64)k * block, block, None{}, None{}, coop);
  }
  gin.signal(world, right(comm), SignalInc{1}, coop);
  const u32* got = (const u32*)localPointer(win, in);
  for (int j = 1; j <= rounds / 4; j++) {
    bool ok = gin.waitSignal(coop, 0, j);
    noteAbort(coop, ok, res);
    if (!ok) return;
    for (int k = 0; k < 4 * j; k++) checkBlock(coop, got + (u64)k * block / 4, block / 4, left(comm), k, res);
  }
  bool ok = gin.waitSignal(coop, 1, 1);
  noteAbort(coop, ok, res);
  if (!ok) return;
  for (int k = 0; k < rounds; k++) checkBlock(coop, got + (u64)k * block / 4, block / 4, left(comm), k, res);
  if (!gin.flush(coop)) noteAbort(coop, false, res);
}

// rolling: SignalAdd across the 32-bit wrap. The right neighbour's signal 2
// gets 0xFFFFFFF0, then 0x20: a 32-bit wait for 0xFFFFFFF0 is met by 0x10
// (rolling order), the 64-bit value ends at 0x1_0000_0010.
extern "C" __global__ void rolling(const __grid_constant__ DevComm comm, unsigned long long* res) {
  CoopThread t;
  Gin gin(comm, 0);
  Team world = teamWorld(comm);
  gin.signal(world, right(comm), SignalAdd{2, 0xFFFFFFF0ull});
  gin.signal(world, right(comm), SignalAdd{2, 0x20ull});
  bool ok = gin.waitSignal(t, 2, 0xFFFFFFF0ull, 32) && gin.waitSignal(t, 2, 0x10ull, 32) &&
            gin.waitSignal(t, 2, 0x100000010ull, 64);
  if (!ok) {
    res[2] = 1;
    return;
  }
  res[3] = gin.readSignal(2, 64);
  if (res[3] != 0x100000010ull) res[0]++;
  if (gin.readSignal(2, 32) != 0x10ull) res[0]++;
  if (gin.readSignal(2, 4) != 0x0ull) res[0]++;
}

// counters: n puts with CounterInc{3}; the counter reaches n once their
// sources were consumed; reset brings it to 0. The data goes to the right
// neighbour with SignalInc{3}, which it waits for. Window: [0, n*block)
// sources, [n*block, 2*n*block) landing slots.
extern "C" __global__ void counters(const __grid_constant__ DevComm comm, Window win, int n, int block,
                                    unsigned long long* res) {
  CoopBlock coop;
  Gin gin(comm, 0);
  Team world = teamWorld(comm);
  for (int k = 0; k < n; k++)
    gin.put(world, right(comm), win, (u64)(n + k) * block, win, (u64)k * block, block, SignalInc{3}, CounterInc{3}, coop);
  bool ok = gin.waitCounter(coop, 3, n) && gin.waitSignal(coop, 3, n);
  noteAbort(coop, ok, res);
  if (!ok) return;
  if (coop.rank() == 0) {
    res[3] = gin.readCounter(3);
    if (res[3] != (u64)n) res[0]++;
    if (gin.readCounter(3, 2) != ((u64)n & 3)) res[0]++;
  }
  coop.sync();
  if (coop.rank() == 0) gin.resetCounter(3);
  coop.sync();
  if (coop.rank() == 0 && gin.readCounter(3) != 0) res[0]++;
}

// flush: put A from a source, flush, overwrite the source with B, put B.
// The receiver must see A in the first slot: flush returned only once the
// first put had consumed its source (gin.h: flush "ensures that all the
// pending transfer operations ... are locally consumed, meaning that their
// source buffers are safe to reuse"). Window: [0, block) source,
// [block, 2 block) and [2 block, 3 block) the two landing slots.
extern "C" __global__ void flush(const __grid_constant__ DevComm comm, Window win, int block, unsigned long long* res) {
  CoopBlock coop;
  Gin gin(comm, 0);
  Team world = teamWorld(comm);
  u32* src = (u32*)localPointer(win, 0);
  fillBlock(coop, src, block / 4, comm.rank, 100);
  gin.put(world, right(comm), win, block, win, 0, block, SignalInc{4}, None{}, coop);
  bool ok = gin.flush(coop);
  noteAbort(coop, ok, res);
  if (!ok) return;
  fillBlock(coop, src, block / 4, comm.rank, 101);
  gin.put(world, right(comm), win, 2 * (u64)block, win, 0, block, SignalInc{4}, None{}, coop);
  ok = gin.waitSignal(coop, 4, 2);
  noteAbort(coop, ok, res);
  if (!ok) return;
  checkBlock(coop, (const u32*)localPointer(win, block), block / 4, left(comm), 100, res);
  checkBlock(coop, (const u32*)localPointer(win, 2 * (u64)block), block / 4, left(comm), 101, res);
  ok = gin.flush(coop);
  noteAbort(coop, ok, res);
}

// get: each rank fills [0, block) of its window and tells its left
// neighbour (SignalInc{6}), which reads it: a get into [block, 2 block)
// checked once CounterInc{1} ticked, and a get into [2 block, 3 block)
// checked after flush (ncclGin::get, NCCL 2.30). Each rank then tells its
// right neighbour it is done reading (SignalInc{7}) and waits for its
// left's, so no window is freed while a peer reads it.
extern "C" __global__ void get(const __grid_constant__ DevComm comm, Window win, int block, unsigned long long* res) {
  CoopBlock coop;
  Gin gin(comm, 0);
  Team world = teamWorld(comm);
  fillBlock(coop, (u32*)localPointer(win, 0), block / 4, comm.rank, 300);
  gin.signal(world, left(comm), SignalInc{6}, coop);
  bool ok = gin.waitSignal(coop, 6, 1);
  noteAbort(coop, ok, res);
  if (!ok) return;
  gin.get(world, right(comm), win, block, win, 0, block, CounterInc{1}, coop);
  ok = gin.waitCounter(coop, 1, 1);
  noteAbort(coop, ok, res);
  if (!ok) return;
  checkBlock(coop, (const u32*)localPointer(win, block), block / 4, right(comm), 300, res);
  gin.get(world, right(comm), win, 2 * (u64)block, win, 0, block, None{}, coop);
  ok = gin.flush(coop);
  noteAbort(coop, ok, res);
  if (!ok) return;
  checkBlock(coop, (const u32*)localPointer(win, 2 * (u64)block), block / 4, right(comm), 300, res);
  gin.signal(world, right(comm), SignalInc{7}, coop);
  ok = gin.waitSignal(coop, 7, 1);
  noteAbort(coop, ok, res);
}

// putvalue: values of 1, 2, 4 and 8 bytes, at aligned and unaligned
// offsets, each with SignalInc{5}; the receiver checks them after 4*n
// increments. Slot k of 16 bytes holds u8 @0, u16 @2, u32 @4, u64 @8;
// slot k's unaligned twin at 4096 + 16 k holds u16 @1, u32 @3 (+ u64 @7
// below the first 8 bytes is skipped: 8-byte puts stay aligned there).
extern "C" __global__ void putvalue(const __grid_constant__ DevComm comm, Window win, int n, unsigned long long* res) {
  CoopThread t;
  Gin gin(comm, 0);
  Team world = teamWorld(comm);
  const int to = right(comm), from = left(comm);
  for (int k = threadIdx.x; k < n; k += blockDim.x) {
    u64 base = 16ull * k, v = 0x0102030405060708ull * (u64)(k + 1) + (u64)comm.rank;
    gin.putValue(world, to, win, base + 0, (unsigned char)v, SignalInc{5}, t);
    gin.putValue(world, to, win, base + 2, (unsigned short)v, SignalInc{5}, t);
    gin.putValue(world, to, win, base + 4, (unsigned int)v, SignalInc{5}, t);
    gin.putValue(world, to, win, base + 8, (unsigned long long)v, SignalInc{5}, t);
    gin.putValue(world, to, win, 4096 + base + 1, (unsigned short)~v, SignalInc{5}, t);
    gin.putValue(world, to, win, 4096 + base + 3, (unsigned int)~v, SignalInc{5}, t);
  }
  __syncthreads();
  CoopBlock coop;
  bool ok = gin.waitSignal(coop, 5, 6ull * n);
  noteAbort(coop, ok, res);
  if (!ok) return;
  const unsigned char* p = (const unsigned char*)localPointer(win, 0);
  for (int k = threadIdx.x; k < n; k += blockDim.x) {
    u64 base = 16ull * k, v = 0x0102030405060708ull * (u64)(k + 1) + (u64)from;
    auto rd = [&](u64 off, int size) {
      u64 x = 0;
      for (int i = 0; i < size; i++) x |= (u64)((volatile const unsigned char*)p)[off + i] << (8 * i);
      return x;
    };
    u64 m16 = 0xffffull, m32 = 0xffffffffull;
    bool good = rd(base, 1) == (v & 0xff) && rd(base + 2, 2) == (v & m16) && rd(base + 4, 4) == (v & m32) &&
                rd(base + 8, 8) == v && rd(4096 + base + 1, 2) == (~v & m16) && rd(4096 + base + 3, 4) == (~v & m32);
    if (!good && atomicAdd(&res[0], 1ull) == 0) res[1] = k;
  }
}

// barrier: rounds of (put a round-stamped value to the right neighbour;
// barrier; check the value from the left neighbour; barrier). Without the
// first barrier the check could read the previous round; without the
// second, the next round's put could land before the check.
extern "C" __global__ void barrier(const __grid_constant__ DevComm comm, Window win, int rounds, unsigned long long* res) {
  CoopBlock coop;
  Gin gin(comm, 0);
  Team world = teamWorld(comm);
  BarrierSession<CoopBlock> bar(coop, gin, world, 0);
  const volatile u64* mine = (const volatile u64*)localPointer(win, 0);
  for (int k = 1; k <= rounds; k++) {
    gin.putValue(world, right(comm), win, 0, ((u64)comm.rank << 32) | (u64)k, None{}, coop);
    bool ok = bar.sync(coop);
    noteAbort(coop, ok, res);
    if (!ok) return;
    if (coop.rank() == 0 && *mine != (((u64)left(comm) << 32) | (u64)k)) {
      if (atomicAdd(&res[0], 1ull) == 0) res[1] = k;
    }
    ok = bar.sync(coop);
    noteAbort(coop, ok, res);
    if (!ok) return;
  }
  if (coop.rank() == 0) res[3] = rounds;
}

// barrier_fences: the fence levels of BarrierSession::sync
// (ncclGinFenceLevel, NCCL 2.32), through the timed sync. Each round a
// rank publishes a stamp in word 2 of its window, puts a stamp to word 0
// of its right neighbour and one to word 1 of its own window (loopback),
// syncs with FencePut and checks both; gets its right neighbour's word 2
// into its word 3, syncs with FenceGet (with FencePut every other round)
// and checks it; a last sync keeps the next round's writes behind every
// check and read. On the proxy path loopback puts and gets are in flight
// when they return, so without the fences the checks see old rounds.
extern "C" __global__ void barrier_fences(const __grid_constant__ DevComm comm, Window win, int rounds,
                                          unsigned long long* res) {
  CoopBlock coop;
  Gin gin(comm, 0);
  Team world = teamWorld(comm);
  BarrierSession<CoopBlock> bar(coop, gin, world, 1);
  volatile u64* w = (volatile u64*)localPointer(win, 0);
  const Timeout t{10000000000ull};  // 10 s: far beyond a round, short of the case's bound
  auto stamp = [](int rank, int k, u64 tag) { return tag << 60 | (u64)rank << 32 | (u64)k; };
  auto bad = [&](int k, int what) {
    if (atomicAdd(&res[0], 1ull) == 0) res[1] = (u64)what << 32 | (u64)k;
  };
  for (int k = 1; k <= rounds; k++) {
    if (coop.rank() == 0) w[2] = stamp(comm.rank, k, 3);
    gin.putValue(world, right(comm), win, 0, stamp(comm.rank, k, 1), None{}, coop);
    gin.putValue(world, world.rank, win, 8, stamp(comm.rank, k, 2), None{}, coop);
    WaitResult r = bar.sync(coop, FencePut, t);
    noteAbort(coop, r == WaitResult::Ok, res);
    if (r != WaitResult::Ok) return;
    if (coop.rank() == 0 && w[0] != stamp(left(comm), k, 1)) bad(k, 1);
    if (coop.rank() == 0 && w[1] != stamp(comm.rank, k, 2)) bad(k, 2);
    gin.get(world, right(comm), win, 24, win, 16, 8, None{}, coop);
    r = bar.sync(coop, (k & 1) ? FenceGet : FenceGet | FencePut, t);
    noteAbort(coop, r == WaitResult::Ok, res);
    if (r != WaitResult::Ok) return;
    if (coop.rank() == 0 && w[3] != stamp(right(comm), k, 3)) bad(k, 3);
    r = bar.sync(coop, FenceNone, t);
    noteAbort(coop, r == WaitResult::Ok, res);
    if (r != WaitResult::Ok) return;
  }
  if (coop.rank() == 0) res[3] = rounds;
}

// wait_timeout: timed waits on what never comes. out[0] and out[1]: the
// result of a wait for signal 6 and its length in ns of %globaltimer;
// out[2] and out[3]: the same for counter 2; out[4]: a wait whose value is
// already there, with Timeout{0}; out[5]: a wait on an unknown signal.
extern "C" __global__ void wait_timeout(const __grid_constant__ DevComm comm, unsigned long long ns,
                                        unsigned long long* out) {
  CoopBlock coop;
  Gin gin(comm, 0);
  const u64 t0 = impl::globalTimer();
  const WaitResult sig = gin.waitSignal(coop, 6, 1, Timeout{ns});
  const u64 t1 = impl::globalTimer();
  const WaitResult ctr = gin.waitCounter(coop, 2, 1, Timeout{ns});
  const u64 t2 = impl::globalTimer();
  const WaitResult now = gin.waitSignal(coop, 6, 0, Timeout{0});
  const WaitResult bad = gin.waitSignal(coop, (Signal)comm.nSignals, 1, Timeout{ns});
  if (coop.rank() == 0) {
    out[0] = (u64)sig;
    out[1] = t1 - t0;
    out[2] = (u64)ctr;
    out[3] = t2 - t1;
    out[4] = (u64)now;
    out[5] = (u64)bad;
  }
}

// barrier_timeout: a timed barrier sync (FencePut|FenceGet) that a peer
// never joins. out[0]: its result; out[1]: its length in ns.
extern "C" __global__ void barrier_timeout(const __grid_constant__ DevComm comm, unsigned long long ns,
                                           unsigned long long* out) {
  CoopBlock coop;
  Gin gin(comm, 0);
  BarrierSession<CoopBlock> bar(coop, gin, teamWorld(comm), 2);
  const u64 t0 = impl::globalTimer();
  const WaitResult r = bar.sync(coop, FencePut | FenceGet, Timeout{ns});
  const u64 t1 = impl::globalTimer();
  if (coop.rank() == 0) {
    out[0] = (u64)r;
    out[1] = t1 - t0;
  }
}

// wait_forever waits on signal 6, which nobody signals; it must return
// once the host sets the abort flag.
extern "C" __global__ void wait_forever(const __grid_constant__ DevComm comm, unsigned long long* res) {
  Gin gin(comm, 0);
  bool ok = gin.waitSignal(CoopThread{}, 6, 1);
  res[2] = ok ? 0 : 1;
  res[3] = gin.aborted() ? 1 : 0;
}

// bad_calls makes one call of each kind the device must refuse: the first
// (out of bounds) is what DeviceError reports.
extern "C" __global__ void bad_calls(const __grid_constant__ DevComm comm, Window win, unsigned long long* res) {
  Gin gin(comm, 0);
  Team world = teamWorld(comm);
  gin.put(world, 0, win, win->size - 4, win, 0, 8);         // past the end
  gin.put(world, comm.size, win, 0, win, 0, 8);             // no such peer
  gin.signal(world, 0, SignalInc{(Signal)comm.nSignals});   // no such signal
  res[3] = 1;
}

// mixed_signals (proxy path): rank 0 signals rank 1's signal 7 with
// SignalInc, then with SignalAdd, a mix gin refuses between resets: rank
// 0's proxy fails and sets the abort flag, so rank 0's wait on signal 8,
// which nobody signals, returns false. Rank 1 waits for the SignalInc and
// reports its signal's value (the refused add never lands).
extern "C" __global__ void mixed_signals(const __grid_constant__ DevComm comm, unsigned long long* res) {
  Gin gin(comm, 0);
  Team world = teamWorld(comm);
  bool ok;
  if (comm.rank == 0) {
    gin.signal(world, 1, SignalInc{7});
    gin.signal(world, 1, SignalAdd{7, 2});
    ok = gin.waitSignal(CoopThread{}, 8, 1);
  } else {
    ok = gin.waitSignal(CoopThread{}, 7, 1);
    res[3] = gin.readSignal(7, 64);
  }
  res[2] = ok ? 0 : 1;
}

// slow_fill (one block) lets the next overlapped kernel start at once
// (launchDependents), spins ns of %globaltimer, then writes words words of
// value at the start of this rank's part of win. out[0] = the time it
// starts writing.
extern "C" __global__ void slow_fill(Window win, unsigned long long words, unsigned long long value,
                                     unsigned long long ns, unsigned long long* out) {
  launchDependents();
  __shared__ u64 start;
  if (threadIdx.x == 0) {
    const u64 t0 = impl::globalTimer();
    while (impl::globalTimer() - t0 < ns) {
    }
    start = impl::globalTimer();
    out[0] = start;
  }
  __syncthreads();
  u64* p = reinterpret_cast<u64*>(localPointer(win, 0));
  for (u64 i = threadIdx.x; i < words; i += blockDim.x) p[i] = value;
}

// overlapped_put, launched overlapped behind slow_fill, puts the words
// slow_fill writes to this rank's own part at offset 8*words (loopback)
// with SignalInc{0} and waits for it: no waitPrior of its own, the put
// waits for slow_fill. out[1] = when this kernel started (before
// slow_fill finished where the launch overlapped), out[2] = 1 if a wait
// was aborted.
extern "C" __global__ void overlapped_put(const __grid_constant__ DevComm comm, Window win, unsigned long long words,
                                          unsigned long long* out) {
  CoopBlock coop;
  Gin gin(comm, 0);
  const u64 t0 = impl::globalTimer();
  gin.put(teamWorld(comm), comm.rank, win, 8 * words, win, 0, 8 * words, SignalInc{0}, None{}, coop);
  const bool ok = gin.waitSignal(coop, 0, 1);
  if (coop.rank() == 0) {  // after the put's waitPrior: slow_fill is done with out
    out[1] = t0;
    out[2] = ok ? 0 : 1;
  }
}

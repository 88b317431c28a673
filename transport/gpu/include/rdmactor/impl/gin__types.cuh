// impl/gin__types.cuh: the memory layouts shared by kernels and the Go
// host side. Every offset here is repeated in Go (transport/gpu/layout.go
// and transport/gpu/ring/layout.go); the device test TestLayoutTwin reads
// them back from a kernel and compares, so the two cannot drift silently.
#pragma once

namespace rdmactor {
namespace impl {

typedef unsigned long long u64;
typedef unsigned int u32;
typedef unsigned char u8;

// Paths (DevComm.path).
enum { PathLSA = 0, PathProxy = 1 };

// DevComm: passed to kernels by value, 128 bytes.
struct DevComm {
  int rank;         //  0 world rank
  int size;         //  4 world size
  int lsaSize;      //  8 ranks per LSA team
  int path;         // 12 PathLSA or PathProxy
  int nSignals;     // 16 user signals; barrier signals follow them
  int nCounters;    // 20
  int nBarriers;    // 24
  int nContexts;    // 28 proxy rings
  u64 signals;      // 32 u64[nSignals+nBarriers]: this rank's signal words (proxy: gin's)
  u64 peerSignals;  // 40 LSA: u64[size], each rank's signal words mapped here
  u64 counters;     // 48 u64[nCounters]
  u64 shadows;      // 56 u64[nSignals+nBarriers], device memory, owner only
  u64 abortFlag;    // 64 u64 in pinned host memory: nonzero = abort
  u64 status;       // 72 u64 in device memory: first device-side error
  u64 rings;        // 80 proxy: RingDesc[nContexts]
  u64 reserved[5];  // 88..128
};
static_assert(sizeof(DevComm) == 128, "DevComm layout");

// WindowDesc: one per window, in device memory; a Window points at it.
struct WindowDesc {
  u64 size;   //  0 bytes on every rank
  u64 local;  //  8 this rank's part as kernels address it
  u64 peers;  // 16 LSA: u64[size] table of every rank's part, mapped here
  u32 id;     // 24 window index in proxy WQEs
  u32 flags;  // 28
};
static_assert(sizeof(WindowDesc) == 32, "WindowDesc layout");

// RingDesc: one per context, in device memory (DevComm.rings).
struct RingDesc {
  u64 dev;    //  0 RingDev, device memory
  u64 host;   //  8 ring host part, pinned host memory (device alias)
  u32 depth;  // 16 entries, a power of two
  u32 pad;    // 20
  u64 pad2;   // 24
};
static_assert(sizeof(RingDesc) == 32, "RingDesc layout");

// RingDev: the producer side, touched by GPU threads only.
//   reserved: next sequence to hand out (atomicAdd)
//   ready:    every sequence below it is written and its doorbell rung;
//             moved from base to base+1 only by the owner of base
enum { RingDevReserved = 0, RingDevReady = 64, RingDevBytes = 128 };

// Ring host part (pinned host memory), one cache line per index:
//   doorbell:  producer index, stored by the GPU in publish order
//   consumed:  entries the proxy took (their slots are free again)
//   completed: entries locally complete (sources reusable; flush)
//   status:    nonzero once the proxy failed (it also sets abortFlag)
// then depth entries of WQEBytes each.
enum {
  RingDoorbell = 0,
  RingConsumed = 64,
  RingCompleted = 128,
  RingStatus = 192,
  RingEntries = 256,
};

// WQE descriptor, 64 bytes, little endian.
enum {
  WQEBytes = 64,
  WQETag = 0,        // u32: low 32 bits of seq+1, proves the entry was written
  WQEOp = 4,         // u8:  OpPut, OpPutValue, OpSignal, OpGet
  WQERemote = 5,     // u8:  RemoteNone, RemoteInc, RemoteAdd
  WQELocal = 6,      // u8:  1 = CounterInc
  WQEValueSize = 7,  // u8:  putValue bytes
  WQEPeer = 8,       // u32: world rank
  WQESignal = 12,    // u32
  WQEDstWindow = 16, // u32: window id
  WQESrcWindow = 20, // u32
  WQECounter = 24,   // u32
  WQEDstOff = 32,    // u64
  WQESrcOff = 40,    // u64
  WQEBytesOrValue = 48,  // u64: put length, or putValue's value
  WQESignalValue = 56,   // u64: SignalAdd amount
};
enum { OpNop = 0, OpPut = 1, OpPutValue = 2, OpSignal = 3, OpGet = 4 };
enum { RemoteNone = 0, RemoteInc = 1, RemoteAdd = 2 };

// Device-side error codes (DevComm.status = code << 32 | detail).
enum {
  ErrOutOfBounds = 1,
  ErrPeerOutOfRange = 2,
  ErrUnknownSignal = 3,
  ErrUnknownCounter = 4,
  ErrBadArgument = 5,
  ErrWrongPath = 6,
};

}  // namespace impl
}  // namespace rdmactor

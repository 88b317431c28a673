// Package ring is the host side of the proxy path's SQ rings: the layout
// shared with the device (impl/gin__types.cuh), the 64-byte WQE
// descriptor, the Reader the CPU proxy drains a ring with, and Producer, a
// host model of what a kernel does (impl/gin__proxy.cuh), used by tests and
// by host code that posts into the same ring.
//
// It is the pure core: it sees rings as []byte views and
// atomic words (internal/memword) and does no I/O; package gpu allocates
// the memory (pinned, device-mapped) and drives the Reader.
//
// # Protocol (as DeepEP's use of NVSHMEM IBGDA)
//
// A ring of depth entries has two producer indices in device memory
// (reserved, ready) and four words in host memory (doorbell, consumed,
// completed, status), each on its own cache line, followed by the entries:
//
//	device:  reserved @0    ready @64
//	host:    doorbell @0    consumed @64   completed @128   status @192
//	         entries  @256, depth × 64 bytes
//
// Producer (a GPU thread, or the lowest lane for n lanes of a warp posting
// together): base = atomicAdd(reserved, n); wait until
// base+n-consumed <= depth; each lane writes its WQE with tag = seq+1 into
// slot seq%depth (seq = base + its index); wait until ready == base; store
// doorbell = base+n (release, system scope); store ready = base+n. Each
// doorbell store happens before the next producer's turn, so the doorbell
// only grows.
//
// Consumer (the CPU proxy): read doorbell (acquire); decode entries
// [next, doorbell), checking each tag; post them; store consumed (their
// slots are free); once they are locally complete, store completed (a
// kernel's flush waits for it).
//
// What the ring does not promise: anything after an abort. A producer that
// gave up between reserve and publish leaves a hole no one fills; the
// communicator is torn down then.
package ring

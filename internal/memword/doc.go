// Package memword gives atomic views of 64-bit (and 32-bit futex) words inside byte slices
// that back shared memory (mmap'd windows of the shm provider, and later
// pinned host rings): signal words, mode words, ring indices.
//
// It is the one place of rdmactor that turns a []byte into a typed atomic
// pointer. Only that may be added here: no syscalls, no mapping, no
// layout knowledge (the owner of a mapping draws its layout).
//
// # Ordering
//
// The returned *atomic.Uint64 uses sync/atomic, whose operations are
// sequentially consistent (Go memory model, "Synchronizing operations"):
// an Add or Store is a release and a Load an acquire on amd64 and arm64,
// also towards another process that maps the same pages, because the
// hardware orders the physical memory, not the virtual address.
//
// The race detector keys synchronization by virtual address: it does not
// see two mappings of one file as the same word. Tests that cross mappings
// must read data through the mapping whose word they wait on.
package memword

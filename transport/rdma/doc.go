// Package rdma is the NIC contract under gin: a Provider registers memory,
// imports peers' memory, connects queue pairs (QPs) and executes work queue
// entries (WQEs) posted on them, reporting each completion to the QP's
// completion handler.
//
// Everything above this package (endpoint, gin) is provider-agnostic; every
// provider below it (shm, and later ofi and the GPU proxy) implements exactly
// this interface. The vocabulary is that of ibverbs and fi_rma(3):
//
//   - MemoryRegion: local memory the provider registered (ibv_reg_mr /
//     fi_mr_reg). Its Descriptor is what peers need to address it (rkey and
//     address for verbs; a file name for shm) and travels through the bootstrap.
//   - RemoteRegion: a peer's region imported from its descriptor.
//   - QP: an ordered channel to one peer. WQEs posted on one QP execute in
//     post order; completions are reported in post order.
//   - WQE: one RDMA write, optionally followed by an atomic add on a remote
//     64-bit word (the signal). The add is ordered after the write of the same
//     WQE: when the add is visible at the peer, the write is too.
//
// # Caller duties
//
//  1. Post may be called by one goroutine at a time per QP (the endpoint's
//     doorbell serializes it); Progress likewise.
//  2. A WQE's local source must stay unchanged until its completion is
//     reported; the completion handler may run inside Post (providers that
//     execute at the doorbell, such as shm) or inside Progress.
//  3. Regions must outlive every WQE that names them.
package rdma

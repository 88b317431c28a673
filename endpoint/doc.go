// Package endpoint turns a provider's QPs into the endpoints gin posts on:
// the data Endpoint and the SCEndpoints (signal/counter endpoints) of each
// (context, peer), following the aws-ofi-nccl EFA-GDA backend, the N:m
// QP-sharing change to AMD's ANP NCCL plugin, and DeepEP's use of NVSHMEM
// IBGDA (GPU-built WQEs).
//
// # Shape
//
//   - An Endpoint is one SQ ring on a QP. Producers reserve entries
//     lock-free (compare-and-swap on the reserve index after the room check
//     submitted - completed + n <= depth), fill the WQE in place, publish in
//     order (ready moves from base to base+n once it reaches base) and ring
//     the doorbell unless the post is aggregated. See sq.go.
//   - A Group routes a post by its signal: an indexed signal rides that
//     signal's SCEndpoint, no signal (or a VA signal) rides the data
//     endpoint. Before a non-aggregated post it rings the other endpoints
//     of the group first, so a signal never overtakes the group's earlier
//     data.
//   - PutValue stages its value in the endpoint's slice of a registered
//     slot region: slot seq%depth, free exactly when SQ entry seq is.
//   - Contexts share m QPs per peer (Config.QPsPerPeer): context c uses QP
//     c%m. A QP lives as long as an endpoint references it; completions are
//     routed by wr_id = [route:16 | seq:48], route naming the endpoint on
//     that QP.
//   - Each Endpoint is a protoactor-go actor under one supervisor per
//     Manager. The actor owns the endpoint's QP reference (released when it
//     stops), drives progress for providers without inline completion, and
//     fails with the QP's fault so the supervisor sees it
//     (faultStrategy: record, stop; a broken QP is not restarted). A QP
//     fault is sticky: every later post on it returns the *rdma.QPError.
//
// # Lock order
//
//	Group.mu -> Manager.mu -> qpPool.mu -> sharedQP.postMu
//
// Posting takes only sharedQP.postMu, around the provider's Post (one
// caller per QP, as rdma requires). No lock is held while waiting for room,
// completions or actors.
package endpoint

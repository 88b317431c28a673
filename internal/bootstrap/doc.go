// Package bootstrap is the control plane of a job: every rank holds a
// Bootstrap through which it exchanges small descriptors with the others
// (AllGather, Barrier) and learns when a rank is lost.
//
// This package holds what package gin needs and nothing that carries
// messages between processes: the interface, the in-process
// implementation (NewLocal), the parsing of the launcher's and the
// schedulers' environment (ConfigFromEnv), and a registry through which a
// process-spanning implementation makes itself available (Register,
// FromEnv), as database/sql drivers do. Package remote, imported by
// transport/rdma/std, registers the one over protoactor-go remote (gRPC);
// gin therefore does not depend on gRPC.
//
// # Usage
//
// A rank started by cmd/rdmarun (or a scheduler setting the same variables)
// calls FromEnv; tests and single-process programs use NewLocal, which runs
// the ranks as goroutines of one process.
//
//  1. Every rank calls the collectives (AllGather, Barrier) in the same order;
//     one collective at a time per rank (calls on one Bootstrap are serialized).
//  2. A collective ends with the data of all ranks, with the context's error,
//     or with a *rdma.PeerLostError (errors.Is(err, rdma.ErrPeerLost)) as soon
//     as any rank is lost. After a loss every later collective fails at once
//     with the first loss (Err).
//  3. Every rank calls Close at its end. Close is a clean leave: it is not
//     reported to the others as a failure. A collective that a closed rank
//     never joined can no longer complete; it fails with a *rdma.PeerLostError
//     naming that rank with reason "closed".
//  4. After a loss the survivors may Shrink (Shrinker, as ncclCommShrink,
//     NCCL 2.27): they agree on the lost set and get a Bootstrap of
//     themselves, relayed through the old one's control plane (Groups on
//     the side that sees every rank, Family on each rank's).
//
// Implementations keep these rules by embedding RankState, which holds a
// rank's collectives, losses and leaves and does no I/O.
//
// What this package does not promise: ordering between collectives of
// different Bootstrap values, or delivery of data of a rank that is lost.
package bootstrap

// Package bootstrap is the control plane of a job: every rank holds a
// Bootstrap through which it exchanges small descriptors with the others
// (AllGather, Barrier) and learns when a rank is lost.
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
//
// # Remote implementation
//
// NewRemote runs the control plane on protoactor-go's remote (gRPC). Rank 0
// listens on the bootstrap address and runs the coordinator actor
// ("rdmactor-bootstrap"); every rank runs a rank actor ("rdmactor-rank") on an
// address of its own. Ranks join the coordinator, which answers each join
// (so it holds an outgoing connection to every rank) and, once all have
// joined, tells every rank all addresses. A collective is a contribution sent
// to the coordinator, which answers every rank once all contributions of that
// sequence number are in. Loss is detected from the gRPC stream: when a rank
// process dies its connections break, protoactor publishes
// remote.EndpointTerminatedEvent, rank 0 maps the address to the rank and
// tells the others; the other ranks watch rank 0 the same way. A rank that
// is hung but alive is not detected.
//
// What this package does not promise: ordering between collectives of
// different Bootstrap values, delivery of data of a rank that is lost, or
// detection of a hung (but connected) rank. protoactor-go logs nothing unless
// RDMACTOR_DEBUG is set (then it logs at debug level to stderr).
package bootstrap

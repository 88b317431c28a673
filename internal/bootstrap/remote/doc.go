// Package remote is the process-spanning bootstrap.Bootstrap, over
// protoactor-go's remote (gRPC). Importing it registers it with package
// bootstrap (bootstrap.Register), which is how gin.Init finds it;
// transport/rdma/std imports it, so programs that import std (or package
// actor) need nothing more.
//
// New runs the control plane. Rank 0 listens on the bootstrap address and
// runs the coordinator actor ("rdmactor-bootstrap"); every rank runs a rank
// actor ("rdmactor-rank") on an address of its own. Ranks join the
// coordinator, which answers each join (so it holds an outgoing connection
// to every rank) and, once all have joined, tells every rank all addresses.
// A collective is a contribution sent to the coordinator, which answers
// every rank once all contributions of that sequence number are in. Loss
// is detected from the gRPC stream: when a rank process dies its
// connections break, protoactor publishes remote.EndpointTerminatedEvent,
// rank 0 maps the address to the rank and tells the others; the other
// ranks watch rank 0 the same way. Once rank 0 is gone (killed, or closed
// first), the others watch each other directly (peers.go): later losses
// are still reported, and a Close is still told from a loss; collectives
// and Shrink fail from then on (bootstrap.ErrRankZeroLost), and no rank
// can join. A rank that is hung but alive is not detected.
//
// Every control message is sealed with a key derived from the job's secret
// (seal.go), and beyond loopback the channels are TLS with a certificate
// derived from it too (tls.go). protoactor-go logs nothing unless
// RDMACTOR_DEBUG is set (then it logs at debug level to stderr).
package remote

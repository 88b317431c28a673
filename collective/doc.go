// Package collective holds collectives written on gin's one-sided puts
// and signals alone: AllReduce, AllGather, ReduceScatter, Broadcast,
// AllToAll and AllToAllV, with NCCL's semantics (nccl.h: ncclAllReduce,
// ncclAllGather, ncclReduceScatter, ncclBroadcast, ncclAlltoAll) and MPI's
// for AllToAllV (MPI_Alltoallv), over buffers in gin windows.
//
// # Usage
//
//	cfg := gin.Config{Signals: collective.Requirement(size)}   // plus what else the program needs
//	g, _ := gin.Init(ctx, cfg)
//	c, _ := collective.New(ctx, g, collective.Config{Signal0: 0})  // collective: registers scratch
//	win, _ := g.RegisterWindow(ctx, 2*n*4, 0)                     // collective
//	v, _ := collective.Elements[float32](win, 0, n)                // fill the source
//	err := c.AllReduce(ctx, collective.At(win, 4*n), collective.At(win, 0), n, collective.Float32, collective.Sum)
//
// Caller duties:
//
//  1. Reserve Requirement(size) signals from Config.Signal0 on in
//     gin.Config.Signals; nothing else may update them.
//  2. Every rank calls New, and then the same collectives in the same
//     order with the same counts, types, operators and roots.
//  3. Destinations are symmetric: the same window and offset on every
//     rank (peers write into them). Sources are only read locally.
//  4. Do not touch a call's buffers while it runs; sources may be reused
//     when it returns (it flushes), destinations hold the result.
//  5. Give every call a context with a deadline: a rank that never joins
//     ends the others' call with the context's error, and breaks the
//     Comm (ErrBroken afterwards).
//
// # Messages and signals
//
// Rank p counts every message it sends to rank q (a put or a bare signal)
// with SignalInc on signal Signal0+p at q, all on one gin context; q knows
// how many messages each step brings from p and waits for its count
// (64-bit, rolling). Strong signals (New checks the provider) make a count
// imply the data of every message before it, so one signal per sender
// serves every algorithm and every call.
//
// # Reusing buffers without sleeps
//
// Every algorithm makes each rank's end of a call depend on every rank's
// start of it (a rank needs data, or an "entered" message, from all of
// them). Two rules follow, and the package needs nothing else:
//
//   - Scratch: each call (each slice of a long ring) is an epoch, and
//     epochs alternate between two halves of the scratch window. A rank in
//     epoch k+1 has seen every rank start epoch k, so none still reads
//     the half of epoch k-1 that k+1 writes. Each epoch ends with a Flush,
//     so puts out of scratch are complete before their half comes back.
//   - Destinations: a rank writes a peer's destination only when it knows
//     the peer is in the same call (it received the peer's "entered"
//     message, or data that contains the peer's contribution), and the
//     peer cannot return before that write arrived, since it waits for it.
//
// # Algorithms
//
// Messages up to Config.OneShotMax bytes (per rank, or per pair) go in one
// step through scratch (OneShot; an AllReduce or AllGather whose ranks
// span hosts, with several on each, in three: Hierarchical); larger ones
// by TwoShot or Ring (AllReduce, ReduceScatter: 2(n-1)/n of the data per
// rank, in 2 steps or around a ring, pipelined in Config.Piece puts),
// Direct (AllGather, AllToAll, AllToAllV: straight into the peers'
// destinations after an "entered" handshake) or Chain (Broadcast).
// Comm.Algorithm tells which a call takes. Waits serve peers in arrival
// order where the algorithm allows, and pace themselves by Config.Pacing:
// ranks that share cores must yield (barrier.Pacing).
//
// # Results
//
// Reductions are bit-identical on every rank: OneShot reduces in rank order
// everywhere, Ring reduces each element once, on one rank, and
// distributes it. Float results differ from a sequential sum in rounding,
// as NCCL's and MPI's do.
package collective

// Package gin is rdmactor's one-sided communication layer: windows, puts,
// gets, signals, counters and flush, with the semantics of NCCL's GIN
// device API (nccl_device/gin.h, NCCL 2.28–2.30), callable from Go. After
// a rank is lost (Config.PeerFailure FailPeer), Comm.Shrink gives the
// survivors a Comm without it, as ncclCommShrink does (NCCL 2.27).
//
// # Usage
//
//	comm, err := gin.Init(ctx, gin.Config{Signals: 8})        // one rank of an rdmarun job
//	win, err := comm.RegisterWindow(ctx, 1<<20, 0)             // collective
//	x, _ := comm.Context(0)
//	err = x.Put(comm.World(), peer, win, 0, win, 0, 4096, gin.SignalInc(0), gin.LocalNone)
//	_, err = x.WaitSignal(ctx, 0, 1, 64)                       // at the peer: data is there
//
// Caller duties:
//
//  1. Collective calls (Init, NewComm, NewLocal, RegisterWindow) are made
//     by every rank in the same order with equal arguments.
//  2. Between two resets, a signal is updated only by SignalInc or only by
//     SignalAdd: mixing them returns ErrMixedSignalOps (checked at the
//     target word on shm).
//  3. ResetSignal and ResetCounter may not race with updates of the same
//     signal or counter ("may not race with concurrent modifications",
//     gin.h): reset when no peer can be signalling it.
//  4. A put's source may be changed only after Flush, or after its
//     CounterInc ticked.
//  5. Every wait takes a context.Context: give it a deadline.
//
// # What a signal promises
//
// Strong signals (the default, and what shm provides): when a signal
// update from a put or Signal is visible at the peer, the data of that put
// and of every earlier put of the same Context to the same peer is visible
// too. Nothing is promised across contexts. Weak signals (providers whose
// Capabilities().StrongSignals is false, such as EFA) imply only the data
// of the put that carries them; require strong signals with
// Config.Require.StrongSignals and NewComm fails on such providers.
//
// Signals and counters compare in rolling order with a bits-wide mask m:
// a <= b iff ((b-a) & m) <= m>>1, so a waiter is right across wraparound
// as long as the value moves less than half the range between looks.
// Counters are 56 bits wide.
//
// # What Flush does not promise
//
// Flush returns when every put this Context issued is locally complete:
// its source may be reused (and every Get has landed). It "makes no claims regarding the completion
// status on the remote peer(s)" (gin.h): learn delivery from a signal.
//
// # Aggregate
//
// A put with the Aggregate option is queued without ringing the doorbell;
// the next non-aggregated put or signal of the Context to that peer, or
// Flush, hands the batch to the NIC at once, in issue order across the
// peer's endpoints. A batch longer than the SQ depth is sent as the ring
// fills. Errors of aggregated puts (ErrMixedSignalOps) are returned by the
// call that rings them, and by Flush.
//
// # Errors
//
// Bad input is an error at the call, never a corrupted peer: peers outside
// the team (ErrPeerOutOfRange) or outside Config.Peers (ErrNotPeer),
// offsets outside a window (ErrOutOfBounds), unknown signals, counters and
// contexts, malformed sizes and bits (ErrBadArgument), use after Close
// (ErrClosed). Once the bootstrap reports
// a lost rank, every wait and post of the Comm ends with ErrPeerLost
// (Config.PeerFailure FailComm, the default), or only the posts to that
// rank do (FailPeer: Comm.PeerErr and LostPeers say which ranks).
//
// # Implementation
//
// Each Context owns, per peer, an endpoint.Group: a data endpoint and one
// SCEndpoint per signal index in use, each an SQ ring on a QP shared N:m
// between contexts (package endpoint). Signal words live in a registered
// region of Signals value words followed by Signals mode words, so a
// provider can check the SignalInc/SignalAdd rule at the target (mode
// words start on their own cache line, away from the words peers spin on); counters
// and shadows are local words.
package gin

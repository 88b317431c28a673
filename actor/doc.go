// Package actor runs protoactor-go actors across the ranks of an rdmactor
// job: a message to a PID of another rank is encoded with msgpack and put
// into that rank's remote mailbox (package mailbox) with one-sided puts,
// not sent over a socket (docs/actors.md).
//
// Programs keep protoactor-go's API. This package re-exports what they
// need (PID, Props, Context, Actor, PropsFromProducer, ... as aliases), so
// one import suffices, and protoactor-go stays reachable for the rest.
//
// # Usage
//
//	type Ping struct{ N int }
//	type Pong struct{ N int }
//
//	func init() { actor.RegisterMessage[Ping](); actor.RegisterMessage[Pong]() }
//
//	node, err := actor.Init(ctx, actor.Config{})           // a rank of an rdmarun job
//	defer node.Close()
//	node.SpawnNamed(actor.PropsFromFunc(func(c actor.Context) {
//		if p, ok := c.Message().(*Ping); ok {
//			c.Respond(&Pong{N: p.N + 1})
//		}
//	}), "echo")
//	node.Barrier(ctx)                                      // every rank's echo exists
//	res, err := node.Root().RequestFuture(node.PID(1, "echo"), &Ping{N: 41}, time.Second).Result()
//
// Start takes a gin.Comm the caller made; StartLocal runs ranks as
// goroutines of one process (tests, examples).
//
// Caller duties:
//
//  1. Init, Start and StartLocal are collective (they register the
//     mailbox window): every rank calls them with an equal Config.
//  2. Every rank registers the same message types under the same names,
//     before messages of them can arrive (RegisterMessage in init).
//  3. Spawn named actors, then Barrier, then send to them: a message to a
//     name that does not exist yet is a dead letter.
//  4. Do not mutate PIDs (protoactor-go's rule): the node caches them.
//
// # Addresses
//
// A node sets its actor system's address to "rdmactor:<rank>" before
// anything is spawned, so every PID names its rank (AddressOf, RankOf,
// Node.PID). A resolver registered with the process registry turns PIDs of
// other ranks into a handle per rank; PIDs cache it, and it finds the
// mailbox per send.
//
// # Messages
//
// User messages are Go values of types registered with RegisterMessage,
// encoded with msgpack v5 by reflection (or with the type's own
// EncodeMsgpack/DecodeMsgpack, called directly), or protobuf messages,
// which cross unregistered by their full name (protoactor-go's own
// messages among them). A message arrives in the form it was sent (T or
// *T). Sender PIDs and message headers travel, so Context.Respond,
// Request and RequestFuture work across ranks. The system messages death
// watch needs cross too: Watch, Unwatch, Terminated, Stop (and PoisonPill,
// a user message). Other system messages (Failure, Restart, ...) do not:
// supervision stays within a rank.
//
// Frames of one (sender rank, receiver rank) pair arrive in order, so
// messages from one actor to another keep their order, as protoactor-go
// promises. A send waits for ring credit when the receiving rank is
// behind, for up to Config.Mailbox.SendTimeout (back-pressure, where
// protoactor-go's remote queues without limit).
// A receiving rank holds messages its actors have not processed up to
// Config.MaxInbound bytes; past it, a sending rank whose next message is
// for a busy actor is read no further until that actor catches up, so
// the back-pressure reaches that sender (and its messages to the rank's
// other actors wait too: docs/actors.md, Inbound memory).
//
// # Failures and how they are reported
//
// Nothing that arrives crashes a rank. A message that cannot cross is
// reported where it is known, and a request waiting for an answer fails at
// once with ErrDeadLetter instead of timing out:
//
//   - at the sender: an unregistered type, a frame too large, a ring still
//     full after SendTimeout, a rank gone: a throttled log line, an
//     UndeliverableEvent with the reason and a DeadLetterEvent on the
//     EventStream (Node.Tell returns the error instead);
//   - at the receiver: a type it does not know, a body it cannot decode:
//     an UndeliverableEvent there, the frame is dropped and the next one
//     delivered, and a notice goes back to the sending rank, which reports
//     it in turn (RemoteError) and answers the sender with
//     DeadLetterResponse;
//   - a message to an actor that does not exist: protoactor-go's dead
//     letter, whose DeadLetterResponse crosses back to the sender.
//
// A ring that holds something that is not a frame at all closes that pair
// (see package mailbox): the node then treats the sending rank as gone.
//
// # Death watch
//
// Watching an actor of another rank sends Watch there and records the
// watch here, as protoactor-go's remote endpoint watcher does. When the
// actor stops, its Terminated crosses back. When its rank goes, every
// local watcher of its actors gets Terminated with
// TerminatedAddressTerminated, and later sends to the rank fail with
// ErrRankGone (Node.Gone says why). A rank goes when:
//
//   - its node closes (Node.Close tells every rank);
//   - its process dies: gin reports the lost rank (gin.ErrPeerLost); the
//     node's Comm runs with gin.FailPeer, so the other ranks stay
//     reachable, and requests pending towards the lost one fail at once
//     (docs/actors.md, A killed rank);
//   - its ring into this rank held a corrupt frame.
//
// # Implementation
//
// One receive loop per node (the mailbox's) decodes frames in order and
// delivers them: user messages with RootContext.Send semantics (envelope
// with sender and headers), system messages to the local process. It
// never waits for credit: answers it causes (DeadLetterResponse,
// Terminated) are sent with TrySend, and handed to the node's slow-path
// goroutine when the ring is full. Encoding uses pooled buffers and
// encoders; a send allocates nothing of its own for registered types.
// Actors of this package's Props run on Dispatcher, a pool of goroutines
// that keep their grown stacks.
package actor

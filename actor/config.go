package actor

import (
	"github.com/rdmactor/rdmactor/gin"
	"github.com/rdmactor/rdmactor/mailbox"

	protoactor "github.com/asynkron/protoactor-go/actor"
)

// Config configures a Node. Every rank passes an equal Config.
type Config struct {
	// Mailbox sizes the rings and paces the receive loop (see package
	// mailbox: RingBytes, default 1 MiB per pair; SendTimeout, default
	// 10 s; SignalBase; BatchGap; Linger). Waits themselves idle as
	// Gin.Idle says.
	Mailbox mailbox.Config
	// Gin configures the Comm that Init and StartLocal create; Start
	// takes a Comm and ignores it. Signals is raised to what the mailbox
	// needs (mailbox.SignalsNeeded), and PeerFailure is gin.FailPeer: a
	// lost rank terminates its own actors only, and the others go on.
	Gin gin.Config
	// System holds options for the node's protoactor-go actor system
	// (logger, dead-letter throttling, metrics). By default protoactor-go
	// logs warnings and errors only (debug with RDMACTOR_DEBUG set).
	System []protoactor.ConfigOption
	// SlowQueue is the number of deliveries that may wait for the
	// node's slow-path goroutine (messages and system messages for local
	// PIDs that do not exist, whose dead-letter answers may have to wait
	// for ring credit); default 4096. Beyond it such messages are dropped
	// with a log line.
	SlowQueue int
	// MaxMessage is the largest encoded message, in bytes, that crosses
	// ranks; default DefaultMaxMessage. A message larger than a mailbox
	// frame (Mailbox.MaxFrame) crosses in pieces, decoded as they arrive
	// (docs/actors.md, Large messages); one over MaxMessage is
	// ErrMessageTooLarge at the sender, found before anything is sent (a
	// counting pass that stops at the limit, or the size generated and
	// protobuf codecs know). Every rank passes the same value: a receiver
	// drops pieces of a larger message.
	MaxMessage int
	// MaxInbound bounds, in bytes, the messages from other ranks that this
	// rank has decoded and handed to actors but that those actors have
	// not yet processed (their Receive has not returned); a message counts
	// its frame body bytes (the whole message for one that came in
	// pieces). Default DefaultMaxInbound; negative: no limit. Past it,
	// a message for an actor that still has such messages waiting is not
	// taken: the receive loop leaves it in its ring and reads nothing more
	// from that sending rank until the actor has caught up or the total
	// has fallen to half the limit. The sender's Sends then wait for
	// credit and, after Mailbox.SendTimeout, fail with mailbox.ErrRingFull;
	// nothing is dropped or reordered. An actor with nothing waiting still
	// gets its next message, so the total can pass the limit by one
	// message per actor. Only actors of this package's Props
	// (PropsFromProducer, PropsFromFunc) are counted: the count needs to
	// see their Receive return. See docs/actors.md, Inbound memory.
	MaxInbound int
}

// DefaultMaxInbound is Config.MaxInbound's default: 64 MiB.
const DefaultMaxInbound = 64 << 20

// DefaultMaxMessage is Config.MaxMessage's default: 64 MiB.
const DefaultMaxMessage = 64 << 20

func (c *Config) setDefaults() {
	if c.SlowQueue <= 0 {
		c.SlowQueue = 4096
	}
	if c.MaxMessage <= 0 {
		c.MaxMessage = DefaultMaxMessage
	}
	if c.MaxInbound == 0 {
		c.MaxInbound = DefaultMaxInbound
	}
}

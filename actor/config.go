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
	// 10 s; SignalBase; Idle).
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
	// frame (Mailbox.MaxFrame) crosses in pieces that the receiver puts
	// together; one over MaxMessage is ErrMessageTooLarge at the sender,
	// found while encoding (the encoding stops at the limit) or before it
	// for generated and protobuf codecs, which know their size. Every rank
	// passes the same value: a receiver drops pieces of a larger message.
	MaxMessage int
}

// DefaultMaxMessage is Config.MaxMessage's default: 64 MiB.
const DefaultMaxMessage = 64 << 20

func (c *Config) setDefaults() {
	if c.SlowQueue <= 0 {
		c.SlowQueue = 4096
	}
	if c.MaxMessage <= 0 {
		c.MaxMessage = DefaultMaxMessage
	}
}

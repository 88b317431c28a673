package actor

import (
	"time"

	protoactor "github.com/asynkron/protoactor-go/actor"
)

// What a program needs from protoactor-go's actor package, re-exported so
// that it imports this one package (both are named actor). The types are
// aliases: values move freely between this package and protoactor-go's,
// and everything not listed here is reached through protoactor-go itself.
type (
	// PID names an actor: Address (the rank, see Node.Address) and Id.
	PID = protoactor.PID
	// Props says how to create an actor (producer, mailbox, supervisor).
	Props = protoactor.Props
	// PropsOption modifies Props.
	PropsOption = protoactor.PropsOption
	// Context is what an actor's Receive gets: the message, its sender,
	// and Send, Request, Respond, Watch, Spawn, Stop.
	Context = protoactor.Context
	// Actor is anything with Receive(Context).
	Actor = protoactor.Actor
	// Producer creates an Actor.
	Producer = protoactor.Producer
	// ReceiveFunc is a function used as an Actor.
	ReceiveFunc = protoactor.ReceiveFunc
	// ActorSystem is a node's protoactor-go actor system.
	ActorSystem = protoactor.ActorSystem
	// RootContext sends and spawns from outside any actor.
	RootContext = protoactor.RootContext
	// Future is the pending answer of RootContext.RequestFuture.
	Future = protoactor.Future
	// MessageEnvelope carries a message with its sender and headers.
	MessageEnvelope = protoactor.MessageEnvelope

	// Started is the first message an actor receives.
	Started = protoactor.Started
	// Stopping is received when the actor begins to stop.
	Stopping = protoactor.Stopping
	// Stopped is the last message an actor receives.
	Stopped = protoactor.Stopped
	// Restarting is received before a supervisor restarts the actor.
	Restarting = protoactor.Restarting
	// ReceiveTimeout is received after Context.SetReceiveTimeout elapses.
	ReceiveTimeout = protoactor.ReceiveTimeout
	// PoisonPill stops the actor that receives it after the messages
	// before it; it crosses ranks.
	PoisonPill = protoactor.PoisonPill
	// Terminated tells a watcher that the watched actor Who stopped (Why:
	// TerminatedStopped), was not found (TerminatedNotFound) or is on a
	// rank that left or was lost (TerminatedAddressTerminated).
	Terminated = protoactor.Terminated
	// TerminatedReason is Terminated.Why.
	TerminatedReason = protoactor.TerminatedReason
	// DeadLetterResponse answers a request whose target does not exist;
	// a Future then fails with ErrDeadLetter. It crosses ranks.
	DeadLetterResponse = protoactor.DeadLetterResponse
	// DeadLetterEvent is published on the EventStream for a message to a
	// PID that does not exist (here: also one that could not cross ranks;
	// UndeliverableEvent says why).
	DeadLetterEvent = protoactor.DeadLetterEvent
)

// Reasons of Terminated.
const (
	TerminatedStopped           = protoactor.TerminatedReason_Stopped
	TerminatedAddressTerminated = protoactor.TerminatedReason_AddressTerminated
	TerminatedNotFound          = protoactor.TerminatedReason_NotFound
)

// Errors of a Future (protoactor-go's).
var (
	// ErrTimeout: no answer within the request's timeout.
	ErrTimeout = protoactor.ErrTimeout
	// ErrDeadLetter: the target does not exist, or the request could not
	// be delivered (see UndeliverableEvent for why).
	ErrDeadLetter = protoactor.ErrDeadLetter
)

// PropsFromProducer returns Props that create actors with producer
// (protoactor-go's PropsFromProducer), running on Dispatcher unless opts
// name another (protoactor.WithDispatcher). Messages from other ranks to
// these actors count against Config.MaxInbound until their Receive returns.
func PropsFromProducer(producer Producer, opts ...PropsOption) *Props {
	return protoactor.PropsFromProducer(producer, withDispatcher(opts)...)
}

// PropsFromFunc returns Props whose actor is the function f
// (protoactor-go's PropsFromFunc), running on Dispatcher unless opts name
// another. Messages from other ranks to these actors count against
// Config.MaxInbound until f returns.
func PropsFromFunc(f ReceiveFunc, opts ...PropsOption) *Props {
	return protoactor.PropsFromFunc(f, withDispatcher(opts)...)
}

// withDispatcher puts Dispatcher and the inbound count's middleware first,
// so that an option of the caller's overrides the dispatcher, and the
// middleware is outermost: it sees every message the actor takes, even
// one a middleware of the caller's swallows.
func withDispatcher(opts []PropsOption) []PropsOption {
	return append([]PropsOption{
		protoactor.WithDispatcher(Dispatcher),
		protoactor.WithReceiverMiddleware(inboundMiddleware),
	}, opts...)
}

// NewPID returns the PID of actor id at address (protoactor-go's NewPID);
// Node.PID builds one from a rank.
func NewPID(address, id string) *PID { return protoactor.NewPID(address, id) }

// NewFuture returns a Future on system that times out after d
// (protoactor-go's NewFuture).
func NewFuture(system *ActorSystem, d time.Duration) *Future { return protoactor.NewFuture(system, d) }

package actor

import (
	"errors"
	"fmt"
	"time"

	protoactor "github.com/asynkron/protoactor-go/actor"

	"github.com/rdmactor/rdmactor/gin"
	"github.com/rdmactor/rdmactor/mailbox"
)

// remoteProcess is the protoactor-go Process of every PID on one other
// rank: a thin handle (PIDs cache it) that encodes each message and puts
// it through the node's mailbox.
type remoteProcess struct {
	n    *Node
	rank int
}

var _ protoactor.Process = (*remoteProcess)(nil)

// expectAnswer is how long the receive loop stays awake for the answer to
// a request (mailbox.Mailbox.Expect): a few times a blocked rank's wake-up
// on small VMs, so the answer to a peer that was asleep still finds this
// rank awake.
const expectAnswer = 2 * time.Millisecond

// SendUserMessage sends message (perhaps in a MessageEnvelope with sender
// and headers) to pid. It waits for ring credit up to the mailbox's
// SendTimeout; a failure becomes an UndeliverableEvent and a
// DeadLetterEvent (see UndeliverableEvent).
func (p *remoteProcess) SendUserMessage(pid *PID, message any) {
	if _, ok := message.(*DeadLetterResponse); ok {
		// protoactor-go's dead-letter subscriber answers on the goroutine
		// that found the dead letter, which may be the receive loop.
		p.n.sendReply(p.rank, kindUser, pid, message)
		return
	}
	if err := p.n.sendUser(p.rank, pid, message); err != nil {
		_, msg, sender := protoactor.UnwrapEnvelope(message)
		p.n.undeliverable(&UndeliverableEvent{Target: pid, Sender: sender, Message: msg, Err: err}, true)
	}
}

// SendSystemMessage sends Watch, Unwatch, Terminated and Stop to pid, and
// keeps the watches this rank holds on the target rank, so that watchers
// get Terminated (TerminatedAddressTerminated) if that rank goes (as
// protoactor-go's remote endpoint watcher does).
func (p *remoteProcess) SendSystemMessage(pid *PID, message any) {
	n := p.n
	switch m := message.(type) {
	case *protoactor.Watch:
		if m.Watcher == nil {
			return
		}
		if err := n.watches.add(p.rank, m.Watcher.Id, pid.Id, n.gone[p.rank].Load()); err != nil {
			// The rank is gone already: answer at once, as protoactor-go's
			// endpoint watcher does for a terminated endpoint.
			n.terminatedLocal(m.Watcher.Id, pid)
			return
		}
	case *protoactor.Unwatch:
		if m.Watcher != nil {
			n.watches.remove(p.rank, m.Watcher.Id, pid.Id)
		}
	case *protoactor.Terminated:
		// Terminated answers a Watch; it may come from the receive loop
		// (a Watch of a missing actor), which must not wait.
		n.sendReply(p.rank, kindSystem, pid, message)
		return
	case *protoactor.Stop:
	default:
		n.undeliverable(&UndeliverableEvent{Target: pid, Message: message,
			Err: fmt.Errorf("%T: %w", message, ErrNotRemotable)}, false)
		return
	}
	if err := n.send(p.rank, kindSystem, pid, nil, nil, message); err != nil {
		n.undeliverable(&UndeliverableEvent{Target: pid, Message: message, Err: err}, false)
	}
}

// Stop sends Stop to pid.
func (p *remoteProcess) Stop(pid *PID) { p.SendSystemMessage(pid, &protoactor.Stop{}) }

// sendUser encodes and sends a user message (or envelope) to target on
// rank.
func (n *Node) sendUser(rank int, target *PID, message any) error {
	if env, ok := message.(*MessageEnvelope); ok {
		return n.send(rank, kindUser, target, env.Sender, env.Header, env.Message)
	}
	return n.send(rank, kindUser, target, nil, nil, message)
}

// send encodes a frame body straight into the mailbox's staging ring and
// puts it, waiting for credit up to the mailbox's SendTimeout.
func (n *Node) send(rank int, kind byte, target, sender *PID, header map[string]string, msg any) error {
	return n.sendWith(true, rank, kind, target, sender, header, msg)
}

// sendReply sends an answer (DeadLetterResponse, Terminated) without
// waiting: when the ring is full it is handed to the slow-path goroutine,
// so that a receive loop that answers never waits for a peer that may be
// waiting for it.
func (n *Node) sendReply(rank int, kind byte, target *PID, msg any) {
	err := n.sendWith(false, rank, kind, target, nil, nil, msg)
	if errors.Is(err, mailbox.ErrRingFull) {
		n.slow(func() {
			if err := n.send(rank, kind, target, nil, nil, msg); err != nil {
				n.undeliverable(&UndeliverableEvent{Target: target, Message: msg, Err: err}, false)
			}
		})
		return
	}
	if err != nil {
		n.undeliverable(&UndeliverableEvent{Target: target, Message: msg, Err: err}, false)
	}
}

// sendWith encodes and sends one message; wait says whether a full ring
// is waited for (Send) or an error at once (TrySend).
func (n *Node) sendWith(wait bool, rank int, kind byte, target, sender *PID, header map[string]string, msg any) error {
	if g := n.gone[rank].Load(); g != nil {
		return *g
	}
	e := getEncoder()
	e.limit = n.cfg.MaxMessage
	e.single = n.mb.Config().MaxFrame - mailbox.HeaderBytes
	e.set(target, sender, header, msg)
	var err error
	if wait {
		_, err = n.mb.SendAppend(rank, mailboxKind(kind), e)
	} else {
		_, err = n.mb.TrySendAppend(rank, mailboxKind(kind), e)
	}
	if errors.Is(err, errLarge) {
		err = n.sendLarge(wait, rank, kind, e)
	}
	putEncoder(e)
	if sender != nil && err == nil {
		n.mb.Expect(expectAnswer) // a request: its answer should find the receive loop awake
		if isFuture(sender) {
			n.pending.add(rank, sender.Id, n.size, n.system.ProcessRegistry)
		}
	}
	if err != nil && errors.Is(err, gin.ErrPeerLost) {
		n.commFailed(err)
	}
	return err
}

// undeliverable reports a message that could not cross: a throttled log
// line, an UndeliverableEvent, and with deadLetter a DeadLetterEvent,
// whose protoactor-go subscriber answers the sender with
// DeadLetterResponse (so its Future fails at once). Callers on the receive
// loop pass deadLetter false or go through the slow path: that answer may
// cross ranks.
func (n *Node) undeliverable(ev *UndeliverableEvent, deadLetter bool) {
	if ev.TypeName == "" && ev.Message != nil {
		ev.TypeName, _ = RegisteredName(ev.Message)
		if ev.TypeName == "" {
			ev.TypeName = fmt.Sprintf("%T", ev.Message)
		}
	}
	n.logs.warn(n.system, "message not delivered", "target", ev.Target, "sender", ev.Sender, "type", ev.TypeName, "err", ev.Err)
	n.system.EventStream.Publish(ev)
	if deadLetter {
		n.system.EventStream.Publish(&DeadLetterEvent{PID: ev.Target, Message: ev.Message, Sender: ev.Sender})
	}
}

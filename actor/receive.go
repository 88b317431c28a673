package actor

import (
	"bytes"
	"fmt"

	protoactor "github.com/asynkron/protoactor-go/actor"

	"github.com/rdmactor/rdmactor/mailbox"
)

// maxCachedPIDs bounds the receive loop's PID caches (futures make a new
// sender PID per request); a full cache is cleared.
const maxCachedPIDs = 1 << 14

func mailboxKind(k byte) mailbox.Kind { return mailbox.Kind(k) }

// frame is the mailbox handler: it runs on the receive loop, one frame at
// a time in order per sender, and must never wait for ring credit (a peer
// could be waiting for this rank's credit in turn): deliveries that may
// send to other ranks go through the slow path.
func (n *Node) frame(from int, kind mailbox.Kind, body []byte) {
	switch kind {
	case kindUser, kindSystem:
		n.recvMessage(from, kind, body)
	case kindNotice:
		n.recvNotice(from, body)
	case kindChunk:
		n.recvChunk(from, body)
	case kindBye:
		n.forgetChunks(from)
		n.rankGone(from, fmt.Errorf("rank %d closed its node: %w", from, ErrRankGone))
	default:
		n.logs.warn(n.system, "frame of unknown kind dropped", "from", from, "kind", kind, "bytes", len(body))
	}
}

// recvMessage decodes a user or system message and delivers it. It
// reports true when it held the pair instead (Config.MaxInbound): the
// frame stays in the ring and comes again after a Resume, so nothing was
// done for it.
func (n *Node) recvMessage(from int, kind mailbox.Kind, body []byte) (held bool) {
	w, err := parseMessage(body)
	if err != nil {
		n.dropIncoming(from, &w, nil, nil, fmt.Errorf("%v: %w", err, ErrUndecodable))
		return false
	}
	in, held := n.accept(from, kind, &w, int64(len(body)))
	if held {
		return true
	}
	msg, err := decodePayload(&w, n.dec, &n.rd, &n.lastType)
	if err == nil && kind == kindUser {
		n.keepWarm(from, body)
	}
	n.finish(&in, msg, err)
	return false
}

// incoming is a message whose prelude was read: where it goes, from whom,
// and the account it counts on (Config.MaxInbound).
type incoming struct {
	from           int
	kind           mailbox.Kind
	w              wireMsg
	target, sender *PID
	counted        *inActor
	size           int64 // body bytes, as MaxInbound counts them
}

// accept resolves the target and sender of the message w of size bytes
// and admits it (Config.MaxInbound). It reports true when it held the
// pair instead.
func (n *Node) accept(from int, kind mailbox.Kind, w *wireMsg, size int64) (in incoming, held bool) {
	in = incoming{from: from, kind: kind, w: *w, size: size}
	in.target = n.localPID(w.target)
	switch {
	case kind != kindUser:
	case isFutureID(w.target): // an answer: futures are not counted (MaxInbound)
		n.pending.done(from, in.target.Id)
	default:
		if in.counted = n.in.lookup(in.target.Id); in.counted != nil && !in.counted.admit(from, size) {
			n.mb.Hold(from)
			return in, true
		}
	}
	if w.flags&fSender != 0 {
		in.sender = n.remotePID(w.sender)
	}
	return in, false
}

// own copies what in still reads of the frame it came in (the type name,
// for reports), for a message whose frame goes before it is delivered.
func (in *incoming) own() {
	in.w = wireMsg{flags: in.w.flags, header: in.w.header, typeName: bytes.Clone(in.w.typeName)}
}

// finish delivers msg, decoded from in's message, or reports err.
func (n *Node) finish(in *incoming, msg any, err error) {
	if err != nil {
		n.dropIncoming(in.from, &in.w, in.target, in.sender, err)
		return
	}
	if in.kind == kindSystem {
		n.recvSystem(in.from, in.target, msg)
		return
	}
	if in.counted != nil {
		// Always an envelope: its pointer is how the actor's middleware
		// tells this message from the actor's local ones.
		env := &MessageEnvelope{Header: in.w.header, Message: msg, Sender: in.sender}
		in.counted.push(env, in.size)
		msg = env
	} else if in.sender != nil || in.w.header != nil {
		msg = &MessageEnvelope{Header: in.w.header, Message: msg, Sender: in.sender}
	}
	// target is cached, and so is the process it resolves to (with
	// protoactor-go's check that the actor is alive). A missing actor makes
	// a dead letter here, and protoactor-go answers its sender with
	// DeadLetterResponse, which remoteProcess sends without waiting.
	n.system.Root.Send(in.target, msg)
}

// recvSystem delivers a system message from another rank.
func (n *Node) recvSystem(from int, target *PID, msg any) {
	proc, ok := n.system.ProcessRegistry.GetLocal(target.Id)
	switch m := msg.(type) {
	case *protoactor.Terminated:
		if r, isRank := RankOf(m.Who); isRank && m.Who != nil {
			n.watches.remove(r, target.Id, m.Who.Id)
		}
		if ok {
			proc.SendSystemMessage(target, m)
		}
	case *protoactor.Stop:
		if ok {
			proc.Stop(target)
		}
	case *protoactor.Watch, *protoactor.Unwatch:
		if ok {
			proc.SendSystemMessage(target, m)
		} else if _, isWatch := m.(*protoactor.Watch); isWatch {
			// protoactor-go answers a Watch of a missing actor with
			// Terminated (TerminatedNotFound) to the watcher, which
			// remoteProcess sends without waiting.
			n.system.DeadLetter.SendSystemMessage(target, m)
		}
	default:
		n.logs.warn(n.system, "system message that does not cross ranks dropped", "from", from, "type", fmt.Sprintf("%T", msg))
	}
}

// dropIncoming reports a message from rank from that could not be decoded:
// an UndeliverableEvent here, and a notice to the sending rank, which
// reports it there and answers the sender with DeadLetterResponse.
func (n *Node) dropIncoming(from int, w *wireMsg, target, sender *PID, err error) {
	typeName := string(w.typeName)
	n.undeliverable(&UndeliverableEvent{Target: target, Sender: sender, TypeName: typeName, Err: err}, false)
	if target == nil {
		target = &PID{Address: n.addrs[n.rank]}
	}
	e := getEncoder()
	e.notice(target, sender, typeName, err.Error())
	// Never wait on the receive loop: a full ring loses only the notice.
	if serr := n.mb.TrySend(from, kindNotice, e.buf); serr != nil {
		n.logs.warn(n.system, "notice to the sending rank not sent", "rank", from, "err", serr)
	}
	putEncoder(e)
}

// recvNotice reports what another rank could not deliver.
func (n *Node) recvNotice(from int, body []byte) {
	w, err := parseNotice(body)
	if err != nil {
		n.logs.warn(n.system, "malformed notice dropped", "from", from, "err", err)
		return
	}
	ev := &UndeliverableEvent{
		Target:   &PID{Address: string(w.target.addr), Id: string(w.target.id), RequestId: w.target.req},
		TypeName: string(w.typeName),
		Err:      &RemoteError{Rank: from, Reason: string(w.reason)},
	}
	if w.hasSender {
		ev.Sender = &PID{Address: string(w.sender.addr), Id: string(w.sender.id), RequestId: w.sender.req}
	}
	n.slow(func() { n.undeliverable(ev, true) })
}

// localPID returns the PID of local actor id, cached (the last one
// first: a stream to one actor then costs a comparison).
func (n *Node) localPID(id []byte) *PID {
	if n.lastTarget != nil && n.lastTarget.Id == string(id) {
		return n.lastTarget
	}
	if isFutureID(id) { // answered once: a cache entry would never be hit
		return NewPID(n.addrs[n.rank], string(id))
	}
	if p, ok := n.targets[string(id)]; ok {
		n.lastTarget = p
		return p
	}
	if len(n.targets) >= maxCachedPIDs {
		clear(n.targets)
	}
	p := NewPID(n.addrs[n.rank], string(id))
	n.targets[p.Id] = p
	n.lastTarget = p
	return p
}

// remotePID returns the PID w names, cached unless it has a RequestId or
// is a future's.
func (n *Node) remotePID(w wirePID) *PID {
	if w.req != 0 || isFutureID(w.id) { // one message each: not worth a cache entry
		return &PID{Address: string(w.addr), Id: string(w.id), RequestId: w.req}
	}
	byID := n.senders[string(w.addr)]
	if p, ok := byID[string(w.id)]; ok {
		return p
	}
	if byID == nil || len(byID) >= maxCachedPIDs {
		byID = map[string]*PID{}
		if len(n.senders) >= 1024 {
			clear(n.senders)
		}
		n.senders[string(w.addr)] = byID
	}
	p := NewPID(string(w.addr), string(w.id))
	byID[p.Id] = p
	return p
}

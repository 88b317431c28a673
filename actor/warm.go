package actor

// warmMax bounds the frame bodies the receive loop keeps a copy of to warm
// with: the small messages of request/response traffic, whose latency a
// cold path dominates.
const warmMax = 256

// keepWarm copies body, a user message's frame body from rank from that
// decoded, for warm. Receive loop only.
func (n *Node) keepWarm(from int, body []byte) {
	if len(body) <= warmMax {
		n.warmBody, n.warmFrom = append(n.warmBody[:0], body...), from
	}
}

// warm is the mailbox's Handler.Warm: while the receive loop waits awake
// for frames (mailbox.Config.Linger, WarmEvery), it decodes the copy of
// the last small user message again, hands the value to an actor of its
// own that drops it (through the mailbox and dispatcher an actor's
// messages take), and encodes it into the free staging room of the pair
// with the rank it came from (mailbox.Mailbox.WarmSend: nothing is sent),
// where an answer to it would go; nothing reaches the user's actors or
// another rank. So the decoder, the dispatch, the send path up to the put
// and the message types' tables stay in the processor's caches, which a
// shared host's other work evicts within a millisecond (docs/actors.md,
// Idle behaviour). The message's own msgpack methods, if it has any, run
// too, as for a message received.
func (n *Node) warm() {
	if len(n.warmBody) == 0 || n.closed.Load() {
		return
	}
	w, err := parseMessage(n.warmBody)
	if err != nil {
		return
	}
	msg, err := decodePayload(&w, n.dec, &n.rd, &n.lastType)
	if err != nil {
		return
	}
	if n.warmPID == nil {
		n.warmPID = n.system.Root.SpawnPrefix(PropsFromFunc(func(Context) {}), "$rdmactor-warm")
	}
	n.system.Root.Send(n.warmPID, msg)
	e := getEncoder()
	defer putEncoder(e)
	e.limit = warmMax * 4
	e.set(n.localPID(w.target), nil, nil, msg)
	if !n.mb.WarmSend(n.warmFrom, mailboxKind(kindUser), e) {
		_, _ = e.AppendBody(nil) // the pair is busy: the encoder at least
	}
}

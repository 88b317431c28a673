package actor

import (
	"slices"
	"sync"
	"sync/atomic"

	protoactor "github.com/asynkron/protoactor-go/actor"
	"github.com/asynkron/protoactor-go/ctxext"
	"github.com/asynkron/protoactor-go/extensions"

	"github.com/rdmactor/rdmactor/mailbox"
)

// inbound counts the bytes of messages from other ranks that the receive
// loop handed to actors of this package's Props and that those actors have
// not processed yet, and holds back (mailbox.Mailbox.Hold) the pairs whose
// next message would take the count past Config.MaxInbound while its
// actor is still busy. Without it a stalled actor would let the loop fill
// protoactor-go's unbounded actor mailbox, and the rank's memory, at the
// senders' speed: the loop returns ring credit as soon as it decodes.
type inbound struct {
	mb    *mailbox.Mailbox
	limit int64 // Config.MaxInbound; <= 0: no limit, nothing is counted
	low   int64 // when bytes falls to it, every held pair is resumed
	bytes atomic.Int64
	// held marks, by sender rank, pairs held until bytes falls to low or
	// the actor they wait for has nothing waiting.
	held []atomic.Bool
	// actors holds the counted actors by Id, for the receive loop.
	actors sync.Map // string -> *inActor
}

func (in *inbound) init(mb *mailbox.Mailbox, limit, size int) {
	in.mb, in.limit, in.low = mb, int64(limit), int64(limit)/2
	in.held = make([]atomic.Bool, size)
}

// inActor is one counted actor's account: the messages the receive loop
// posted to it, in the order it posted them (which is the order the actor
// takes them in), and their bytes. It is the actor's protoactor-go context
// extension too, so that its middleware finds it without a lookup.
type inActor struct {
	in    *inbound
	id    string
	owner protoactor.ReceiverContext // the actor's context: a restart keeps it

	mu    sync.Mutex
	q     []inMsg // posted and not processed; q[head:] is live
	head  int
	bytes int64 // of q[head:]
	// waiters are the sender ranks held until this actor has nothing
	// waiting.
	waiters []int
	dead    bool // stopped: nothing more is counted
}

type inMsg struct {
	env  *MessageEnvelope // what the loop posted: the actor gets this pointer
	size int64
}

// inActorExt is the context-extension id of inActor; inboundExt the
// actor-system extension id of the node's inbound.
var (
	inActorExt = ctxext.NextContextExtensionID()
	inboundExt = extensions.NextExtensionID()
)

// ExtensionID makes inActor a protoactor-go context extension. A nil
// *inActor marks an actor that is not counted.
func (a *inActor) ExtensionID() ctxext.ContextExtensionID { return inActorExt }

// ExtensionID makes inbound an actor-system extension.
func (in *inbound) ExtensionID() extensions.ExtensionID { return inboundExt }

// lookup returns the account of local actor id, or nil if it is not
// counted (not of this package's Props, not started yet, no limit).
func (in *inbound) lookup(id string) *inActor {
	if in.limit <= 0 {
		return nil
	}
	if a, ok := in.actors.Load(id); ok {
		return a.(*inActor)
	}
	return nil
}

// admit reports whether the receive loop may post a message of size bytes
// from rank from to a now. When it may not, from is recorded as held, to
// be resumed when a has nothing waiting or the total falls to low; the
// caller then holds the pair. Receive loop only.
func (a *inActor) admit(from int, size int64) bool {
	in := a.in
	if in.bytes.Load()+size <= in.limit {
		return true
	}
	a.mu.Lock()
	defer a.mu.Unlock()
	if a.dead || a.bytes == 0 {
		return true // an actor with nothing waiting always gets one more
	}
	// Marked before the total is read again: a resume that counted the
	// total down before this store is seen by that read.
	in.held[from].Store(true)
	if in.bytes.Load()+size <= in.limit {
		in.held[from].Store(false)
		return true
	}
	if !slices.Contains(a.waiters, from) {
		a.waiters = append(a.waiters, from)
	}
	return false
}

// push counts env, of size bytes, as posted to a; the caller posts it
// next. Receive loop only.
func (a *inActor) push(env *MessageEnvelope, size int64) {
	a.mu.Lock()
	defer a.mu.Unlock()
	if a.dead {
		return
	}
	if a.head > 0 && 2*a.head >= len(a.q) { // keep the queue's dead prefix from growing it
		n := copy(a.q, a.q[a.head:])
		clear(a.q[n:])
		a.q, a.head = a.q[:n], 0
	}
	a.q = append(a.q, inMsg{env: env, size: size})
	a.bytes += size
	a.in.bytes.Add(size)
}

// processed is called when a's Receive of env has returned (or panicked):
// if env is the oldest counted message, it no longer counts.
func (a *inActor) processed(env *MessageEnvelope) {
	a.mu.Lock()
	if a.head == len(a.q) || a.q[a.head].env != env {
		a.mu.Unlock()
		return // a local message, or one not counted
	}
	size := a.q[a.head].size
	a.q[a.head] = inMsg{}
	if a.head++; a.head == len(a.q) {
		a.q, a.head = a.q[:0], 0
	}
	a.bytes -= size
	var wake []int
	if a.bytes == 0 {
		wake, a.waiters = a.waiters, nil
	}
	after := a.in.bytes.Add(-size)
	a.mu.Unlock()
	a.in.resume(wake, after, size)
}

// release ends a's account when the actor stops: what it still had
// waiting never reaches its Receive (protoactor-go drops a stopped
// actor's mailbox), so it no longer counts.
func (a *inActor) release() {
	a.mu.Lock()
	a.dead = true
	size := a.bytes
	a.q, a.head, a.bytes = nil, 0, 0
	wake := a.waiters
	a.waiters = nil
	after := a.in.bytes.Add(-size)
	a.mu.Unlock()
	a.in.actors.CompareAndDelete(a.id, a)
	a.in.resume(wake, after, size)
}

// resume resumes the pairs in wake, and every held pair if the total just
// fell to low (by size, to after).
func (in *inbound) resume(wake []int, after, size int64) {
	for _, s := range wake {
		in.held[s].Store(false)
		in.mb.Resume(s)
	}
	if after <= in.low && after+size > in.low {
		for s := range in.held {
			if in.held[s].Swap(false) {
				in.mb.Resume(s)
			}
		}
	}
}

// inboundMiddleware is the receiver middleware of this package's Props:
// it registers the actor's account when it starts, counts a message as
// processed when its Receive returns, and ends the account when the actor
// stops.
func inboundMiddleware(next protoactor.ReceiverFunc) protoactor.ReceiverFunc {
	return func(c protoactor.ReceiverContext, env *MessageEnvelope) {
		switch env.Message.(type) {
		case *Started:
			startCounting(c)
		case *Stopped:
			if a, _ := c.Get(inActorExt).(*inActor); a != nil {
				defer a.release()
			}
		}
		// Started came first (system messages go before user messages),
		// and set the extension: Get is safe.
		if a, _ := c.Get(inActorExt).(*inActor); a != nil {
			defer a.processed(env)
		}
		next(c, env)
	}
}

// startCounting registers the account of the actor of c, once: Started
// comes again after a restart, which keeps the account. An account of the
// same Id that another context owns is that of a stopped actor whose
// Stopped has not run yet: it is replaced.
func startCounting(c protoactor.ReceiverContext) {
	var a *inActor
	if in, _ := c.ActorSystem().Extensions.Get(inboundExt).(*inbound); in != nil && in.limit > 0 {
		id := c.Self().Id
		if v, ok := in.actors.Load(id); ok && v.(*inActor).owner == c {
			a = v.(*inActor)
		} else {
			a = &inActor{in: in, id: id, owner: c}
			in.actors.Store(id, a)
		}
	}
	c.Set(a) // a nil *inActor: not counted
}

// InboundBytes is the number of bytes of messages from other ranks that
// this rank decoded and whose actors have not processed them yet, as
// Config.MaxInbound counts them (0 with no limit).
func (n *Node) InboundBytes() int64 { return n.in.bytes.Load() }

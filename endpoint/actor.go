package endpoint

import (
	"github.com/asynkron/protoactor-go/actor"
	"github.com/rdmactor/rdmactor/internal/idle"
	"github.com/rdmactor/rdmactor/transport/rdma"
)

// Messages of the endpoint actors. The hot path sends none: producers post
// lock-free; these are lifecycle, progress and fault.
type (
	// qpFault makes the endpoint actor fail with the QP's fault, so the
	// supervisor records it.
	qpFault struct{ err *rdma.QPError }
	// progressKick asks the actor to drive completions until nothing of
	// its endpoint is in flight (providers without inline completion).
	progressKick struct{}
	// spawnEndpoint asks the supervisor to start an endpoint actor.
	spawnEndpoint struct{ ep *Endpoint }
)

// endpointActor owns its endpoint's QP reference: it takes it when started
// and gives it back when stopped, and it is where QP faults surface.
type endpointActor struct {
	ep *Endpoint
}

func (a *endpointActor) Receive(c actor.Context) {
	switch msg := c.Message().(type) {
	case qpFault:
		// Fail: the supervisor's strategy records the fault and stops us.
		panic(msg.err)
	case progressKick:
		a.progress()
	case *actor.Stopped:
		a.ep.m.dropEndpoint(a.ep)
	}
}

// progress drives the QP until the endpoint has nothing in flight or the QP
// failed. It runs on the actor's goroutine: the endpoint's other messages
// (faults) wait, which is fine since a fault also ends the loop.
//
// On a Poller provider it only reports what others found, and lazily (it
// parks at once, Config.Idle's sleeps): the CQ is read by whoever waits (the
// producer waiting for SQ room, Flush, a gin wait, each reporting too) or
// else by the provider's own progress thread, and every Post reports what
// has completed. A spinning actor beside a streaming producer takes the core
// the receiver needs where cores are few, and one that also read the CQ
// contended with the producer's writes inside the provider (docs/ofi.md).
// The actor remains what reports completions nobody waits for and surfaces
// QP faults.
func (a *endpointActor) progress() {
	e := a.ep
	s := e.m.cfg.Idle
	if e.m.poller != nil {
		s.Spins, s.Yields, s.OSYields = 0, 0, 0
	}
	b := idle.New(s)
	for {
		for e.sq.inFlight() > 0 && e.qp.fault() == nil && !e.m.closed.Load() {
			if n, _ := e.qp.progress(); n > 0 {
				b.Reset()
				continue
			}
			b.Idle()
		}
		e.kicked.Store(false)
		// A doorbell between the last check and the store above found the
		// kick still set and sent none: look again.
		if e.sq.inFlight() == 0 || e.qp.fault() != nil || e.m.closed.Load() || !e.kicked.CompareAndSwap(false, true) {
			return
		}
	}
}

// supervisorActor is the parent of every endpoint actor of a Manager; its
// strategy (faultStrategy) decides what a failed endpoint becomes.
type supervisorActor struct{}

func (supervisorActor) Receive(c actor.Context) {
	if msg, ok := c.Message().(spawnEndpoint); ok {
		pid := c.Spawn(actor.PropsFromProducer(func() actor.Actor { return &endpointActor{ep: msg.ep} }))
		c.Respond(pid)
	}
}

// faultStrategy records an endpoint's failure and stops the endpoint: its
// QP is broken, and every later post on it returns the fault (no restart,
// since a restart could not repair the peer; reconnect is a new Comm).
type faultStrategy struct{ m *Manager }

func (s faultStrategy) HandleFailure(_ *actor.ActorSystem, sup actor.Supervisor, child *actor.PID, _ *actor.RestartStatistics, reason interface{}, _ interface{}) {
	s.m.recordFault(child, reason)
	sup.StopChildren(child)
}

package remote

import (
	"time"

	"github.com/asynkron/protoactor-go/actor"
	protoremote "github.com/asynkron/protoactor-go/remote"
)

// Close says this rank leaves, waits until the coordinator knows (rank 0:
// until the other ranks know), then shuts the control plane down. It
// returns nil within CloseLimit: a peer that does not answer in time (a
// rank gone and not yet detected, or one still receiving a large result
// of a collective) learns of the leave as a loss of the connection
// instead, and what was still on its way to it is cut off.
// While Bootstraps that Shrink made are open, the control plane stays up
// for them (this one's collectives fail with rdma.ErrClosed), and the last
// of their Closes leaves.
func (b *remoteBootstrap) Close() error {
	b.closeOnce.Do(func() {
		b.Leave()
		b.mu.Lock()
		b.released = true
		b.mu.Unlock()
		b.closeErr = b.fam.Release()
	})
	return b.closeErr
}

// close leaves the job and shuts the control plane down: once this rank's
// Bootstraps, the shrunk ones included, are all closed.
func (b *remoteBootstrap) close() error {
	// The waits below end at one deadline, whatever the sends before them
	// took (on a starved host, creating a connection can take long).
	d := leaveWait
	if b.cfg.Rank == 0 {
		d = drainWait
	}
	wait := time.NewTimer(d)
	defer wait.Stop()
	at := b.Leave()
	b.mu.Lock()
	b.closing = true
	b.mu.Unlock()
	bye := b.out.seal(kindLeaving, &leaving{Rank: b.cfg.Rank, Seq: at})
	switch {
	case b.cfg.Rank == 0:
		b.system.Root.Send(b.coordPID, bye)
		select {
		case <-b.coord.drained:
		case <-wait.C:
		}
	case b.rank0Gone.fired():
		// The ranks this one watches since rank 0 went learn it leaves.
		if acked := b.leavePeers(at); acked != nil {
			select {
			case <-acked:
			case <-wait.C:
			}
		}
	default:
		// Also when rank 0 said it leaves: the answer proves the coordinator
		// has this rank's earlier messages (the acknowledgment of that) too.
		b.system.Root.Send(b.coordPID, bye)
		select {
		case <-b.leaveAcked.c:
		case <-b.rank0Gone.c:
		case <-wait.C:
		}
	}
	b.shutdown()
	return nil
}

// shutdown stops this rank's actors, closes its connections and stops the
// remote's server.
//
// It does not use protoactor-go's graceful Remote.Shutdown(true): that path
// races with streams that end meanwhile (it can send on a closed channel and
// panic). Instead it publishes remote.EndpointTerminatedEvent for every peer,
// the event protoactor-go publishes itself when a connection breaks, which
// stops the endpoint writers and closes the outgoing connections, then stops
// the gRPC server, which closes the incoming ones.
func (b *remoteBootstrap) shutdown() {
	if b.system == nil {
		return
	}
	if b.sub != nil {
		b.system.EventStream.Unsubscribe(b.sub)
	}
	b.stopLocal()
	if b.remote != nil {
		self := b.system.Address()
		for _, a := range append(b.Addrs(), b.cfg.Addr) {
			if a != "" && a != self {
				b.system.EventStream.Publish(&protoremote.EndpointTerminatedEvent{Address: a})
			}
		}
		b.remote.Shutdown(false)
	}
	b.system.Shutdown()
}

// stopLocal stops this rank's actors and waits for them up to stopWait:
// the coordinator and rank actor never block, so they stop at once unless
// the host is starved; then shutdown goes on, and they stop with the system.
func (b *remoteBootstrap) stopLocal() {
	done := make(chan struct{})
	fs := make([]*actor.Future, len(b.local))
	for i, pid := range b.local {
		fs[i] = b.system.Root.StopFuture(pid)
	}
	go func() {
		for _, f := range fs {
			_ = f.Wait()
		}
		close(done)
	}()
	select {
	case <-done:
	case <-time.After(stopWait):
	}
}

package remote

import (
	"github.com/asynkron/protoactor-go/actor"

	"github.com/rdmactor/rdmactor/internal/bootstrap"
	"github.com/rdmactor/rdmactor/transport/rdma"
)

// rankActor is every rank's actor: it receives the coordinator's answers,
// results and notices and updates the rank's state.
type rankActor struct{ b *remoteBootstrap }

// Receive handles control messages and endpointDown.
func (a *rankActor) Receive(ctx actor.Context) {
	b := a.b
	if m, ok := ctx.Message().(*endpointDown); ok {
		if b.cfg.Rank != 0 && m.addr == b.cfg.Addr {
			b.rank0Down()
		} else {
			b.peerDown(m.addr)
		}
		return
	}
	k, v, ok := b.in.receive(ctx, "bootstrap rank")
	if !ok {
		return
	}
	switch k {
	case kindJoinAck:
		b.joined.fire()
	case kindWelcome:
		b.mu.Lock()
		b.addrs = v.(*welcome).Addrs
		b.mu.Unlock()
		b.welcomed.fire()
	case kindGathered:
		g := v.(*gathered)
		b.Deliver(g.Seq, g.Data)
	case kindLost:
		l := v.(*lost)
		b.noteGone(l.Rank)
		b.Lose(&rdma.PeerLostError{Rank: l.Rank, Reason: l.Reason})
		b.fam.Lose(l.Rank, l.Reason)
	case kindLeft:
		l := v.(*leaving)
		if l.Rank == 0 {
			b.mu.Lock()
			b.rank0Left = true
			b.mu.Unlock()
			ctx.Send(b.coordPID, b.out.seal(kindLeftAck, &ack{Rank: b.cfg.Rank}))
		}
		b.noteGone(l.Rank)
		b.NoteLeft(l.Rank, l.Seq)
	case kindLeaveAck:
		b.leaveAcked.fire()
	case kindAgreed:
		b.fam.Agreed(v.(*bootstrap.Agreed))
	case kindGroupGathered:
		g := v.(*groupGathered)
		b.fam.Deliver(g.Group, g.Seq, g.Data)
	case kindGroupLeft:
		l := v.(*groupLeaving)
		b.fam.NoteLeft(l.Group, l.Rank, l.Seq)
	case kindPeerWatch:
		// Nothing to do: the sender watches this rank through the
		// connection its message opened.
	case kindPeerLeaving:
		l := v.(*leaving)
		b.peerLeaving(l.Rank)
		b.noteGone(l.Rank)
		b.NoteLeft(l.Rank, l.Seq)
		if a := b.addrOf(l.Rank); a != "" {
			ctx.Send(actor.NewPID(a, rankActorName), b.out.seal(kindPeerLeaveAck, &ack{Rank: b.cfg.Rank}))
		}
	case kindPeerLeaveAck:
		b.peerAcked(v.(*ack).Rank)
	}
}

package remote

import (
	"github.com/asynkron/protoactor-go/actor"
	"google.golang.org/protobuf/types/known/wrapperspb"

	"github.com/rdmactor/rdmactor/transport/rdma"
)

// Once rank 0 is gone, its coordinator no longer reports the losses of
// other ranks, which it learnt from its connections to them. So each rank
// other than 0 then opens a connection to every rank still in the job
// (kindPeerWatch) and reports the loss of any of them itself, as
// protoactor-go's remote.EndpointTerminatedEvent tells it; a rank that
// Closes says so to the ranks it watches first (kindPeerLeaving), waiting
// for their answers up to leaveWait. N-2 connections per rank, and only
// after rank 0 went.

// peerWatch is what a rank knows of the ranks it watches itself. Guarded
// by remoteBootstrap.mu.
type peerWatch struct {
	left  map[int]bool // by watched rank: said it leaves
	await map[int]bool // ranks whose answer to this rank's kindPeerLeaving is awaited
	acked signal       // fired once await is empty
}

// noteGone records that the coordinator reported rank lost or left: it is
// not watched.
func (b *remoteBootstrap) noteGone(rank int) {
	b.mu.Lock()
	b.gone[rank] = true
	b.mu.Unlock()
}

// addrOf returns rank's control address, or "" if unknown.
func (b *remoteBootstrap) addrOf(rank int) string {
	b.mu.Lock()
	defer b.mu.Unlock()
	if rank < 0 || rank >= len(b.addrs) {
		return ""
	}
	return b.addrs[rank]
}

// watchPeers starts watching every rank other than 0 and this one that
// has neither left nor been lost: a message to each opens the connection
// whose loss peerDown reports. Once; not while closing.
func (b *remoteBootstrap) watchPeers() {
	b.mu.Lock()
	if b.peers != nil || b.closing || b.cfg.Rank == 0 {
		b.mu.Unlock()
		return
	}
	b.peers = &peerWatch{left: map[int]bool{}}
	var to []string
	for r, a := range b.addrs {
		if r == 0 || r == b.cfg.Rank || a == "" || b.gone[r] {
			continue
		}
		b.peers.left[r] = false
		to = append(to, a)
	}
	b.mu.Unlock()
	msg := b.out.seal(kindPeerWatch, &ack{Rank: b.cfg.Rank})
	for _, a := range to {
		// A BytesValue per destination: the bytes are shared, read only.
		b.system.Root.Send(actor.NewPID(a, rankActorName), &wrapperspb.BytesValue{Value: msg.Value})
	}
}

// peerDown handles the loss of the connection to addr: a watched rank
// that did not say it leaves is lost.
func (b *remoteBootstrap) peerDown(addr string) {
	b.mu.Lock()
	rank := -1
	if b.peers != nil && !b.closing {
		for r, a := range b.addrs {
			if left, watched := b.peers.left[r]; a == addr && watched && !left {
				rank = r
				b.peers.left[r] = true // once
				break
			}
		}
	}
	b.mu.Unlock()
	if rank < 0 {
		return
	}
	b.Lose(&rdma.PeerLostError{Rank: rank, Reason: reasonConnClosed})
	b.fam.Lose(rank, reasonConnClosed)
}

// peerLeaving records that a watched rank said it leaves: the loss of its
// connection is not a loss.
func (b *remoteBootstrap) peerLeaving(rank int) {
	b.mu.Lock()
	defer b.mu.Unlock()
	if b.peers != nil {
		if _, watched := b.peers.left[rank]; watched {
			b.peers.left[rank] = true
		}
	}
}

// peerAcked records a watching rank's answer to this rank's kindPeerLeaving.
func (b *remoteBootstrap) peerAcked(rank int) {
	b.mu.Lock()
	defer b.mu.Unlock()
	if b.peers == nil || b.peers.await == nil {
		return
	}
	delete(b.peers.await, rank)
	if len(b.peers.await) == 0 {
		b.peers.acked.fire()
	}
}

// leavePeers tells the ranks this one watches that it leaves (seq: the
// last collective it joined) and returns a channel closed once all have
// answered, or nil if it watches none.
func (b *remoteBootstrap) leavePeers(seq uint64) <-chan struct{} {
	b.mu.Lock()
	if b.peers == nil {
		b.mu.Unlock()
		return nil
	}
	b.peers.await = map[int]bool{}
	b.peers.acked = newSignal()
	var to []string
	for r, left := range b.peers.left {
		if !left {
			b.peers.await[r] = true
			to = append(to, b.addrs[r])
		}
	}
	acked := b.peers.acked
	b.mu.Unlock()
	if len(to) == 0 {
		return nil
	}
	msg := b.out.seal(kindPeerLeaving, &leaving{Rank: b.cfg.Rank, Seq: seq})
	for _, a := range to {
		b.system.Root.Send(actor.NewPID(a, rankActorName), &wrapperspb.BytesValue{Value: msg.Value})
	}
	return acked.c
}

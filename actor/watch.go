package actor

import (
	"errors"
	"fmt"
	"sync"

	protoactor "github.com/asynkron/protoactor-go/actor"

	"github.com/rdmactor/rdmactor/gin"
	"github.com/rdmactor/rdmactor/mailbox"
)

// watchTable holds the watches local actors hold on actors of other
// ranks: what protoactor-go's remote keeps per endpoint, so that a rank
// that goes becomes Terminated for its watchers.
type watchTable struct {
	mu     sync.Mutex
	byRank map[int]map[watchEntry]struct{}
	gone   map[int]bool
}

// watchEntry is a local watcher's id and the watched actor's id.
type watchEntry struct{ watcher, watchee string }

// add records a watch on rank, unless the rank is gone (gone != nil, or
// marked gone meanwhile): then it returns the reason and records nothing.
func (t *watchTable) add(rank int, watcher, watchee string, gone *error) error {
	t.mu.Lock()
	defer t.mu.Unlock()
	if gone != nil {
		return *gone
	}
	if t.gone[rank] {
		return ErrRankGone
	}
	m := t.byRank[rank]
	if m == nil {
		m = map[watchEntry]struct{}{}
		t.byRank[rank] = m
	}
	m[watchEntry{watcher, watchee}] = struct{}{}
	return nil
}

func (t *watchTable) remove(rank int, watcher, watchee string) {
	t.mu.Lock()
	defer t.mu.Unlock()
	delete(t.byRank[rank], watchEntry{watcher, watchee})
}

// take marks rank gone and returns its watches, once.
func (t *watchTable) take(rank int) map[watchEntry]struct{} {
	t.mu.Lock()
	defer t.mu.Unlock()
	if t.gone == nil {
		t.gone = map[int]bool{}
	}
	t.gone[rank] = true
	m := t.byRank[rank]
	delete(t.byRank, rank)
	return m
}

// rankGone makes rank unreachable for why: later sends to it fail with
// why, and every local watcher of its actors gets Terminated with
// TerminatedAddressTerminated. Only the first call per rank acts.
func (n *Node) rankGone(rank int, why error) {
	if rank == n.rank || !n.gone[rank].CompareAndSwap(nil, &why) {
		return
	}
	n.failPending(rank) // first: requests have a deadline to meet (docs/actors.md)
	for e := range n.watches.take(rank) {
		n.terminatedLocal(e.watcher, NewPID(AddressOf(rank), e.watchee))
	}
	n.system.Logger().Info("rdmactor: rank unreachable", "rank", rank, "why", why)
}

// terminatedLocal tells local watcher that who is gone with its rank.
func (n *Node) terminatedLocal(watcher string, who *PID) {
	if proc, ok := n.system.ProcessRegistry.GetLocal(watcher); ok {
		proc.SendSystemMessage(n.system.NewLocalPID(watcher),
			&protoactor.Terminated{Who: who, Why: protoactor.TerminatedReason_AddressTerminated})
	}
}

// commFailed handles a lost-peer error from the Comm: the rank it names
// is lost. Under gin.FailPeer (what Start's Comms use) that is all: a put
// to the lost rank that raced with the notice fails this way, and the
// other ranks stay reachable. Under gin.FailComm gin fails every later put
// and wait of the Comm, so every other rank is unreachable too.
func (n *Node) commFailed(err error) {
	var pl *gin.PeerLostError
	lost := -1
	if errors.As(err, &pl) {
		lost = pl.Rank
		n.rankGone(lost, fmt.Errorf("rank %d lost: %w: %w", lost, ErrRankGone, err))
		if n.comm.PeerFailure() == gin.FailPeer {
			return
		}
	}
	for r := range n.size {
		if r != lost {
			n.rankGone(r, fmt.Errorf("rank %d unreachable, this rank's Comm failed: %w: %w", r, ErrRankGone, err))
		}
	}
}

// loopError is the mailbox's error report.
func (n *Node) loopError(err error) {
	var fe *mailbox.FrameError
	switch {
	case errors.Is(err, gin.ErrPeerLost):
		n.commFailed(err)
	case errors.As(err, &fe):
		// A corrupt frame closed the pair: nothing more arrives from that
		// rank, so its actors are as gone as if it were lost.
		n.logs.warn(n.system, "corrupt frame", "err", err)
		n.rankGone(fe.From, fmt.Errorf("rank %d: its ring into this rank held a corrupt frame: %w: %w", fe.From, ErrRankGone, err))
	default:
		n.logs.warn(n.system, "mailbox", "err", err)
	}
}

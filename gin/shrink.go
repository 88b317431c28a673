package gin

import (
	"context"
	"errors"
	"fmt"

	"github.com/rdmactor/rdmactor/internal/bootstrap"
	"github.com/rdmactor/rdmactor/transport/rdma"
)

// ErrExcluded is Shrink's error at a rank that the other survivors count
// lost: it is no member of the shrunk Comm.
var ErrExcluded = bootstrap.ErrExcluded

// ErrRankZeroLost is Shrink's error on a Comm whose control plane runs
// through rank 0 (Init's bootstrap, package remote: rank 0 hosts the
// coordinator) when rank 0 is lost: the survivors can no longer agree.
var ErrRankZeroLost = bootstrap.ErrRankZeroLost

// Shrink builds a new Comm of the ranks that are not lost, as
// ncclCommShrink (NCCL 2.27 user guide, "Shrinking a communicator") does:
// collective over the survivors, for a Comm with Config.PeerFailure
// FailPeer after a rank was lost (on FailComm the old Comm is failed
// whole, but Shrink works the same).
//
// Where NCCL's caller names the ranks to exclude, the survivors here agree
// on them through the control plane, as ULFM's MPIX_Comm_shrink does:
// each contributes LostPeers, and the new Comm has every rank of c except
// the union of those and of the ranks the control plane saw lost, ranked
// densely in c's rank order (ParentRanks maps them back). A rank lost
// before it joins the agreement is left out without being waited for; one
// lost after it joined, while the new Comm is set up, makes Shrink agree
// again without it (at most Size times).
//
// The new Comm has c's Config but for LSASize, which goes back to its
// default (the survivors need not split evenly), and Peers, which keeps
// the surviving peers under their new ranks; it has its own provider
// instance, signals, counters and contexts, all at zero. c's windows stay
// c's: register windows again on the new Comm (RegisterWindow is
// collective over the survivors), and layers over gin (package barrier,
// collective) are built again on it. c stays usable for posts to
// survivors (FailPeer) and is closed by the caller, before or after the
// new Comm. Cost: one control-plane agreement plus what NewComm costs
// (a provider and endpoints for every pair, the signal window).
//
// Errors: ErrExcluded at a rank the others count lost; ErrRankZeroLost
// (see there); ErrNotSupported when c's Bootstrap cannot shrink
// (bootstrap.Shrinker); ctx's error, after which the survivors are out of
// step (close c); ErrClosed after Close; NewComm's errors.
func (c *Comm) Shrink(ctx context.Context) (*Comm, error) {
	if c.closed.Load() {
		return nil, ErrClosed
	}
	s, ok := c.boot.(bootstrap.Shrinker)
	if !ok {
		return nil, fmt.Errorf("gin: shrink: %w", &rdma.UnsupportedError{Provider: fmt.Sprintf("bootstrap %T", c.boot), Feature: "Shrink"})
	}
	cfg := c.cfg
	cfg.LSASize = 0
	for attempt := 0; ; attempt++ {
		nb, err := s.Shrink(ctx, c.LostPeers())
		if err != nil {
			return nil, fmt.Errorf("gin: shrink: %w", err)
		}
		cfg.Peers = nil
		if c.peers != nil {
			sh, ok := nb.(bootstrap.Shrunk)
			if !ok {
				nb.Close()
				return nil, fmt.Errorf("gin: shrink: bootstrap %T gives no parent ranks to carry Config.Peers over: %w", nb, ErrNotSupported)
			}
			cfg.Peers = shrunkPeers(c.peers, sh.ParentRanks())
		}
		nc, err := NewComm(ctx, nb, cfg)
		if err == nil {
			return nc, nil
		}
		nb.Close()
		// A member lost while the new Comm was set up fails that setup at
		// every survivor alike (a collective none could finish), so all of
		// them agree again; a member that left cleanly failed on its own.
		var pl *rdma.PeerLostError
		if !errors.As(err, &pl) || pl.Reason == bootstrap.ReasonClosed || attempt >= c.size {
			return nil, fmt.Errorf("gin: shrink: %w", err)
		}
	}
}

// ParentRanks is, for a Comm that Shrink made, the rank each of its ranks
// had in the Comm it was shrunk from (indexed by rank, ascending); nil for
// a Comm that Init, NewComm or NewLocal made.
func (c *Comm) ParentRanks() []int {
	if s, ok := c.boot.(bootstrap.Shrunk); ok {
		return s.ParentRanks()
	}
	return nil
}

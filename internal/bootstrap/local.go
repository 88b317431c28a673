package bootstrap

import (
	"context"
	"fmt"
	"sync"

	"github.com/rdmactor/rdmactor/transport/rdma"
)

// NewLocal returns the n ranks of an in-process job named job: each rank is
// meant to be driven by its own goroutine, and the collectives meet in
// memory. Ranks are lost in the failure sense only through KillLocal; a
// rank that Closes leaves, and a collective it did not join fails on the
// others with a *rdma.PeerLostError of that rank, reason "closed" (also
// reported to OnLost and Err). Closing every rank after the last collective
// reports nothing. The ranks implement Shrinker (and so do the Bootstraps
// their Shrink returns). It panics if n < 1 (a caller bug).
func NewLocal(job string, n int) []Bootstrap {
	if n < 1 {
		panic(fmt.Sprintf("bootstrap.NewLocal: n = %d, want >= 1", n))
	}
	h := &localHub{rounds: make(map[uint64]*Round), groups: NewGroups(n)}
	bs := make([]Bootstrap, n)
	h.ranks = make([]*localRank, n)
	for r := range n {
		h.ranks[r] = &localRank{
			RankState: NewRankState(r, n, job, func(seq uint64, data []byte) { h.contribute(r, seq, data) }),
			hub:       h,
		}
		h.ranks[r].fam = NewFamily(r, n, job, localSender{h, r}, nil)
		bs[r] = h.ranks[r]
	}
	return bs
}

// localHub is what the ranks of one NewLocal job share.
type localHub struct {
	ranks []*localRank // fixed after NewLocal

	mu     sync.Mutex
	rounds map[uint64]*Round // open collectives of the world by sequence number
	groups *Groups           // Shrink's agreements and shrunk groups
}

// contribute adds rank's data to collective seq and, when it is the last,
// delivers every rank its own copy of the result.
func (h *localHub) contribute(rank int, seq uint64, data []byte) {
	h.mu.Lock()
	rd := h.rounds[seq]
	if rd == nil {
		rd = NewRound(len(h.ranks))
		h.rounds[seq] = rd
	}
	done := rd.Add(rank, clone(data))
	if done {
		delete(h.rounds, seq)
	}
	h.mu.Unlock()
	if done {
		for _, p := range h.ranks {
			p.Deliver(seq, cloneAll(rd.Data()))
		}
	}
}

// deliver hands Shrink outcomes to their ranks (called without mu).
func (h *localHub) deliver(ds []Delivery) {
	for _, d := range ds {
		h.ranks[d.To].fam.Agreed(d.Agreed)
	}
}

// localSender carries one rank's Shrink messages to the hub.
type localSender struct {
	h    *localHub
	rank int
}

func (s localSender) Agree(parent string, k int, lost []int) {
	s.h.mu.Lock()
	ds := s.h.groups.Agree(parent, k, s.rank, lost)
	s.h.mu.Unlock()
	s.h.deliver(ds)
}

func (s localSender) Contribute(group string, seq uint64, data []byte) {
	s.h.mu.Lock()
	to, all, done := s.h.groups.Gather(group, seq, s.rank, clone(data))
	s.h.mu.Unlock()
	for _, w := range to {
		if done {
			s.h.ranks[w].fam.Deliver(group, seq, cloneAll(all))
		}
	}
}

func (s localSender) Leave(group string, seq uint64) {
	s.h.mu.Lock()
	ds := s.h.groups.Leave(group, s.rank)
	members := s.h.groups.Members(group)
	s.h.mu.Unlock()
	for _, w := range members {
		if w != s.rank {
			s.h.ranks[w].fam.NoteLeft(group, s.rank, seq)
		}
	}
	s.h.deliver(ds)
}

// localRank is one rank of a NewLocal job: the shared RankState plus Close
// and Shrink.
type localRank struct {
	*RankState
	hub       *localHub
	fam       *Family
	closeOnce sync.Once
}

var _ Shrinker = (*localRank)(nil)

// Shrink: see Shrinker.
func (b *localRank) Shrink(ctx context.Context, lost []int) (Bootstrap, error) {
	if b.isClosed() {
		return nil, fmt.Errorf("bootstrap: shrink: %w", rdma.ErrClosed)
	}
	return b.fam.ShrinkWorld(ctx, lost)
}

// Close leaves the job; it never fails. Bootstraps that Shrink made stay
// usable until closed themselves.
func (b *localRank) Close() error {
	b.closeOnce.Do(func() {
		at := b.Leave()
		for _, p := range b.hub.ranks {
			if p != b {
				p.NoteLeft(b.Rank(), at)
			}
		}
		b.hub.mu.Lock()
		ds := b.hub.groups.Leave("", b.Rank())
		b.hub.mu.Unlock()
		b.hub.deliver(ds)
		b.fam.Release()
	})
	return nil
}

// KillLocal makes rank b of a NewLocal job lost, as a crash would: the
// other ranks, and the Bootstraps their Shrink made, report it lost (OnLost,
// Err, failed collectives, reason "killed"), and Shrink leaves it out
// without waiting for it. b's own calls, and those of the Bootstraps its
// Shrink made, fail with rdma.ErrClosed from then on; closing them stays
// the caller's. For failure tests. It panics if b is not a NewLocal rank.
func KillLocal(b Bootstrap) {
	r, ok := b.(*localRank)
	if !ok {
		panic(fmt.Sprintf("bootstrap.KillLocal: %T is not a NewLocal rank", b))
	}
	r.Leave()
	r.fam.Abort(rdma.ErrClosed)
	r.fam.Each(-1, func(s *Sub, _ int) { s.Leave() })
	e := &rdma.PeerLostError{Rank: r.Rank(), Reason: "killed"}
	for _, p := range r.hub.ranks {
		if p != r {
			p.Lose(e)
			p.fam.Lose(r.Rank(), e.Reason)
		}
	}
	r.hub.mu.Lock()
	ds := r.hub.groups.Lose(r.Rank())
	r.hub.mu.Unlock()
	r.hub.deliver(ds)
}

func clone(b []byte) []byte {
	if len(b) == 0 {
		return nil
	}
	return append([]byte(nil), b...)
}

func cloneAll(d [][]byte) [][]byte {
	out := make([][]byte, len(d))
	for i, b := range d {
		out[i] = clone(b)
	}
	return out
}

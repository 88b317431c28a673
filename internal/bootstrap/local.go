package bootstrap

import (
	"fmt"
	"sync"
)

// NewLocal returns the n ranks of an in-process job named job: each rank is
// meant to be driven by its own goroutine, and the collectives meet in
// memory. Ranks are never lost in the failure sense; a rank that Closes
// leaves, and a collective it did not join fails on the others with a
// *rdma.PeerLostError of that rank, reason "closed" (also reported to OnLost
// and Err). Closing every rank after the last collective reports nothing.
// It panics if n < 1 (a caller bug).
func NewLocal(job string, n int) []Bootstrap {
	if n < 1 {
		panic(fmt.Sprintf("bootstrap.NewLocal: n = %d, want >= 1", n))
	}
	h := &localHub{rounds: make(map[uint64]*Round)}
	bs := make([]Bootstrap, n)
	h.ranks = make([]*localRank, n)
	for r := range n {
		h.ranks[r] = &localRank{
			RankState: NewRankState(r, n, job, func(seq uint64, data []byte) { h.contribute(r, seq, data) }),
			hub:       h,
		}
		bs[r] = h.ranks[r]
	}
	return bs
}

// localHub is what the ranks of one NewLocal job share.
type localHub struct {
	ranks []*localRank // fixed after NewLocal

	mu     sync.Mutex
	rounds map[uint64]*Round // open collectives by sequence number
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

// localRank is one rank of a NewLocal job: the shared RankState plus Close.
type localRank struct {
	*RankState
	hub       *localHub
	closeOnce sync.Once
}

// Close leaves the job; it never fails.
func (b *localRank) Close() error {
	b.closeOnce.Do(func() {
		at := b.Leave()
		for _, p := range b.hub.ranks {
			if p != b {
				p.NoteLeft(b.Rank(), at)
			}
		}
	})
	return nil
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

package bootstrap

import (
	"context"
	"fmt"
	"sync"

	"github.com/rdmactor/rdmactor/transport/rdma"
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
	h := &localHub{job: job, rounds: make(map[uint64]*round)}
	bs := make([]Bootstrap, n)
	h.ranks = make([]*localRank, n)
	for r := range n {
		h.ranks[r] = &localRank{hub: h, st: newRankState(r, n)}
		bs[r] = h.ranks[r]
	}
	return bs
}

// localHub is what the ranks of one NewLocal job share.
type localHub struct {
	job   string
	ranks []*localRank // fixed after NewLocal

	mu     sync.Mutex
	rounds map[uint64]*round // open collectives by sequence number
}

// round gathers the contributions of one collective.
type round struct {
	data  [][]byte
	have  []bool
	count int
}

func newRound(n int) *round { return &round{data: make([][]byte, n), have: make([]bool, n)} }

// add stores rank's data; it reports whether all n ranks are in.
func (r *round) add(rank int, data []byte) bool {
	if !r.have[rank] {
		r.have[rank] = true
		r.data[rank] = data
		r.count++
	}
	return r.count == len(r.data)
}

type localRank struct {
	hub       *localHub
	st        *rankState
	closeOnce sync.Once
}

// Rank returns this rank's world rank.
func (b *localRank) Rank() int { return b.st.rank }

// Size returns the number of ranks.
func (b *localRank) Size() int { return b.st.size }

// Job returns the job name given to NewLocal.
func (b *localRank) Job() string { return b.hub.job }

// AllGather: see Bootstrap.
func (b *localRank) AllGather(ctx context.Context, data []byte) ([][]byte, error) {
	b.st.coll.Lock()
	defer b.st.coll.Unlock()
	seq, ch, err := b.st.begin()
	if err != nil {
		return nil, fmt.Errorf("bootstrap: allgather: %w", err)
	}
	h := b.hub
	h.mu.Lock()
	rd := h.rounds[seq]
	if rd == nil {
		rd = newRound(len(h.ranks))
		h.rounds[seq] = rd
	}
	done := rd.add(b.st.rank, clone(data))
	if done {
		delete(h.rounds, seq)
	}
	h.mu.Unlock()
	if done {
		for _, p := range h.ranks {
			p.st.deliver(seq, cloneAll(rd.data))
		}
	}
	res, err := b.st.wait(ctx, seq, ch)
	if err != nil {
		return nil, fmt.Errorf("bootstrap: allgather: %w", err)
	}
	return res, nil
}

// Barrier: see Bootstrap.
func (b *localRank) Barrier(ctx context.Context) error {
	_, err := b.AllGather(ctx, nil)
	return err
}

// OnLost: see Bootstrap.
func (b *localRank) OnLost(f func(*rdma.PeerLostError)) { b.st.OnLost(f) }

// Err: see Bootstrap.
func (b *localRank) Err() error { return b.st.Err() }

// Close leaves the job; it never fails.
func (b *localRank) Close() error {
	b.closeOnce.Do(func() {
		at := b.st.close()
		for _, p := range b.hub.ranks {
			if p != b {
				p.st.noteLeft(b.st.rank, at)
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

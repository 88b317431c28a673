package barrier_test

import (
	"fmt"
	"testing"

	"github.com/rdmactor/rdmactor/barrier"
	"github.com/rdmactor/rdmactor/gin"
)

// fencePutRounds runs iters rounds: each rank puts the round's number
// into its slot of every rank's window, its own included, passes a flat
// barrier with FencePut and checks every slot; a second barrier keeps
// the next round's puts from overtaking a slow rank's check.
func fencePutRounds(t *testing.T, j *job, iters int) {
	n := len(j.comms)
	wins := make([]*gin.Window, n)
	j.ranks(func(r int) (err error) {
		wins[r], err = j.comms[r].RegisterWindow(j.ctx, 8*n, 0)
		return err
	})
	j.ranks(func(r int) error {
		x, team := j.x(r), j.comms[r].World()
		s, err := barrier.NewSession(x, team, 0, 0)
		if err != nil {
			return err
		}
		for i := 1; i <= iters; i++ {
			for p := range n {
				if err := x.PutValue(team, p, wins[r], 8*r, uint64(i), 8, gin.None); err != nil {
					return err
				}
			}
			if err := s.Sync(j.ctx, barrier.FencePut); err != nil {
				return err
			}
			for q := range n {
				if v := le64(wins[r].Bytes()[8*q:]); v != uint64(i) {
					return fmt.Errorf("barrier %d: value from rank %d is %d", i, q, v)
				}
			}
			// Nobody writes the next round before everyone checked.
			if err := s.Sync(j.ctx, barrier.FenceNone); err != nil {
				return err
			}
		}
		return nil
	})
}

// getBlock is the bytes each rank publishes per round in fenceGetRounds:
// large enough that a get over a network provider is still in flight
// when the barrier's signals are.
const getBlock = 64 << 10

// fenceGetRounds runs iters rounds: each rank writes a round-stamped
// block into its window, passes a barrier (so peers may read it), gets
// every peer's block with no local action, passes a barrier of kind k
// with FenceGet (on the flat kind every other round with
// FencePut|FenceGet) and checks the blocks it read; a last barrier keeps
// the next round's writes from overtaking a peer's reads. Window of rank
// r: [0, getBlock) its block, then one landing block per team rank.
func fenceGetRounds(t *testing.T, j *job, k kind, iters int) {
	n := len(j.comms)
	if !j.comms[0].Capabilities().Get {
		t.Skipf("provider %s cannot read (Capabilities().Get)", j.comms[0].Transport())
	}
	wins := make([]*gin.Window, n)
	j.ranks(func(r int) (err error) {
		wins[r], err = j.comms[r].RegisterWindow(j.ctx, (n+1)*getBlock, 0)
		return err
	})
	stamp := func(r, i, b int) byte { return byte(r*31 + i*7 + b*13 + b>>8) }
	j.ranks(func(r int) error {
		x, team := j.x(r), j.comms[r].World()
		s, err := k.make(x, team, 0, 0)
		if err != nil {
			return err
		}
		mine := wins[r].Bytes()
		for i := 1; i <= iters; i++ {
			for b := range getBlock {
				mine[b] = stamp(r, i, b)
			}
			if err := s.Sync(j.ctx, barrier.FenceNone); err != nil {
				return err
			}
			for p := range n {
				if p != r {
					if err := x.Get(team, p, wins[r], (p+1)*getBlock, wins[r], 0, getBlock, gin.LocalNone); err != nil {
						return err
					}
				}
			}
			fence := barrier.FenceGet
			if k.name == "flat" && i%2 == 0 {
				fence |= barrier.FencePut
			}
			if err := s.Sync(j.ctx, fence); err != nil {
				return err
			}
			for p := range n {
				if p == r {
					continue
				}
				got := mine[(p+1)*getBlock : (p+2)*getBlock]
				for b := range getBlock {
					if got[b] != stamp(p, i, b) {
						return fmt.Errorf("round %d: byte %d read from rank %d is %#x, want %#x", i, b, p, got[b], stamp(p, i, b))
					}
				}
			}
			if err := s.Sync(j.ctx, barrier.FenceNone); err != nil {
				return err
			}
		}
		if s.Epoch() != uint64(3*iters) {
			return fmt.Errorf("epoch %d after %d barriers", s.Epoch(), 3*iters)
		}
		return nil
	})
}

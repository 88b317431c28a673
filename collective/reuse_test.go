package collective_test

import (
	"fmt"
	"runtime"
	"testing"

	"github.com/rdmactor/rdmactor/collective"
	"github.com/rdmactor/rdmactor/gin"
	"github.com/rdmactor/rdmactor/internal/testutils"
)

// Successive collectives reuse the scratch halves and the destinations
// with no barrier between calls: ranks run at different speeds (one
// yields often between calls, so the others run ahead as far as the
// protocol lets them), every call's data differs, algorithms alternate
// (one-shot, hierarchical on 4 and 6 ranks in groups of 2, ring, direct,
// chain), and every result is checked. A rank that overwrote a buffer its
// owner still used would corrupt a result.
func TestSuccessiveCalls(t *testing.T) {
	iters := testutils.Scale(300, 40)
	for _, n := range []int{2, 3, 4, 6} {
		t.Run(fmt.Sprintf("n=%d", n), func(t *testing.T) {
			// Small scratch and pieces: rings take many slices.
			j := newJob(t, n, collective.Config{Scratch: 8 << 10, Piece: 512, OneShotMax: 1 << 10, HostRanks: 2})
			const small, large = 61, 4099 // elements: one-shot and ring/direct/chain
			wins := j.windows(2 * n * large * 8)
			j.ranks(func(r int) error {
				w, c := wins[r], j.colls[r]
				half := n * large * 8
				src, dst := collective.At(w, 0), collective.At(w, half)
				for it := range iters {
					if r == it%n { // this rank lags behind in this round
						for range 50 {
							runtime.Gosched()
						}
					}
					count := small
					if it%2 == 1 {
						count = large
					}
					if err := step(j, w, c, r, n, it, count, src, dst); err != nil {
						return fmt.Errorf("iteration %d: %w", it, err)
					}
				}
				return nil
			})
		})
	}
}

// step is one iteration of TestSuccessiveCalls: one collective, chosen by
// the iteration, then the check of its result.
func step(j *job, w *gin.Window, c *collective.Comm, r, n, it, count int, src, dst collective.Buffer) error {
	dt := collective.Int64
	es := dt.Size()
	switch it % 5 {
	case 0:
		cs := reduceCase{dt: dt, op: collective.Sum, count: count}
		if err := fill(w, 0, dt, cs.op, r, 0, count, it); err != nil {
			return err
		}
		if err := c.AllReduce(j.ctx, dst, src, count, dt, cs.op); err != nil {
			return err
		}
		return checkReduced(w, dst.Offset, cs, n, 0, it)
	case 1:
		if err := fill(w, 0, dt, collective.Max, r, 0, count, it); err != nil {
			return err
		}
		if err := c.AllGather(j.ctx, dst, src, count, dt); err != nil {
			return err
		}
		for q := range n {
			if err := expect(w, dst.Offset+q*count*es, dt, count, "all-gather", func(i int) float64 { return val(dt, q, i, it) }); err != nil {
				return err
			}
		}
	case 2:
		cs := reduceCase{dt: dt, op: collective.Max, count: count / n}
		if err := fill(w, 0, dt, cs.op, r, 0, n*cs.count, it); err != nil {
			return err
		}
		if err := c.ReduceScatter(j.ctx, dst, src, cs.count, dt, cs.op); err != nil {
			return err
		}
		return checkReduced(w, dst.Offset, cs, n, r*cs.count, it)
	case 3:
		root := it % n
		if r == root {
			if err := fill(w, 0, dt, collective.Max, r, 0, count, it); err != nil {
				return err
			}
		}
		if err := c.Broadcast(j.ctx, dst, src, count, dt, root); err != nil {
			return err
		}
		return expect(w, dst.Offset, dt, count, "broadcast", func(i int) float64 { return val(dt, root, i, it) })
	case 4:
		per := count / n
		if err := fill(w, 0, dt, collective.Max, r, 0, n*per, it); err != nil {
			return err
		}
		if err := c.AllToAll(j.ctx, dst, src, per, dt); err != nil {
			return err
		}
		for q := range n {
			if err := expect(w, dst.Offset+q*per*es, dt, per, "all-to-all", func(i int) float64 { return val(dt, q, r*per+i, it) }); err != nil {
				return err
			}
		}
	}
	return nil
}

// Every collective with 16 MiB buffers (1 MiB under -race) on goroutine
// ranks (the launcher test covers 2 and 4 processes), then AllToAllV with
// about as much.
func TestLarge(t *testing.T) {
	large := testutils.Scale(16<<20, 1<<20)
	for _, n := range []int{1, 3, 8} {
		t.Run(fmt.Sprintf("n=%d", n), func(t *testing.T) {
			j := newJob(t, n, collective.Config{})
			wins := j.windows(2 * large)
			j.ranks(func(r int) error {
				w, c := wins[r], j.colls[r]
				src, dst := collective.At(w, 0), collective.At(w, large)
				for s := range 5 {
					count := large / 8
					if s == 1 {
						count /= n
					}
					if err := step(j, w, c, r, n, s, count, src, dst); err != nil {
						return fmt.Errorf("step %d: %w", s, err)
					}
				}
				// AllToAllV: up to 2*per elements to each rank.
				per := large / 8 / n / 2
				send, recv := make([]int, n), make([]int, n)
				off := 0
				for p := range n {
					send[p] = sendCount(r, p, 7, per)
					if err := fill(w, off*8, collective.Int64, collective.Max, r, p<<24, send[p], 7); err != nil {
						return err
					}
					off += send[p]
				}
				if err := c.AllToAllV(j.ctx, dst, large/8, src, send, recv, collective.Int64); err != nil {
					return err
				}
				at := dst.Offset
				for q := range n {
					if err := expect(w, at, collective.Int64, recv[q], "all-to-all-v", func(i int) float64 { return val(collective.Int64, q, r<<24+i, 7) }); err != nil {
						return err
					}
					at += recv[q] * 8
				}
				return nil
			})
		})
	}
}

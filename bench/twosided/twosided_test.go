package twosided_test

import (
	"context"
	"fmt"
	"sync"
	"testing"
	"time"

	"github.com/rdmactor/rdmactor/barrier"
	"github.com/rdmactor/rdmactor/bench/twosided"
	"github.com/rdmactor/rdmactor/collective"
	"github.com/rdmactor/rdmactor/gin"
	"github.com/rdmactor/rdmactor/internal/testutils"
	"github.com/rdmactor/rdmactor/moe"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// TestMatchesOneSided runs the same rounds through moe.Handle and the
// two-sided baseline on the same ranks and requires equal results, bit
// for bit (same summation order), with scaled experts, 1 to 4 ranks.
func TestMatchesOneSided(t *testing.T) {
	for _, n := range []int{1, 2, 3, 4} {
		t.Run(fmt.Sprintf("ranks=%d", n), func(t *testing.T) { testMatches(t, n) })
	}
}

func testMatches(t *testing.T, n int) {
	const H, K = 37, 4
	E := 4 * n
	T := 50
	ctx, stop := context.WithCancel(testutils.Deadline(t, time.Minute))
	defer stop()
	comms, err := gin.NewLocal(ctx, n, gin.Config{Signals: collective.Requirement(n)})
	require.NoError(t, err)
	defer func() {
		for _, c := range comms {
			c.Close()
		}
	}()
	cfg := moe.Config{Sizes: moe.Sizes{Hidden: H, TopK: K, NumExperts: E, MaxTokens: T}, Pacing: barrier.Pacing{Gosched: true, Spins: 64}}
	errs := make([]error, n)
	var wg sync.WaitGroup
	for r := range n {
		wg.Go(func() {
			defer func() {
				if errs[r] != nil {
					stop()
				}
			}()
			c, err := collective.New(ctx, comms[r], collective.Config{Pacing: barrier.Pacing{Gosched: true, Spins: 64}})
			if err != nil {
				errs[r] = err
				return
			}
			one, err := moe.New[uint16](ctx, comms[r], cfg)
			if err != nil {
				errs[r] = err
				return
			}
			two, err := twosided.New[uint16](ctx, c, cfg)
			if err != nil {
				errs[r] = err
				return
			}
			for round := range 3 {
				tokens := T - 7*((r+round)%3)
				idx, w, err := moe.RandomRouting(uint64(round), r, tokens, K, E, moe.Skew{Drop: 0.1})
				if err != nil {
					errs[r] = err
					return
				}
				x := make([]uint16, tokens*H)
				for i := range x {
					x[i] = moe.BF16(float32(i%13) - 6)
				}
				var outs [2][]uint16
				for i, d := range []interface {
					Dispatch(context.Context, []uint16, []int32, []float32) (*moe.Recv[uint16], error)
					Combine(context.Context, []uint16, []uint16) error
				}{one, two} {
					recv, err := d.Dispatch(ctx, x, idx, w)
					if err != nil {
						errs[r] = fmt.Errorf("round %d, handle %d: %w", round, i, err)
						return
					}
					scratch := make([]float32, 2*H)
					for j := range recv.NumRecv {
						moe.ExpertOutput(recv.X[j*H:(j+1)*H], recv, j, K, scratch, func(e int, x []uint16, acc []float32) {
							s := float32(1 + (r*E/n+e)%4)
							for q, v := range x {
								acc[q] = s * moe.Float32(v)
							}
						})
					}
					outs[i] = make([]uint16, tokens*H)
					if err := d.Combine(ctx, recv.X, outs[i]); err != nil {
						errs[r] = fmt.Errorf("round %d, handle %d: %w", round, i, err)
						return
					}
				}
				for q := range outs[0] {
					if outs[0][q] != outs[1][q] {
						errs[r] = fmt.Errorf("round %d: element %d: one-sided %g, two-sided %g", round, q, moe.Float32(outs[0][q]), moe.Float32(outs[1][q]))
						return
					}
				}
			}
		})
	}
	wg.Wait()
	for r, err := range errs {
		assert.NoError(t, err, "rank %d", r)
	}
}

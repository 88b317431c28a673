package perf_test

import (
	"context"
	"sync"
	"testing"
	"time"

	"github.com/rdmactor/rdmactor/barrier"
	"github.com/rdmactor/rdmactor/bench/perf"
	"github.com/rdmactor/rdmactor/collective"
	"github.com/rdmactor/rdmactor/gin"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

func TestBandwidth(t *testing.T) {
	assert.InDelta(t, 1.5, perf.BusFactor(collective.AllReduceOp, 4), 1e-12)
	assert.InDelta(t, 0.75, perf.BusFactor(collective.AllToAllOp, 4), 1e-12)
	assert.InDelta(t, 1.0, perf.BusFactor(collective.BroadcastOp, 4), 1e-12)
	assert.Zero(t, perf.BusFactor(collective.AllGatherOp, 1))
	assert.InDelta(t, 2.0, perf.AlgBW(2e9, 1), 1e-12)
	assert.Zero(t, perf.AlgBW(1, 0))
}

func TestIdleModes(t *testing.T) {
	tests := []struct {
		mode           string
		ranks          int
		oversubscribed bool
		local          bool
		want           barrier.Pacing
	}{
		{"yield", 4, false, false, barrier.Pacing{OSYield: true}},
		{"yield", 4, false, true, barrier.Pacing{Gosched: true}},
		{"spin", 2, true, false, barrier.Pacing{OSYield: true, Spins: 1 << 14}},
		{"auto", 4, true, false, barrier.Pacing{OSYield: true}},
		{"auto", 2, false, false, barrier.Pacing{OSYield: true, Spins: 1 << 14}},
		{"auto", 1 << 20, false, true, barrier.Pacing{Gosched: true}},
		{"auto", 1, false, true, barrier.Pacing{Gosched: true, Spins: 1 << 14}},
		{"gin", 2, true, false, barrier.Pacing{}},
	}
	for _, tt := range tests {
		_, p, err := perf.Idle(tt.mode, tt.ranks, tt.oversubscribed, tt.local, 0)
		require.NoError(t, err, tt.mode)
		assert.Equal(t, tt.want, p, "%s, %d ranks, oversubscribed %v, local %v", tt.mode, tt.ranks, tt.oversubscribed, tt.local)
	}
	_, p, err := perf.Idle("yield", 4, false, false, 7)
	require.NoError(t, err)
	assert.Equal(t, 7, p.Spins)
	_, _, err = perf.Idle("nap", 2, false, false, 0)
	assert.Error(t, err)
	_, err = perf.Bind("tight", false)
	assert.Error(t, err)
	got, err := perf.Bind("core", true)
	require.NoError(t, err)
	assert.Equal(t, "unbound", got, "goroutine ranks are never bound")
}

// Measure agrees on iteration counts across ranks (it would deadlock
// otherwise) and returns the per-iteration time of the slowest rank.
func TestMeasure(t *testing.T) {
	const n = 2
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	comms, err := gin.NewLocal(ctx, n, gin.Config{Signals: barrier.Requirement(n, 1) + collective.Requirement(n)})
	require.NoError(t, err)
	defer func() {
		for _, c := range comms {
			c.Close()
		}
	}()
	secs := make([]float64, n)
	errs := make([]error, n)
	var wg sync.WaitGroup
	for r, g := range comms {
		wg.Go(func() {
			x, _ := g.Context(0)
			b, err := barrier.NewWorldSession(x, 0, 0)
			if err != nil {
				errs[r] = err
				return
			}
			c, err := collective.New(ctx, g, collective.Config{Signal0: gin.Signal(barrier.Requirement(n, 1))})
			if err != nil {
				errs[r] = err
				return
			}
			timer, err := perf.New(ctx, c, b)
			if err != nil {
				errs[r] = err
				return
			}
			secs[r], errs[r] = timer.Measure(ctx, perf.Method{RepSeconds: 0.01, Reps: 3, MinSeconds: 0.005}, func(iters int) error {
				// Rank 1 is the slow one: 10 µs per iteration.
				if r == 1 {
					time.Sleep(time.Duration(iters) * 10 * time.Microsecond)
				}
				return nil
			})
		})
	}
	wg.Wait()
	for r := range n {
		require.NoError(t, errs[r], "rank %d", r)
	}
	assert.Equal(t, secs[0], secs[1], "every rank reports the slowest rank's time")
	assert.GreaterOrEqual(t, secs[0], 10e-6)
}

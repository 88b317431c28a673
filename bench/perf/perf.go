// Package perf times collectives and barriers across ranks the way the
// Open MPI anchor (a C program outside this repository,
// docs/benchmarks.md) and nccl-tests do, so that their figures compare:
// each figure is warmed up and calibrated until one repetition lasts
// about Method.RepSeconds, then repeated Method.Reps times; every
// repetition is timed on the slowest rank (the ranks' times are
// max-reduced with an all-reduce) and the median time per iteration is
// the figure.
//
// It also holds nccl-tests' bandwidth conventions (AlgBW, BusBW).
package perf

import (
	"context"
	"fmt"
	"slices"
	"time"

	"github.com/rdmactor/rdmactor/barrier"
	"github.com/rdmactor/rdmactor/collective"
	"github.com/rdmactor/rdmactor/gin"
)

// Method is how long a figure is measured.
type Method struct {
	RepSeconds float64 // target length of one repetition
	Reps       int     // repetitions; the median is reported
	MinSeconds float64 // calibration: grow iterations 4x until one run lasts this long
}

// Anchor is the method of bench/mpi/rmabench.c, the Open MPI anchor: REP_SECONDS 0.4, NREP 5, calibration
// until 0.05 s.
var Anchor = Method{RepSeconds: 0.4, Reps: 5, MinSeconds: 0.05}

// Timer measures a function on every rank of a collective Comm. Make one
// per rank with New; Measure is collective.
type Timer struct {
	c   *collective.Comm
	b   barrier.Syncer
	win *gin.Window // 8 bytes: this rank's time, then the maximum
}

// New makes rank's Timer: it registers a small window on c's gin.Comm
// (collective). b starts each timed run on every rank at once (the
// anchor's MPI_Barrier).
func New(ctx context.Context, c *collective.Comm, b barrier.Syncer) (*Timer, error) {
	w, err := c.Gin().RegisterWindow(ctx, 16, 0)
	if err != nil {
		return nil, fmt.Errorf("perf: %w", err)
	}
	return &Timer{c: c, b: b, win: w}, nil
}

// timed runs fn(iters) after a barrier and returns the slowest rank's
// elapsed seconds.
func (t *Timer) timed(ctx context.Context, fn func(iters int) error, iters int) (float64, error) {
	if err := t.b.Sync(ctx, barrier.FenceNone); err != nil {
		return 0, err
	}
	start := time.Now()
	if err := fn(iters); err != nil {
		return 0, err
	}
	dt := time.Since(start).Seconds()
	v, err := collective.Elements[float64](t.win, 0, 2)
	if err != nil {
		return 0, err
	}
	v[0] = dt
	if err := t.c.AllReduce(ctx, collective.At(t.win, 8), collective.At(t.win, 0), 1, collective.Float64, collective.Max); err != nil {
		return 0, err
	}
	return v[1], nil
}

// Measure returns the median seconds per iteration of fn, which runs
// iters iterations of the figure's operation on this rank. Every rank
// calls it at once with the same m; they agree on every iteration count,
// since each is derived from max-reduced times.
func (t *Timer) Measure(ctx context.Context, m Method, fn func(iters int) error) (float64, error) {
	iters := 1
	var dt float64
	var err error
	for {
		if dt, err = t.timed(ctx, fn, iters); err != nil {
			return 0, err
		}
		if dt >= m.MinSeconds {
			break
		}
		iters *= 4
	}
	iters = max(1, int(float64(iters)*m.RepSeconds/dt))
	per := make([]float64, max(m.Reps, 1))
	for i := range per {
		if dt, err = t.timed(ctx, fn, iters); err != nil {
			return 0, err
		}
		per[i] = dt / float64(iters)
	}
	slices.Sort(per)
	return per[len(per)/2], nil
}

// BusFactor is nccl-tests' bus bandwidth factor for collective k on n
// ranks (doc/PERFORMANCE.md): busbw = algbw * factor, the bandwidth a
// rank's link would need, comparable across rank counts.
func BusFactor(k collective.Collective, n int) float64 {
	if n <= 1 {
		return 0
	}
	switch k {
	case collective.AllReduceOp:
		return 2 * float64(n-1) / float64(n)
	case collective.BroadcastOp:
		return 1
	}
	return float64(n-1) / float64(n)
}

// AlgBW is size bytes per seconds, in GB/s (1e9 bytes/s).
func AlgBW(size int, seconds float64) float64 {
	if seconds <= 0 {
		return 0
	}
	return float64(size) / seconds / 1e9
}

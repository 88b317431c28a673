package main

import (
	"context"
	"encoding/binary"
	"fmt"
	"math"
	"slices"
	"time"

	"github.com/rdmactor/rdmactor/gin"
)

// Signals the benchmark uses. Each keeps counting across repetitions: the
// waiters compare against a running expected count, so nothing is reset.
const (
	sigLat  gin.Signal = 0 // put+signal ping-pong
	sigBW   gin.Signal = 1 // put bandwidth
	sigCtrl gin.Signal = 2 // control exchanges (sync, max of the ranks' times)
	nSignal            = 3
)

// rank is one rank's state: its Comm, context 0, the windows and the
// floor's own shared mapping.
type rank struct {
	c    *gin.Comm
	x    *gin.Context
	team gin.Team
	me   int
	peer int

	lat  *gin.Window // [0, latMax) send area, [latMax, 2*latMax) receive area
	bw   *gin.Window // 2*bwMax: puts alternate halves; the source is [0, size)
	ctrl *gin.Window // 2 exchange slots of 8 bytes

	floor *floor

	// Expected counts of this rank's signals (what the peer has sent so far).
	latSeen, bwSeen, ctrlSeen uint64
	ctrlSent                  uint64
	floorSeen                 uint64 // of this rank's floor flag

	ctx  context.Context
	opt  *options
	idle gin.IdleStrategy // the Comm's (Config.Idle), for the floor's waits
}

// exchange sends v to the peer and returns the peer's value: a barrier that
// also swaps one word. It goes through gin (PutValue + SignalInc on the
// control signal) and is never inside a timed region. Two slots alternate,
// so a fast rank's next value cannot overwrite one the peer has not read:
// the peer's next value waits for ours.
func (r *rank) exchange(v uint64) (uint64, error) {
	slot := 8 * int(r.ctrlSent%2)
	r.ctrlSent++
	if err := r.x.PutValue(r.team, r.peer, r.ctrl, slot, v, 8, gin.SignalInc(sigCtrl)); err != nil {
		return 0, fmt.Errorf("control put: %w", err)
	}
	r.ctrlSeen++
	if _, err := r.x.WaitSignal(r.ctx, sigCtrl, r.ctrlSeen, 64); err != nil {
		return 0, fmt.Errorf("control wait: %w", err)
	}
	return binary.LittleEndian.Uint64(r.ctrl.Bytes()[slot:]), nil
}

// kernel runs n iterations of one figure on this rank (each rank plays its
// part; both are called with the same n). samples, when not nil on rank 0,
// receives the duration of every iteration in ns.
type kernel func(n int, samples []int64) error

// timed runs k(n) on both ranks between two exchanges and returns the
// seconds of the slower rank, as bench/mpi/rmabench.c's run() does with
// MPI_Barrier and MPI_Allreduce(MAX). With solo, only this rank runs it and
// nothing is exchanged (the single-core copy anchor).
func (r *rank) timed(k kernel, n int, solo bool, samples []int64) (float64, error) {
	if !solo {
		if _, err := r.exchange(0); err != nil {
			return 0, err
		}
	}
	t0 := time.Now()
	if err := k(n, samples); err != nil {
		return 0, err
	}
	dt := time.Since(t0).Seconds()
	if solo {
		return dt, nil
	}
	other, err := r.exchange(math.Float64bits(dt))
	if err != nil {
		return 0, err
	}
	return max(dt, math.Float64frombits(other)), nil
}

// figure is one measured kernel and what was learnt about it.
type figure struct {
	name  string
	k     kernel
	solo  bool    // rank 0 alone (no exchanges)
	unit  float64 // scale of seconds per iteration into the reported value
	bytes int     // > 0: report bytes/s as GB/s instead of unit
	dist  bool    // also run one sampled repetition for p50/p99

	n    int       // iterations per repetition
	reps []float64 // seconds per iteration of each repetition
	p50  float64   // one-way µs from the sampled repetition (dist)
	p99  float64
}

// calibrate warms f up and picks n so that one repetition lasts about
// opt.repSeconds (bench/mpi/rmabench.c's measure(): grow n by 4 until a run takes
// 50 ms, then scale). -iters fixes n instead.
func (r *rank) calibrate(f *figure) error {
	if r.opt.iters > 0 {
		if _, err := r.timed(f.k, 1+r.opt.iters/10, f.solo, nil); err != nil { // warm-up
			return err
		}
		f.n = r.opt.iters
		return nil
	}
	n := 1
	for {
		dt, err := r.timed(f.k, n, f.solo, nil)
		if err != nil {
			return err
		}
		if dt >= 0.05 {
			f.n = max(1, int(float64(n)*r.opt.repSeconds/dt))
			return nil
		}
		n *= 4
	}
}

// measure calibrates every figure of the group, then runs opt.reps
// repetitions of each, interleaved (floor, gin, floor, gin, ...), so that a
// slow phase of a noisy host hits the figures that are compared alike.
func (r *rank) measure(group []*figure) error {
	for _, f := range group {
		if f.solo && r.me != 0 {
			continue
		}
		if err := r.calibrate(f); err != nil {
			return fmt.Errorf("%s: calibrate: %w", f.name, err)
		}
	}
	for range r.opt.reps {
		for _, f := range group {
			if f.solo && r.me != 0 {
				continue
			}
			dt, err := r.timed(f.k, f.n, f.solo, nil)
			if err != nil {
				return fmt.Errorf("%s: %w", f.name, err)
			}
			f.reps = append(f.reps, dt/float64(f.n))
		}
	}
	// The sampled repetitions time every round trip (one clock read per
	// iteration, which the medians above do not pay): opt.reps short ones
	// per figure, interleaved too, so noise spreads over both figures alike.
	samples := make(map[*figure][]int64)
	for range r.opt.reps {
		for _, f := range group {
			if !f.dist {
				continue
			}
			n := max(1, f.n/r.opt.reps)
			var s []int64
			if r.me == 0 {
				s = make([]int64, n)
			}
			if _, err := r.timed(f.k, n, false, s); err != nil {
				return fmt.Errorf("%s: sampled repetition: %w", f.name, err)
			}
			samples[f] = append(samples[f], s...)
		}
	}
	for f, s := range samples {
		if r.me == 0 {
			f.p50, f.p99 = oneWayPercentiles(s)
		}
	}
	return nil
}

// median is the median seconds per iteration over the repetitions.
func (f *figure) median() float64 {
	s := slices.Clone(f.reps)
	slices.Sort(s)
	if len(s) == 0 {
		return math.NaN()
	}
	return s[len(s)/2]
}

// value is the figure as reported: GB/s (1e9 bytes/s) for bandwidths, else
// median seconds per iteration times unit.
func (f *figure) value() float64 {
	if f.bytes > 0 {
		return float64(f.bytes) / f.median() / 1e9
	}
	return f.median() * f.unit
}

// oneWayPercentiles turns round-trip durations (ns) into one-way latencies
// (round trip / 2) and returns their p50 and p99 in µs.
func oneWayPercentiles(rtts []int64) (p50, p99 float64) {
	if len(rtts) == 0 {
		return math.NaN(), math.NaN()
	}
	d := slices.Clone(rtts)
	slices.Sort(d)
	at := func(q float64) float64 {
		i := min(len(d)-1, int(q*float64(len(d))))
		return float64(d[i]) / 2 / 1e3
	}
	return at(0.50), at(0.99)
}

// pairedRatio is the median over repetitions of a's time per iteration over
// b's in the same round of the interleaved loop: drift of the host between
// rounds cancels out.
func pairedRatio(a, b *figure) float64 {
	var q []float64
	for i := range min(len(a.reps), len(b.reps)) {
		q = append(q, a.reps[i]/b.reps[i])
	}
	if len(q) == 0 {
		return math.NaN()
	}
	slices.Sort(q)
	return q[len(q)/2]
}

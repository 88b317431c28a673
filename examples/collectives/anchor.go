package main

import (
	"context"
	"fmt"

	"github.com/rdmactor/rdmactor/bench/perf"
	"github.com/rdmactor/rdmactor/collective"
)

// anchorTokens are the anchor's all-to-all sizes: tokens x 7168 bf16
// (2 bytes) per pair, a MoE dispatch of that many tokens.
var anchorTokens = []int{128, 4096}

// anchor runs the collective figures of bench/mpi/rmabench.c (coll) and prints them with the
// anchor's names and units: all-reduce of one float64 (8 B) and of 4 MiB
// of float64 sums, all-to-all of 128 and 4096 tokens x 7168 bf16 per pair
// (algbw = bytes sent per rank, own block included, / time).
func (r *rank) anchor(ctx context.Context, o options) error {
	n := r.c.Size()
	largest := n * anchorTokens[len(anchorTokens)-1] * 7168 * 2
	w, err := r.c.Gin().RegisterWindow(ctx, 2*largest, 0)
	if err != nil {
		return err
	}
	o.dt = collective.Float64
	r.header(o, "anchor figures")
	j := &job{c: r.c, w: w, dstOff: largest, dt: collective.Float64, op: collective.Sum}
	figures := []struct {
		k     collective.Collective
		dt    collective.DataType
		size  int
		print func(p plan, sec float64)
	}{
		{collective.AllReduceOp, collective.Float64, 8, func(p plan, sec float64) {
			fmt.Printf("allreduce_8B_sum_latency: %.3f us\n", sec*1e6)
		}},
		{collective.AllReduceOp, collective.Float64, 4 << 20, func(p plan, sec float64) {
			fmt.Printf("allreduce_4MiB_time: %.3f ms\nallreduce_4MiB_algbw: %.3f GB/s\n", sec*1e3, perf.AlgBW(p.size, sec))
		}},
	}
	for _, tok := range anchorTokens {
		figures = append(figures, struct {
			k     collective.Collective
			dt    collective.DataType
			size  int
			print func(p plan, sec float64)
		}{collective.AllToAllOp, collective.Bfloat16, n * tok * 7168 * 2, func(p plan, sec float64) {
			fmt.Printf("alltoall_%dtok_x7168_bf16_time: %.3f ms\nalltoall_%dtok_x7168_bf16_algbw: %.3f GB/s\n", tok, sec*1e3, tok, perf.AlgBW(p.size, sec))
		}})
	}
	for _, f := range figures {
		j.dt = f.dt
		p, _, err := j.plan(f.k, f.size)
		if err != nil {
			return err
		}
		sec, wrong, err := r.measure(ctx, o, p)
		if err != nil {
			return fmt.Errorf("%v of %d bytes: %w", f.k, f.size, err)
		}
		if wrong > 0 {
			return fmt.Errorf("%v of %d bytes: %d wrong elements", f.k, f.size, wrong)
		}
		if r.c.Rank() == 0 {
			fmt.Printf("# %v %d B: %v, verified\n", f.k, p.size, p.algo)
			f.print(p, sec)
		}
	}
	return nil
}

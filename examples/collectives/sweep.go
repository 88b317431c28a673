package main

import (
	"context"
	"fmt"

	"github.com/rdmactor/rdmactor/bench/perf"
	"github.com/rdmactor/rdmactor/collective"
)

// sweep runs every collective of o over sizes minB, minB*f, ... maxB and
// prints the table on rank 0.
func (r *rank) sweep(ctx context.Context, o options) error {
	// Sources at 0, destinations at half the window; all-to-all-v sends
	// up to 1.5x the nominal size.
	w, err := r.c.Gin().RegisterWindow(ctx, 4*o.maxB+64, 0)
	if err != nil {
		return err
	}
	j := &job{c: r.c, w: w, dstOff: 2*o.maxB + 64, dt: o.dt, op: o.op, root: o.root}
	r.header(o, "collectives")
	if r.c.Rank() == 0 {
		fmt.Printf("#\n# %-13s %12s %12s %9s %6s %5s %9s %11s %12s %12s %7s\n",
			"collective", "size(B)", "count", "type", "redop", "root", "algorithm", "time(us)", "algbw(GB/s)", "busbw(GB/s)", "#wrong")
	}
	total := 0
	for _, k := range o.colls {
		if (k == collective.AllReduceOp || k == collective.ReduceScatterOp) && !o.dt.Reducible() {
			continue
		}
		for size := o.minB; size <= o.maxB; size *= o.factor {
			p, ok, err := j.plan(k, size)
			if err != nil {
				return err
			}
			if !ok {
				continue
			}
			sec, wrong, err := r.measure(ctx, o, p)
			if err != nil {
				return fmt.Errorf("%v of %d bytes: %w", k, size, err)
			}
			total += wrong
			if r.c.Rank() == 0 {
				alg := perf.AlgBW(p.size, sec)
				fmt.Printf("  %-13v %12d %12d %9v %6s %5s %9v %11.2f %12.3f %12.3f %7d\n",
					k, p.size, p.count, o.dt, redop(k, o), root(k, o), p.algo, sec*1e6, alg, alg*perf.BusFactor(k, r.c.Size()), wrong)
			}
		}
	}
	if r.c.Rank() == 0 {
		fmt.Printf("# wrong elements in total: %d\n", total)
	}
	if total > 0 {
		return fmt.Errorf("%d wrong elements", total)
	}
	return nil
}

func redop(k collective.Collective, o options) string {
	if k == collective.AllReduceOp || k == collective.ReduceScatterOp {
		return o.op.String()
	}
	return "-"
}

func root(k collective.Collective, o options) string {
	if k == collective.BroadcastOp {
		return fmt.Sprint(o.root)
	}
	return "-"
}

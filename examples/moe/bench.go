package main

import (
	"context"
	"encoding/binary"
	"fmt"
	"math"
	"os"
	"slices"
	"strings"
	"time"

	"github.com/rdmactor/rdmactor/barrier"
	"github.com/rdmactor/rdmactor/bench/perf"
	"github.com/rdmactor/rdmactor/bench/twosided"
	"github.com/rdmactor/rdmactor/collective"
	"github.com/rdmactor/rdmactor/gin"
	"github.com/rdmactor/rdmactor/moe"
)

// input is this rank's tokens and routing for one setup.
type input struct {
	tokens  int
	maxT    int // most tokens on any rank
	x       []float32
	idx     []int32
	w       []float32
	routing string // how it was made, for the header
}

// makeInput builds this rank's routing (random, or its slice of the
// trace) and token values: small integers, so that every run checks the
// same numbers. Rank 0 writes the job's routing to s.routeFile if set.
func makeInput(o options, s setup, me, n int) (input, error) {
	rr, err := o.route.Rank(me, n, s.tokens, o.topk, o.experts)
	if err != nil {
		return input{}, err
	}
	in := input{tokens: rr.Tokens, maxT: rr.MaxT, idx: rr.Idx, w: rr.W, routing: rr.Desc}
	trace := rr.Trace
	if trace == nil && s.routeFile != "" && me == 0 {
		trace = &moe.Trace{Tokens: n * s.tokens, TopK: o.topk}
		for r := range n {
			idx, w, _ := moe.RandomRouting(o.route.Seed, r, s.tokens, o.topk, o.experts, o.route.Skew())
			trace.TopkIdx = append(trace.TopkIdx, idx...)
			trace.TopkWeights = append(trace.TopkWeights, w...)
		}
	}
	if s.routeFile != "" && me == 0 {
		if err := writeTrace(trace, s.routeFile); err != nil {
			return in, err
		}
	}
	in.x = make([]float32, in.tokens*o.hidden)
	for i := range in.x {
		in.x[i] = float32((i*7+me*3)%9 - 4)
	}
	return in, nil
}

func writeTrace(t *moe.Trace, path string) error {
	f, err := os.Create(path)
	if err != nil {
		return err
	}
	if strings.HasSuffix(path, ".npz") {
		err = t.WriteNPZ(f)
	} else {
		err = t.WriteCSV(f)
	}
	if cerr := f.Close(); err == nil {
		err = cerr
	}
	return err
}

// runSetup checks and times every mode of s on this rank.
func runSetup[T moe.Elem](ctx context.Context, g *gin.Comm, c *collective.Comm, b barrier.Syncer, o options, s setup, pacing barrier.Pacing) error {
	n, me := g.Size(), g.Rank()
	in, err := makeInput(o, s, me, n)
	if err != nil {
		return err
	}
	normal, ll := slices.Contains(s.modes, "normal"), slices.Contains(s.modes, "ll")
	cfg := moe.Config{Sizes: moe.Sizes{Hidden: o.hidden, TopK: o.topk, NumExperts: o.experts}, Contexts: max(o.contexts, 1),
		PerRow: o.perRow, Pacing: pacing}
	llTokens := min(s.llTokens, in.tokens)
	if normal {
		cfg.MaxTokens = max(in.maxT, 1)
	}
	if ll {
		cfg.MaxLLTokens = max(s.llTokens, 1)
	}
	r := &runner[T]{g: g, b: b, o: o, in: in, n: n, me: me}
	r.name = fmt.Sprintf("%dtok_x%d_%s", in.maxT, o.hidden, moe.DTypeName[T]())
	if me == 0 {
		kind := "processes"
		if o.local > 0 {
			kind = "goroutines"
		}
		fmt.Printf("== moe: %d ranks (%s) over %s, %s, hidden %d, top-%d, %d experts (%d per rank), %d tokens per rank, routing %s\n",
			n, kind, g.Transport(), moe.DTypeName[T](), o.hidden, o.topk, o.experts, o.experts/n, in.maxT, in.routing)
	}
	h, err := moe.New[T](ctx, g, cfg)
	if err != nil {
		return err
	}
	defer h.Close(ctx)
	r.h = h
	if normal {
		if err := r.normal(ctx, c); err != nil {
			return err
		}
	}
	if ll {
		r.in.tokens = llTokens
		r.in.x, r.in.idx, r.in.w = in.x[:llTokens*o.hidden], in.idx[:llTokens*o.topk], in.w[:llTokens*o.topk]
		r.name = fmt.Sprintf("%dtok_x%d_%s", s.llTokens, o.hidden, moe.DTypeName[T]())
		if err := r.lowLatency(ctx); err != nil {
			return err
		}
	}
	return nil
}

// runner is one rank's state for one setup.
type runner[T moe.Elem] struct {
	g    *gin.Comm
	b    barrier.Syncer
	o    options
	in   input
	n    int
	me   int
	h    *moe.Handle[T]
	name string

	lastRecv *moe.Recv[T] // of the last moe round: counts for the byte accounting
}

// dispatcher is what moe.Handle and twosided.Handle have in common.
type dispatcher[T moe.Elem] interface {
	Dispatch(context.Context, []T, []int32, []float32) (*moe.Recv[T], error)
	Combine(context.Context, []T, []T) error
}

// buffers returns this round's tokens as T (x), what Dispatch reads them
// from (xIn: x itself with -copy-in, else the Handle's Input, which x is
// copied into) and a destination for Combine of the same length.
func (r *runner[T]) buffers() (x, xIn, out []T) {
	x = toElems[T](r.in.x)
	xIn = x
	if !r.o.copyIn {
		xIn = r.h.Input()[:len(x)]
		copy(xIn, x)
	}
	return x, xIn, make([]T, len(x))
}

// normal checks and times the normal mode, then the AllToAllV baseline.
func (r *runner[T]) normal(ctx context.Context, c *collective.Comm) error {
	o, H := r.o, r.o.hidden
	x, xIn, out := r.buffers()
	if o.check {
		if err := r.checkNormal(ctx, r.h, xIn, out, "moe"); err != nil {
			return err
		}
	}
	one, err := r.timeNormal(ctx, r.h, xIn, out)
	if err != nil {
		return err
	}
	bytes := crossBytes(r.lastRecv.Counts, H*elemSize[T]())
	if err := r.report("normal", "moe", one, bytes); err != nil {
		return err
	}
	if !o.baseline {
		return nil
	}
	two, err := twosided.New[T](ctx, c, moe.Config{Sizes: moe.Sizes{Hidden: H, TopK: o.topk, NumExperts: o.experts, MaxTokens: r.h.Config().MaxTokens}})
	if err != nil {
		return err
	}
	defer two.Close(ctx)
	if o.check {
		if err := r.checkNormal(ctx, two, x, out, "alltoallv"); err != nil {
			return err
		}
	}
	base, err := r.timeNormal(ctx, two, x, out)
	if err != nil {
		return err
	}
	if err := r.report("normal", "a2av", base, bytes); err != nil {
		return err
	}
	if r.me == 0 {
		fmt.Printf("   one-sided speedup over AllToAllV (a2av time / moe time): dispatch %.2fx, combine %.2fx, dispatch+combine %.2fx\n",
			base.d/one.d, base.c/one.c, base.t/one.t)
	}
	return nil
}

// checkNormal runs one round with the chosen experts and compares every
// combined token with the single-process reference.
func (r *runner[T]) checkNormal(ctx context.Context, d dispatcher[T], x, out []T, what string) error {
	o, H, K := r.o, r.o.hidden, r.o.topk
	f := expertFunc(o.expert, o.experts, H)
	recv, err := d.Dispatch(ctx, x, r.in.idx, r.in.w)
	if err != nil {
		return err
	}
	scratch := make([]float32, 2*H)
	xf := make([]float32, H)
	base := r.me * (o.experts / r.n)
	for i := range recv.NumRecv {
		moe.ExpertOutput(recv.X[i*H:(i+1)*H], recv, i, K, scratch, func(le int, x []T, acc []float32) {
			for j, v := range x {
				xf[j] = toFloat(v)
			}
			f(base+le, xf, acc)
		})
	}
	if err := d.Combine(ctx, recv.X, out); err != nil {
		return err
	}
	return r.verify(ctx, out, false, what+" normal")
}

// timeNormal times warmup+iters rounds of Dispatch then Combine (no
// expert compute between, as DeepEP's benchmarks do) after a barrier each.
func (r *runner[T]) timeNormal(ctx context.Context, d dispatcher[T], x, out []T) (stats, error) {
	return r.time(ctx, func() (time.Duration, time.Duration, error) {
		t0 := time.Now()
		recv, err := d.Dispatch(ctx, x, r.in.idx, r.in.w)
		if err != nil {
			return 0, 0, err
		}
		t1 := time.Now()
		if _, ok := d.(*moe.Handle[T]); ok {
			r.lastRecv = recv
		}
		err = d.Combine(ctx, recv.X, out)
		return t1.Sub(t0), time.Since(t1), err
	})
}

// lowLatency checks and times DispatchLL and CombineLL.
func (r *runner[T]) lowLatency(ctx context.Context) error {
	o, H, K := r.o, r.o.hidden, r.o.topk
	_, xIn, out := r.buffers()
	if o.check {
		f := expertFunc(o.expert, o.experts, H)
		recv, err := r.h.DispatchLL(ctx, xIn, r.in.idx)
		if err != nil {
			return err
		}
		xf, yf := make([]float32, H), make([]float32, H)
		base := r.me * r.h.LocalExperts()
		for le := range r.h.LocalExperts() {
			for s := range r.n {
				rows := recv.Rows(le, s)
				for j := 0; j < len(rows); j += H {
					for i, v := range rows[j : j+H] {
						xf[i] = toFloat(v)
					}
					f(base+le, xf, yf)
					moe.Store(rows[j:j+H], yf)
				}
			}
		}
		if err := r.h.CombineLL(ctx, recv.X, r.in.w, out); err != nil {
			return err
		}
		if err := r.verify(ctx, out, true, "moe low-latency"); err != nil {
			return err
		}
	}
	st, err := r.time(ctx, func() (time.Duration, time.Duration, error) {
		t0 := time.Now()
		recv, err := r.h.DispatchLL(ctx, xIn, r.in.idx)
		if err != nil {
			return 0, 0, err
		}
		t1 := time.Now()
		err = r.h.CombineLL(ctx, recv.X, r.in.w, out)
		return t1.Sub(t0), time.Since(t1), err
	})
	if err != nil {
		return err
	}
	// Bytes across ranks: one row per (token, expert) on another rank.
	rows := 0
	L := r.h.LocalExperts()
	for _, e := range r.in.idx[:r.in.tokens*K] {
		if e >= 0 && int(e)/L != r.me {
			rows++
		}
	}
	all, err := r.g.AllGather(ctx, binary.LittleEndian.AppendUint64(nil, uint64(rows)))
	if err != nil {
		return err
	}
	total := 0.0
	for _, b := range all {
		total += float64(binary.LittleEndian.Uint64(b))
	}
	return r.report("ll", "moe", st, total/float64(r.n)*float64(H*elemSize[T]()))
}

// verify compares out with the reference of this rank's tokens and
// reports the largest error over all ranks (rank 0 prints it).
func (r *runner[T]) verify(ctx context.Context, out []T, ll bool, what string) error {
	o, H := r.o, r.o.hidden
	f := expertFunc(o.expert, o.experts, H)
	want := reference[T](r.in, H, o.topk, f)
	worst := 0.0
	for t := range r.in.tokens {
		big := 0.0
		for _, v := range want[t*H : (t+1)*H] {
			big = max(big, math.Abs(v))
		}
		for i := t * H; i < (t+1)*H; i++ {
			worst = max(worst, math.Abs(float64(toFloat(out[i]))-want[i])/(1+big))
		}
	}
	tol := 1e-5
	if elemSize[T]() == 2 {
		tol = 3e-2 // bf16: partial sums travel rounded (2^-8), and the sum is rounded once more
	}
	all, err := r.g.AllGather(ctx, binary.LittleEndian.AppendUint64(nil, math.Float64bits(worst)))
	if err != nil {
		return err
	}
	for _, b := range all {
		worst = max(worst, math.Float64frombits(binary.LittleEndian.Uint64(b)))
	}
	if worst > tol {
		return fmt.Errorf("check %s: %s experts: relative error %.3g over tolerance %.3g", what, o.expert, worst, tol)
	}
	if r.me == 0 {
		fmt.Printf("   check %s, %s experts: matches the single-process reference on every rank (max relative error %.2g, tolerance %.2g)\n", what, o.expert, worst, tol)
	}
	return nil
}

// stats are the slowest rank's median times (seconds) of one mode.
type stats struct{ d, c, t float64 }

// time runs warmup+iters rounds of round, each after a barrier, and
// returns per-phase medians of the slowest rank's time per round.
func (r *runner[T]) time(ctx context.Context, round func() (time.Duration, time.Duration, error)) (stats, error) {
	o := r.o
	var rounds [][]time.Duration
	for i := range o.warmup + o.iters {
		if err := r.b.Sync(ctx, barrier.FenceNone); err != nil {
			return stats{}, err
		}
		d, c, err := round()
		if err != nil {
			return stats{}, fmt.Errorf("round %d: %w", i, err)
		}
		if i >= o.warmup {
			rounds = append(rounds, []time.Duration{d, c, d + c})
		}
	}
	m, err := perf.SlowestMedians(ctx, r.g, 3, rounds)
	if err != nil {
		return stats{}, err
	}
	return stats{m[0], m[1], m[2]}, nil
}

// report prints one mode's figures (rank 0).
func (r *runner[T]) report(mode, impl string, s stats, bytes float64) error {
	if r.me != 0 {
		return nil
	}
	gbs := func(sec float64) float64 { return bytes / sec / 1e9 }
	label := impl
	if impl == "a2av" {
		label = "alltoallv"
	}
	fmt.Printf("   %-10s %-6s dispatch %9.1f us %7.2f GB/s | combine %9.1f us %7.2f GB/s | dispatch+combine %9.1f us   (median of %d, slowest rank; %.2f MB cross-rank per rank per phase)\n",
		label, mode, s.d*1e6, gbs(s.d), s.c*1e6, gbs(s.c), s.t*1e6, r.o.iters, bytes/1e6)
	if r.o.figures {
		p := fmt.Sprintf("%s_%s_%s", impl, mode, r.name)
		fmt.Printf("%s_dispatch_time: %.3f us\n%s_combine_time: %.3f us\n%s_total_time: %.3f us\n", p, s.d*1e6, p, s.c*1e6, p, s.t*1e6)
		fmt.Printf("%s_dispatch_bw: %.3f GB/s\n%s_combine_bw: %.3f GB/s\n", p, gbs(s.d), p, gbs(s.c))
	}
	return nil
}

// crossBytes is the mean over ranks of the row bytes a rank receives from
// other ranks in one dispatch (and sends back in one combine).
func crossBytes(m moe.CountMatrix, rowB int) float64 {
	rows := 0
	for s := range m.Ranks {
		for r := range m.Ranks {
			if s != r {
				rows += m.At(s, r)
			}
		}
	}
	return float64(rows) / float64(m.Ranks) * float64(rowB)
}

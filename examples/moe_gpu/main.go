// Command moe_gpu runs expert-parallel MoE dispatch and combine on GPUs
// (package moe/gpu: CUDA kernels on the device-side gin API, LSA path over
// NVLink), one rank per GPU, with the flags and output of examples/moe (the
// CPU demo), which will run it as "moe -device gpu": it checks one round
// against a single-process reference, then times dispatch and combine
// (per phase GPU time in µs, CUDA events, each round started together on
// every rank by a device barrier; and the bandwidth of the bytes that cross
// ranks). A phase's time is what it adds to a stream behind a kernel, as
// in a model, where the router's kernel comes before the dispatch and the
// experts' before the combine (-timing kernel: runner.time says how);
// -timing event times it between events right before and after it, which
// hold its launch back by about 3 µs more (docs/moe_gpu.md).
//
// Run it as processes through the launcher, one per GPU (CUDA IPC maps
// the peers' windows):
//
//	go build -o bin/ ./cmd/rdmarun ./examples/moe_gpu
//	bin/rdmarun -np 2 bin/moe_gpu                  # small defaults
//	bin/rdmarun -np 2 bin/moe_gpu -deepep -fp8 both # DeepEP's sizes: hidden 7168, top-8, 256 experts, 128 and 4096 tokens
//
// or with ranks as goroutines of one process: moe_gpu -local 2 (GPU r%count
// for rank r). The NCCL anchor (PyTorch all_to_all_single of the same
// bytes) is bench/nccl/moe_nccl_anchor.py; scripts/moe_gpu_device.sh
// runs both and prints them side by side.
//
// Flags of examples/moe that have no GPU meaning (-transport, -contexts,
// -per-row, -idle, -spins, -baseline, -cpuprofile) are accepted and
// ignored; -dtype is bf16 only; -expert is identity or scaled.
package main

import (
	"bytes"
	"context"
	"encoding/binary"
	"errors"
	"flag"
	"fmt"
	"hash/fnv"
	"log"
	"math"
	"os"
	"slices"
	"strings"
	"time"

	"github.com/rdmactor/rdmactor/bench/perf"
	"github.com/rdmactor/rdmactor/examples/internal/moeex"
	"github.com/rdmactor/rdmactor/gin"
	"github.com/rdmactor/rdmactor/internal/memword"
	"github.com/rdmactor/rdmactor/moe"
	gpumoe "github.com/rdmactor/rdmactor/moe/gpu"
	"github.com/rdmactor/rdmactor/transport/gpu"
	"github.com/rdmactor/rdmactor/transport/gpu/cuda"
)

// options are the command line.
type options struct {
	local    int
	tokens   int
	llTokens int
	hidden   int
	topk     int
	experts  int
	modes    []string
	route    *moeex.Flags
	expert   gpumoe.Expert
	check    bool
	iters    int
	warmup   int
	copyIn   bool
	deepep   bool
	figures  bool
	fp8      []bool
	blocks   int
	trace    bool
	timing   string
	timeout  time.Duration
	ignored  string
	ignoredB bool
}

func main() {
	log.SetFlags(0)
	o := parseFlags()
	ctx, cancel := context.WithTimeout(context.Background(), o.timeout)
	defer cancel()
	config := func(n int) gin.Config {
		need := 0
		for _, s := range setups(o) {
			need = max(need, gpumoe.Signals(n, gpumoe.Config{Sizes: moe.Sizes{NumExperts: s.experts}}))
		}
		return gin.Config{Signals: barriers + need}
	}
	err := gin.RunRanks(ctx, o.local, config, func(ctx context.Context, gc *gin.Comm) error {
		return run(ctx, gc, o)
	})
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		os.Exit(1)
	}
}

// barriers is the device barriers of the gpu.Comm (gpu.Config.Barriers);
// the moe handles take the device signals after them.
const barriers = 32

func parseFlags() options {
	var o options
	var expert, dtype, fp8 string
	flag.IntVar(&o.local, "local", 0, "run this many ranks as goroutines of this process (GPU r%count for rank r) instead of reading RDMACTOR_* from the launcher")
	flag.IntVar(&o.tokens, "tokens", 512, "tokens per rank (normal mode)")
	flag.IntVar(&o.llTokens, "ll-tokens", 128, "tokens per rank in low-latency mode (DeepEP: up to 128)")
	flag.IntVar(&o.hidden, "hidden", 1024, "elements per token row")
	flag.IntVar(&o.topk, "topk", 8, "experts per token")
	flag.IntVar(&o.experts, "experts", 64, "experts, spread evenly over the ranks")
	flag.StringVar(&dtype, "dtype", "bf16", "row element type: bf16")
	flag.StringVar(&fp8, "fp8", "off", "low-latency dispatch in FP8 e4m3 with per-128-channel scales: off, on, or both (bf16, then FP8)")
	o.route = moeex.AddFlags()
	flag.StringVar(&expert, "expert", "scaled", "experts of the check round: identity or scaled (expert e multiplies by 1+e%4)")
	flag.BoolVar(&o.check, "check", true, "check one round against a single-process reference before timing")
	flag.IntVar(&o.iters, "iters", 20, "timed rounds")
	flag.IntVar(&o.warmup, "warmup", 3, "untimed rounds first")
	flag.BoolVar(&o.copyIn, "copy-in", false, "pass x as its own device buffer (the dispatch kernels read it there) instead of writing it into Handle.Input")
	flag.BoolVar(&o.deepep, "deepep", false, "DeepEP's sizes: hidden 7168, top-8, 256 experts, bf16; 128 tokens (normal and low-latency), then 4096 (normal)")
	flag.BoolVar(&o.figures, "figures", false, "also print name: value unit lines")
	flag.IntVar(&o.blocks, "blocks", 0, "grid of the data kernels (default: one block per SM)")
	flag.StringVar(&o.timing, "timing", "kernel", "how a phase is timed: kernel (the GPU time it adds to a stream behind a kernel) or event (between events right before and after it)")
	flag.BoolVar(&o.trace, "trace", false, "low-latency mode: print each rank's median %globaltimer trace of the kernels (needs RDMACTOR_MOE_TRACE=1)")
	flag.DurationVar(&o.timeout, "timeout", 10*time.Minute, "deadline for the whole run; kernels still waiting then are aborted")
	// examples/moe's flags without a GPU meaning.
	for _, name := range []string{"transport", "idle", "cpuprofile", "write-routing"} {
		flag.StringVar(&o.ignored, name, "", "ignored on GPUs (examples/moe)")
	}
	for _, name := range []string{"per-row", "baseline"} {
		flag.BoolVar(&o.ignoredB, name, false, "ignored on GPUs (examples/moe; the GPU baseline is NCCL: bench/nccl/moe_nccl_anchor.py)")
	}
	var ignoredI int
	flag.IntVar(&ignoredI, "contexts", 1, "ignored on GPUs (examples/moe)")
	flag.IntVar(&ignoredI, "spins", 0, "ignored on GPUs (examples/moe)")
	flag.Parse()
	if err := o.route.Check(); err != nil {
		log.Fatal(err)
	}
	o.modes = o.route.Modes
	if o.timing != "kernel" && o.timing != "event" {
		log.Fatalf("-timing %q: want kernel or event", o.timing)
	}
	if dtype != "bf16" {
		log.Fatalf("-dtype %q: the GPU kernels carry bf16 (and FP8 with -fp8)", dtype)
	}
	switch expert {
	case "identity":
		o.expert = gpumoe.Identity
	case "scaled":
		o.expert = gpumoe.Scaled
	default:
		log.Fatalf("-expert %q: want identity or scaled on GPUs", expert)
	}
	switch fp8 {
	case "off":
		o.fp8 = []bool{false}
	case "on":
		o.fp8 = []bool{true}
	case "both":
		o.fp8 = []bool{false, true}
	default:
		log.Fatalf("-fp8 %q: want off, on or both", fp8)
	}
	return o
}

// setup is one size to run.
type setup struct {
	tokens, llTokens      int
	hidden, topk, experts int
	modes                 []string
}

func setups(o options) []setup {
	if o.deepep {
		return []setup{
			{tokens: 128, llTokens: 128, hidden: 7168, topk: 8, experts: 256, modes: []string{"normal", "ll"}},
			{tokens: 4096, hidden: 7168, topk: 8, experts: 256, modes: []string{"normal"}},
		}
	}
	return []setup{{tokens: o.tokens, llTokens: min(o.llTokens, o.tokens), hidden: o.hidden, topk: o.topk, experts: o.experts, modes: o.modes}}
}

func run(ctx context.Context, gc *gin.Comm, o options) (err error) {
	cfg := gpu.Config{Path: gpu.PathLSA, Barriers: barriers}
	if o.local > 0 {
		if err := cuda.Load(); err != nil {
			return err
		}
		ngpu, err := cuda.DeviceCount()
		if err != nil {
			return err
		}
		dev := gc.Rank() % max(ngpu, 1)
		cfg.Device = &dev
	}
	g, err := gpu.New(ctx, gc, cfg)
	if err != nil {
		return err
	}
	defer func() { err = errors.Join(err, g.Close()) }()
	mod, err := g.Load("moe_gpu_nop.cu", nopSource)
	if err != nil {
		return err
	}
	defer func() { err = errors.Join(err, mod.Close()) }()
	nop, err := mod.Function("nop")
	if err != nil {
		return err
	}
	for _, s := range setups(o) {
		if err := runSetup(ctx, gc, g, nop, o, s); err != nil {
			return fmt.Errorf("%d tokens: %w", s.tokens, err)
		}
	}
	return gc.Barrier(ctx)
}

// input is this rank's tokens and routing for one setup.
type input struct {
	tokens  int
	maxT    int // most tokens on any rank
	x       []uint16
	idx     []int32
	w       []float32
	routing string
}

// makeInput is this rank's routing (moeex.Routing.Rank) and small integer
// token values, as bf16, as examples/moe makes them.
func makeInput(o options, s setup, me, n int) (input, error) {
	rr, err := o.route.Rank(me, n, s.tokens, s.topk, s.experts)
	if err != nil {
		return input{}, err
	}
	in := input{tokens: rr.Tokens, maxT: rr.MaxT, idx: rr.Idx, w: rr.W, routing: rr.Desc}
	in.x = make([]uint16, in.tokens*s.hidden)
	for i := range in.x {
		in.x[i] = moe.BF16(float32((i*7+me*3)%9 - 4))
	}
	return in, nil
}

// nopSource is the kernel that stands for the kernel ahead of a timed
// phase (runner.time): one warp that does nothing.
const nopSource = `extern "C" __global__ void nop() {}`

func runSetup(ctx context.Context, gc *gin.Comm, g *gpu.Comm, nop *cuda.Function, o options, s setup) error {
	n, me := gc.Size(), gc.Rank()
	in, err := makeInput(o, s, me, n)
	if err != nil {
		return err
	}
	if me == 0 {
		kind := "processes"
		if o.local > 0 {
			kind = "goroutines"
		}
		name, _ := g.Device().Name()
		fmt.Printf("== moe: %d ranks (%s) over gpu %v (%s), bf16, hidden %d, top-%d, %d experts (%d per rank), %d tokens per rank, routing %s\n",
			n, kind, g.Path(), name, s.hidden, s.topk, s.experts, s.experts/n, in.maxT, in.routing)
	}
	r := &runner{gc: gc, g: g, nop: nop, o: o, s: s, in: in, n: n, me: me}
	if slices.Contains(s.modes, "normal") {
		r.name = fmt.Sprintf("%dtok_x%d_bf16", in.maxT, s.hidden)
		if err := r.normal(ctx); err != nil {
			return err
		}
	}
	if slices.Contains(s.modes, "ll") {
		t := min(s.llTokens, in.tokens)
		r.in.tokens = t
		r.in.x, r.in.idx, r.in.w = in.x[:t*s.hidden], in.idx[:t*s.topk], in.w[:t*s.topk]
		for _, fp8 := range o.fp8 {
			r.name = fmt.Sprintf("%dtok_x%d_bf16", s.llTokens, s.hidden)
			if fp8 {
				r.name = fmt.Sprintf("%dtok_x%d_fp8", s.llTokens, s.hidden)
			}
			if err := r.lowLatency(ctx, max(s.llTokens, 1), fp8); err != nil {
				return err
			}
		}
	}
	return nil
}

// runner is one rank's state for one setup.
type runner struct {
	gc   *gin.Comm
	g    *gpu.Comm
	nop  *cuda.Function
	o    options
	s    setup
	in   input
	n    int
	me   int
	name string

	h              *gpumoe.Handle
	x, idx, w, out cuda.DevicePtr
	allocs         []cuda.DevicePtr
	gate           *cuda.HostMem
	events         [nEvents]*cuda.Event
	tracing        bool
	traces         []gpumoe.LLTrace
}

// open makes the handle of a mode and uploads this rank's input: x into
// Input (or its own buffer with -copy-in), the routing, the output.
func (r *runner) open(ctx context.Context, cfg gpumoe.Config) error {
	h, err := gpumoe.New(ctx, r.g, cfg)
	if err != nil {
		return err
	}
	r.h = h
	c := r.g.Context()
	up := func(b []byte) (cuda.DevicePtr, error) {
		p, err := c.MemAlloc(max(len(b), 16))
		if err != nil {
			return 0, err
		}
		r.allocs = append(r.allocs, p)
		return p, c.CopyToDevice(p, b)
	}
	H := r.s.hidden
	xb := make([]byte, 2*len(r.in.x))
	for i, v := range r.in.x {
		binary.LittleEndian.PutUint16(xb[2*i:], v)
	}
	if r.o.copyIn {
		if r.x, err = up(xb); err != nil {
			return err
		}
	} else {
		rs := h.RowStride()
		rows := make([]byte, r.in.tokens*rs)
		for t := range r.in.tokens {
			copy(rows[t*rs:], xb[t*2*H:(t+1)*2*H])
		}
		if err := c.CopyToDevice(h.Input(), rows); err != nil {
			return err
		}
	}
	ib, wb := make([]byte, 4*len(r.in.idx)), make([]byte, 4*len(r.in.w))
	for i, v := range r.in.idx {
		binary.LittleEndian.PutUint32(ib[4*i:], uint32(v))
		binary.LittleEndian.PutUint32(wb[4*i:], math.Float32bits(r.in.w[i]))
	}
	if r.idx, err = up(ib); err != nil {
		return err
	}
	if r.w, err = up(wb); err != nil {
		return err
	}
	// Poisoned (bf16 NaN): a token the combine misses fails the check.
	if r.out, err = up(bytes.Repeat([]byte{0xff}, 2*r.in.tokens*H)); err != nil {
		return err
	}
	if r.gate, err = c.HostAlloc(8); err != nil {
		return err
	}
	for i := range r.events {
		if r.events[i], err = c.NewEvent(); err != nil {
			return err
		}
	}
	// Setup (allocations, copies) synchronizes a context: done on every
	// rank before any kernel waits on a peer.
	return r.gc.Barrier(ctx)
}

// close releases what open made (collective: the handle's window).
func (r *runner) close(ctx context.Context) error {
	var errs []error
	if r.h != nil {
		errs = append(errs, r.h.Close(ctx))
		r.h = nil
	}
	for _, p := range r.allocs {
		errs = append(errs, r.g.Context().MemFree(p))
	}
	r.allocs, r.x = nil, 0
	if r.gate != nil {
		errs = append(errs, r.gate.Close())
		r.gate = nil
	}
	for i, e := range r.events {
		if e != nil {
			errs = append(errs, e.Close())
			r.events[i] = nil
		}
	}
	return errors.Join(errs...)
}

func (r *runner) normal(ctx context.Context) (err error) {
	s, H := r.s, r.s.hidden
	cfg := gpumoe.Config{Sizes: moe.Sizes{Hidden: H, TopK: s.topk, NumExperts: s.experts, MaxTokens: max(r.in.maxT, 1)},
		Signal0: 0, Blocks: r.o.blocks}
	if err := r.open(ctx, cfg); err != nil {
		return errors.Join(err, r.close(ctx))
	}
	defer func() { err = errors.Join(err, r.close(ctx)) }()
	h := r.h
	// One round for the counts (and the check).
	recv, err := h.Dispatch(r.x, r.idx, r.w, r.in.tokens)
	if err != nil {
		return err
	}
	if err := h.RunExperts(recv, r.o.expert); err != nil {
		return err
	}
	if err := h.Combine(r.out); err != nil {
		return err
	}
	if err := h.Sync(ctx); err != nil {
		return err
	}
	got, err := recv.Read()
	if err != nil {
		return err
	}
	if r.o.check {
		if err := r.verify(ctx, false, "moe normal"); err != nil {
			return err
		}
	}
	dispatch := func() error {
		_, err := h.Dispatch(r.x, r.idx, r.w, r.in.tokens)
		return err
	}
	st, err := r.time(ctx, false, dispatch, func() error { return h.Combine(r.out) })
	if err != nil {
		return err
	}
	// The layout apart, in rounds of their own (Handle.Trace): a layout
	// kernel of its own and an event after it cost the 128-token dispatch
	// 8 us (34.4 us instead of 26.7, docs/moe_gpu.md), so the rounds above
	// have neither.
	h.Trace(r.events[evLayout])
	lt, err := r.time(ctx, true, dispatch, func() error { return h.Combine(r.out) })
	h.Trace(nil)
	if err != nil {
		return err
	}
	st.l = lt.l
	// Bytes across ranks: rows received from other ranks, mean over ranks.
	rows, pairs := 0, 0
	for a := range r.n {
		for b := range r.n {
			if a != b {
				rows += got.Counts.At(a, b)
				pairs++
			}
		}
	}
	bytes := float64(rows) / float64(r.n) * float64(2*H)
	return r.report("normal", st, bytes, bytes, float64(rows)/float64(max(pairs, 1)))
}

func (r *runner) lowLatency(ctx context.Context, maxLL int, fp8 bool) (err error) {
	s, H, K := r.s, r.s.hidden, r.s.topk
	cfg := gpumoe.Config{Sizes: moe.Sizes{Hidden: H, TopK: K, NumExperts: s.experts, MaxLLTokens: maxLL}, FP8: fp8, Blocks: r.o.blocks}
	if err := r.open(ctx, cfg); err != nil {
		return errors.Join(err, r.close(ctx))
	}
	defer func() { err = errors.Join(err, r.close(ctx)) }()
	h := r.h
	mode := "ll"
	if fp8 {
		mode = "ll-fp8"
	}
	if r.o.check {
		recv, err := h.DispatchLL(r.x, r.idx, r.in.tokens)
		if err != nil {
			return err
		}
		if err := h.RunExpertsLL(recv, r.o.expert); err != nil {
			return err
		}
		if err := h.CombineLL(r.w, r.out); err != nil {
			return err
		}
		if err := h.Sync(ctx); err != nil {
			return err
		}
		what := "moe low-latency"
		if fp8 {
			what += " fp8"
		}
		if err := r.verify(ctx, fp8, what); err != nil {
			return err
		}
	}
	r.tracing, r.traces = r.o.trace, nil
	st, err := r.time(ctx, false, func() error {
		_, err := h.DispatchLL(r.x, r.idx, r.in.tokens)
		return err
	}, func() error { return h.CombineLL(r.w, r.out) })
	r.tracing = false
	if err != nil {
		return err
	}
	if r.o.trace {
		r.printTrace(mode)
	}
	// Bytes across ranks: one row per (token, expert) on another rank.
	rows := 0
	L := s.experts / r.n
	for _, e := range r.in.idx {
		if e >= 0 && int(e)/L != r.me {
			rows++
		}
	}
	all, err := r.gc.AllGather(ctx, binary.LittleEndian.AppendUint64(nil, uint64(rows)))
	if err != nil {
		return err
	}
	total := 0.0
	for _, b := range all {
		total += float64(binary.LittleEndian.Uint64(b))
	}
	mean := total / float64(r.n)
	dispB := float64(2 * H)
	if fp8 {
		dispB = float64(H + 4*((H+gpumoe.FP8Group-1)/gpumoe.FP8Group)) // e4m3 row and its scales
	}
	return r.report(mode, st, mean*dispB, mean*float64(2*H), mean/float64(max(r.n-1, 1)))
}

// verify compares the output with the float64 reference of this rank's
// tokens and reports the largest error over all ranks (rank 0 prints it).
func (r *runner) verify(ctx context.Context, fp8 bool, what string) error {
	H := r.s.hidden
	b := make([]byte, 2*r.in.tokens*H)
	if err := r.g.Context().CopyFromDevice(b, r.out); err != nil {
		return err
	}
	out := make([]uint16, r.in.tokens*H)
	for i := range out {
		out[i] = binary.LittleEndian.Uint16(b[2*i:])
	}
	want := gpumoe.Reference(r.in.x, r.in.idx, r.in.w, H, r.s.topk, r.o.expert, fp8)
	worst := gpumoe.RelError(out, want, H)
	const tol = 3e-2 // bf16: rows travel rounded (2^-8), and the sum is rounded once more
	// The digest: FNV-1a of every rank's output bits, in rank order; two
	// builds of the kernels that round alike print the same one.
	d := fnv.New64a()
	d.Write(b)
	msg := binary.LittleEndian.AppendUint64(nil, math.Float64bits(worst))
	all, err := r.gc.AllGather(ctx, binary.LittleEndian.AppendUint64(msg, d.Sum64()))
	if err != nil {
		return err
	}
	d.Reset()
	for _, v := range all {
		worst = max(worst, math.Float64frombits(binary.LittleEndian.Uint64(v)))
		d.Write(v[8:16])
	}
	expert := map[gpumoe.Expert]string{gpumoe.Identity: "identity", gpumoe.Scaled: "scaled"}[r.o.expert]
	if !(worst <= tol) {
		return fmt.Errorf("check %s: %s experts: relative error %.3g over tolerance %.3g", what, expert, worst, tol)
	}
	if r.me == 0 {
		fmt.Printf("   check %s, %s experts: matches the single-process reference on every rank (max relative error %.2g, tolerance %.2g; output digest %016x)\n", what, expert, worst, tol, d.Sum64())
	}
	return nil
}

// stats are the slowest rank's median times (seconds) of one mode: dispatch,
// combine, both, and the layout as a kernel of its own in traced rounds
// (normal mode; else 0; the timed dispatch fuses it).
type stats struct{ d, c, t, l float64 }

// The events of a round (runner.events).
const (
	evStart  = iota // after the start line
	evLayout        // between the layout and dispatch kernels (Handle.Trace), in layout rounds
	evDisp          // -timing kernel: before the nop right ahead of the dispatch
	evMid           // after the dispatch
	evComb          // -timing kernel: before the nop right ahead of the combine
	evEnd           // after the combine
	nEvents
)

// time runs warmup+iters rounds of dispatch then combine, each queued
// behind a gate and a device barrier (Handle.StartLine) that opens once
// every rank queued its round, and timed on the GPU with events; it returns
// per-phase medians of the slowest rank's time per round. With layout, the
// dispatch records events[evLayout] between its layout and dispatch kernels
// (Handle.Trace) and stats.l is the layout's time; else 0.
//
// -timing event: a phase's time is the span between the events right
// before and after it. An event between two kernels holds the second one's
// launch back: a kernel queued right behind another starts about 3 us
// sooner than one queued behind an event (docs/moe_gpu.md), which is how
// a model queues the dispatch (behind the router's kernel) and the combine
// (behind the experts'). -timing kernel (the default) queues a phase
// behind a kernel: a round is
//
//	start line, event A, nop, event B, nop, phase, event C
//
// per phase, and the phase's time is B..C minus A..B: the span of a nop
// and the phase, less that of a nop alone, both measured from an event;
// what the phase adds to a stream behind a kernel, its launch behind that
// kernel included. (For the dispatch A is evStart, B evDisp, C evMid; for
// the combine evMid, evComb, evEnd.)
func (r *runner) time(ctx context.Context, layout bool, dispatch, combine func() error) (stats, error) {
	o := r.o
	st := r.g.Stream()
	flag := memword.Uint64(r.gate.Bytes(), 0)
	behind := o.timing == "kernel"
	// queue records ev and, with -timing kernel, queues a nop, records at
	// and queues a nop after it.
	queue := func(ev, at int) error {
		err := r.events[ev].Record(st)
		if err == nil && behind {
			err = r.g.Launch(r.nop, cuda.Dim3{X: 1}, cuda.Dim3{X: 32}, 0)
			if err == nil {
				err = r.events[at].Record(st)
			}
			if err == nil {
				err = r.g.Launch(r.nop, cuda.Dim3{X: 1}, cuda.Dim3{X: 32}, 0)
			}
		}
		return err
	}
	// span is the time of a phase whose events are a, b (kernel timing)
	// and c: b..c less a..b, or a..c.
	span := func(a, b, c int) (time.Duration, error) {
		if !behind {
			return cuda.Elapsed(r.events[a], r.events[c])
		}
		base, err1 := cuda.Elapsed(r.events[a], r.events[b])
		t, err2 := cuda.Elapsed(r.events[b], r.events[c])
		return t - base, errors.Join(err1, err2)
	}
	var rounds [][]time.Duration
	for i := range o.warmup + o.iters {
		flag.Store(0)
		err := r.h.StartLine(r.gate.Dev())
		if err == nil {
			err = queue(evStart, evDisp)
		}
		if err == nil {
			err = dispatch()
		}
		if err == nil {
			err = queue(evMid, evComb)
		}
		if err == nil {
			err = combine()
		}
		if err == nil {
			err = r.events[evEnd].Record(st)
		}
		berr := r.gc.Barrier(ctx) // every rank queued its round
		flag.Store(1)
		if err := errors.Join(err, berr, r.h.Sync(ctx)); err != nil {
			return stats{}, fmt.Errorf("round %d: %w", i, err)
		}
		d, err1 := span(evStart, evDisp, evMid)
		c, err2 := span(evMid, evComb, evEnd)
		var l time.Duration
		var err3 error
		if layout {
			l, err3 = span(evStart, evDisp, evLayout)
		}
		if err := errors.Join(err1, err2, err3); err != nil {
			return stats{}, err
		}
		if i >= o.warmup {
			rounds = append(rounds, []time.Duration{d, c, d + c, l})
			if r.tracing {
				tr, err := r.h.TraceLL(ctx)
				if err != nil {
					return stats{}, err
				}
				r.traces = append(r.traces, tr)
			}
		} else if r.tracing {
			if _, err := r.h.TraceLL(ctx); err != nil {
				return stats{}, err
			}
		}
	}
	m, err := perf.SlowestMedians(ctx, r.gc, 4, rounds)
	if err != nil {
		return stats{}, err
	}
	return stats{m[0], m[1], m[2], m[3]}, nil
}

// report prints one mode's figures (rank 0), as examples/moe does.
func (r *runner) report(mode string, s stats, dispBytes, combBytes, rowsPerPair float64) error {
	if r.me != 0 {
		return nil
	}
	gbs := func(b, sec float64) float64 { return b / sec / 1e9 }
	fmt.Printf("   %-10s %-6s dispatch %9.1f us %7.2f GB/s | combine %9.1f us %7.2f GB/s | dispatch+combine %9.1f us   (median of %d, slowest rank; %.2f MB cross-rank per rank per phase)\n",
		"moe", mode, s.d*1e6, gbs(dispBytes, s.d), s.c*1e6, gbs(combBytes, s.c), s.t*1e6, r.o.iters, dispBytes/1e6)
	if r.o.figures {
		p := fmt.Sprintf("moe_%s_%s", strings.ReplaceAll(mode, "-", "_"), r.name)
		fmt.Printf("%s_dispatch_time: %.3f us\n%s_combine_time: %.3f us\n%s_total_time: %.3f us\n", p, s.d*1e6, p, s.c*1e6, p, s.t*1e6)
		fmt.Printf("%s_dispatch_bw: %.3f GB/s\n%s_combine_bw: %.3f GB/s\n", p, gbs(dispBytes, s.d), p, gbs(combBytes, s.c))
		fmt.Printf("%s_rows_per_pair: %.1f rows\n", p, rowsPerPair)
		if mode == "normal" {
			fmt.Printf("%s_layout_time: %.3f us\n", p, s.l*1e6)
		}
	}
	return nil
}

// printTrace prints this rank's medians over the timed rounds of the
// low-latency trace (Handle.TraceLL): µs after the StartLine kernel ended
// (with -timing kernel, an event and two nop kernels come between it and
// the dispatch, and between the dispatch and the combine), and each
// kernel's span from its first block's start to its last block's end.
func (r *runner) printTrace(mode string) {
	type T = gpumoe.LLTrace
	points := []struct {
		name string
		at   func(T) time.Duration
	}{
		{"dispatch start", func(t T) time.Duration { return t.DispatchStart }},
		{"entries", func(t T) time.Duration { return t.DispatchEntries }},
		{"pull", func(t T) time.Duration { return t.DispatchPull }},
		{"end", func(t T) time.Duration { return t.DispatchEnd }},
		{"| combine start", func(t T) time.Duration { return t.CombineStart }},
		{"stores", func(t T) time.Duration { return t.CombineStores }},
		{"flags", func(t T) time.Duration { return t.CombineFlags }},
		{"end", func(t T) time.Duration { return t.CombineEnd }},
		{"| kernel spans: dispatch", func(t T) time.Duration { return t.DispatchEnd - t.DispatchStart }},
		{"combine", func(t T) time.Duration { return t.CombineEnd - t.CombineStart }},
	}
	var b strings.Builder
	fmt.Fprintf(&b, "   trace rank %d %s (us after the start line):", r.me, mode)
	for _, p := range points {
		v := make([]float64, 0, len(r.traces))
		for _, t := range r.traces {
			v = append(v, p.at(t).Seconds()*1e6)
		}
		m := 0.0
		if len(v) > 0 {
			slices.Sort(v)
			m = v[len(v)/2]
		}
		fmt.Fprintf(&b, " %s %.2f", p.name, m)
	}
	fmt.Println(b.String())
}

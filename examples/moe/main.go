// Command moe runs expert-parallel MoE dispatch and combine (package moe,
// DeepEP-style, on gin's one-sided puts and signals) on N ranks: it
// checks one round against a single-process reference, then times
// dispatch and combine like DeepEP's tests (per phase time in µs and the
// bandwidth of the bytes that cross ranks), beside a same-run baseline
// doing the same data movement with collective.AllToAllV (package
// bench/twosided).
//
// Run it as processes through the launcher:
//
//	go build -o bin/ ./cmd/rdmarun ./examples/moe
//	bin/rdmarun -np 2 bin/moe                  # small defaults, seconds
//	bin/rdmarun -np 2 bin/moe -deepep          # DeepEP's sizes: hidden 7168, top-8, 256 experts, 128 and 4096 tokens
//
// or with ranks as goroutines of one process: moe -local 2. The provider
// comes from RDMACTOR_TRANSPORT (rdmarun -transport) or -transport.
//
// Routing is random top-k, uniform or Zipf-skewed (-skew, -zipf), with a
// fixed -seed; -routing FILE replays a recorded router trace instead
// (.npz, .npy or .csv: see moe.Trace), and -write-routing FILE writes the
// job's routing in that format (.csv or .npz), which is how
// scripts/bench_moe.sh hands the same routing to its Open MPI baseline.
//
// With -figures, rank 0 also prints every result as "name: value unit"
// lines for scripts/bench_moe.sh.
package main

import (
	"context"
	"flag"
	"fmt"
	"log"
	"os"
	"time"

	"github.com/rdmactor/rdmactor/barrier"
	"github.com/rdmactor/rdmactor/bench/perf"
	"github.com/rdmactor/rdmactor/collective"
	"github.com/rdmactor/rdmactor/examples/internal/moeex"
	"github.com/rdmactor/rdmactor/gin"
	_ "github.com/rdmactor/rdmactor/transport/rdma/ofi" // RDMACTOR_TRANSPORT=ofi in builds with -tags ofi
)

// options are the command line.
type options struct {
	local      int
	transport  string
	tokens     int
	llTokens   int
	hidden     int
	topk       int
	experts    int
	dtype      string
	modes      []string
	route      *moeex.Flags
	writeRoute string
	expert     string
	check      bool
	baseline   bool
	iters      int
	warmup     int
	contexts   int
	perRow     bool
	copyIn     bool
	deepep     bool
	figures    bool
	idle       string
	spins      int
	timeout    time.Duration
	profile    string
}

func main() {
	log.SetFlags(0)
	device, args, err := deviceArg(os.Args[1:])
	if err != nil {
		log.Fatal(err)
	}
	if device == "gpu" {
		log.Fatal(execGPU(args))
	}
	os.Args = append(os.Args[:1], args...)
	o := parseFlags()
	stop, err := perf.StartCPUProfile(o.profile)
	if err != nil {
		log.Fatal(err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), o.timeout)
	defer cancel()
	collSig := gin.Signal(0)
	config := func(n int) gin.Config {
		gi, _, err := perf.Idle(o.idle, n, false, o.local > 0, o.spins)
		if err != nil {
			log.Fatal(err)
		}
		collSig = gin.Signal(barrier.Requirement(n, 1))
		return gin.Config{Transport: o.transport, Signals: int(collSig) + collective.Requirement(n), Idle: gi,
			Contexts: max(o.contexts, 1)}
	}
	err = gin.RunRanks(ctx, o.local, config, func(ctx context.Context, g *gin.Comm) error {
		_, pacing, err := perf.Idle(o.idle, g.Size(), g.Oversubscribed(), o.local > 0, o.spins)
		if err != nil {
			return err
		}
		return run(ctx, g, o, pacing, collSig)
	})
	stop()
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		os.Exit(1)
	}
}

func parseFlags() options {
	var o options
	flag.IntVar(&o.local, "local", 0, "run this many ranks as goroutines of this process instead of reading RDMACTOR_* from the launcher")
	flag.StringVar(&o.transport, "transport", "", "rdma provider (default: RDMACTOR_TRANSPORT, else auto: shm within a host, ofi between hosts)")
	flag.IntVar(&o.tokens, "tokens", 512, "tokens per rank (normal mode)")
	flag.IntVar(&o.llTokens, "ll-tokens", 128, "tokens per rank in low-latency mode (DeepEP: up to 128)")
	flag.IntVar(&o.hidden, "hidden", 1024, "elements per token row")
	flag.IntVar(&o.topk, "topk", 8, "experts per token")
	flag.IntVar(&o.experts, "experts", 64, "experts, spread evenly over the ranks")
	flag.StringVar(&o.dtype, "dtype", "bf16", "row element type: bf16 (carried as uint16) or float32")
	o.route = moeex.AddFlags()
	flag.StringVar(&o.writeRoute, "write-routing", "", "write the job's routing to this file (.csv or .npz); with -deepep, one file per size: NAME.<tokens>.csv")
	flag.StringVar(&o.expert, "expert", "scaled", "experts of the check round: identity, scaled (expert e multiplies by 1+e%4) or linear (a small per-expert linear layer)")
	flag.BoolVar(&o.check, "check", true, "check one round against a single-process reference before timing")
	flag.BoolVar(&o.baseline, "baseline", true, "also time the AllToAllV baseline (normal mode)")
	flag.IntVar(&o.iters, "iters", 20, "timed rounds")
	flag.IntVar(&o.warmup, "warmup", 3, "untimed rounds first")
	flag.IntVar(&o.contexts, "contexts", 1, "gin contexts to spread puts over (each with its own goroutine)")
	flag.BoolVar(&o.perRow, "per-row", false, "one put per token row (no coalescing of consecutive rows)")
	flag.BoolVar(&o.copyIn, "copy-in", false, "pass x from ordinary memory (Dispatch copies it in) instead of writing it into Handle.Input")
	flag.BoolVar(&o.deepep, "deepep", false, "DeepEP's sizes: hidden 7168, top-8, 256 experts, bf16; 128 tokens (normal and low-latency), then 4096 (normal)")
	flag.BoolVar(&o.figures, "figures", false, "also print name: value unit lines")
	flag.StringVar(&o.idle, "idle", "auto", "how waits idle: "+perf.IdleModes)
	flag.IntVar(&o.spins, "spins", 0, "polls before a yielding wait (-idle yield) gives the core away")
	flag.DurationVar(&o.timeout, "timeout", 10*time.Minute, "deadline for the whole run")
	flag.StringVar(&o.profile, "cpuprofile", "", "write a CPU profile of this process to this file (suffixed .rank under the launcher)")
	flag.Parse()
	if err := o.route.Check(); err != nil {
		log.Fatal(err)
	}
	o.modes = o.route.Modes
	if o.dtype != "bf16" && o.dtype != "float32" {
		log.Fatalf("-dtype %q: want bf16 or float32", o.dtype)
	}
	return o
}

// setup is one size to run: tokens per rank in each mode.
type setup struct {
	tokens, llTokens int
	modes            []string
	routeFile        string
}

func run(ctx context.Context, g *gin.Comm, o options, pacing barrier.Pacing, collSig gin.Signal) error {
	x, err := g.Context(0)
	if err != nil {
		return err
	}
	b, err := barrier.NewWorldSession(x, 0, 0, barrier.WithPacing(pacing))
	if err != nil {
		return err
	}
	c, err := collective.New(ctx, g, collective.Config{Signal0: collSig, Pacing: pacing})
	if err != nil {
		return err
	}
	setups := []setup{{tokens: o.tokens, llTokens: min(o.llTokens, o.tokens), modes: o.modes, routeFile: o.writeRoute}}
	if o.deepep {
		o.hidden, o.topk, o.experts, o.dtype = 7168, 8, 256, "bf16"
		setups = []setup{
			{tokens: 128, llTokens: 128, modes: []string{"normal", "ll"}},
			{tokens: 4096, modes: []string{"normal"}},
		}
		if o.writeRoute != "" {
			for i := range setups {
				setups[i].routeFile = fmt.Sprintf("%s.%d.csv", o.writeRoute, setups[i].tokens)
			}
		}
	}
	for _, s := range setups {
		var err error
		if o.dtype == "bf16" {
			err = runSetup[uint16](ctx, g, c, b, o, s, pacing)
		} else {
			err = runSetup[float32](ctx, g, c, b, o, s, pacing)
		}
		if err != nil {
			return fmt.Errorf("%d tokens: %w", s.tokens, err)
		}
	}
	return g.Barrier(ctx)
}

// Command collectives runs each collective of package collective over a
// range of sizes on N ranks, verifies every result against a reference
// computed locally, and prints a table like nccl-tests: size, count,
// algorithm, time, algorithm bandwidth and bus bandwidth, wrong elements.
//
// Run it as processes through the launcher:
//
//	go build -o bin/ ./cmd/rdmarun ./examples/collectives
//	bin/rdmarun -np 4 bin/collectives -b 8 -e 16M -f 4
//
// or with ranks as goroutines of one process: collectives -local 4.
//
// With -anchor it runs instead the figures of the Open MPI anchor
// (docs/collectives.md: all-reduce of 8 B and 4 MiB of float64
// sums, all-to-all of 128 and 4096 tokens x 7168 bf16 per pair) and
// prints them as the anchor does, "name: value unit", for
// scripts/bench_collectives.sh to set side by side.
//
// Times are per call, measured as the anchor measures (bench/perf):
// calibrated repetitions of about -rep-seconds, each timed on the slowest
// rank, median of -reps. Bandwidths follow nccl-tests: algbw = size /
// time, busbw = algbw x 2(n-1)/n for all-reduce, x (n-1)/n for the
// gathers, scatters and all-to-alls, x 1 for broadcast.
package main

import (
	"context"
	"flag"
	"fmt"
	"log"
	"os"
	"runtime"
	"strconv"
	"strings"
	"time"

	"github.com/rdmactor/rdmactor/barrier"
	"github.com/rdmactor/rdmactor/bench/perf"
	"github.com/rdmactor/rdmactor/collective"
	"github.com/rdmactor/rdmactor/gin"
)

type options struct {
	local          int
	colls          []collective.Collective
	minB, maxB     int
	factor         int
	dt             collective.DataType
	op             collective.Op
	root           int
	anchor         bool
	check          bool
	idle           string
	spins          int
	coll           collective.Config
	method         perf.Method
	timeout        time.Duration
	profile        string
	bind           string
	bound          string // what -bind did
	collsFlag      string
	typeF, opF, bF string
	eF             string
}

var allColls = []collective.Collective{collective.AllReduceOp, collective.AllGatherOp, collective.ReduceScatterOp,
	collective.BroadcastOp, collective.AllToAllOp, collective.AllToAllVOp}

func main() {
	log.SetFlags(0)
	o, err := parseFlags()
	if err != nil {
		log.Fatal(err)
	}
	o.bound, err = perf.Bind(o.bind, o.local > 0)
	if err != nil {
		log.Fatal(err)
	}
	stop, err := perf.StartCPUProfile(o.profile)
	if err != nil {
		log.Fatal(err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), o.timeout)
	defer cancel()
	// Signals: the barrier's slots (timer), then the collective Comm's.
	var collSig gin.Signal
	config := func(n int) gin.Config {
		gi, _, err := perf.Idle(o.idle, n, false, o.local > 0, o.spins)
		if err != nil {
			log.Fatal(err)
		}
		collSig = gin.Signal(barrier.Requirement(n, 1))
		return gin.Config{Signals: int(collSig) + collective.Requirement(n), Idle: gi}
	}
	err = gin.RunRanks(ctx, o.local, config, func(ctx context.Context, c *gin.Comm) error {
		cfg := o.coll
		cfg.Signal0 = collSig
		_, pacing, err := perf.Idle(o.idle, c.Size(), c.Oversubscribed(), o.local > 0, o.spins)
		if err != nil {
			return err
		}
		cfg.Pacing = pacing
		return run(ctx, c, o, cfg)
	})
	stop()
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		os.Exit(1)
	}
}

func parseFlags() (options, error) {
	var o options
	flag.IntVar(&o.local, "local", 0, "run this many ranks as goroutines of this process instead of reading RDMACTOR_* from the launcher")
	flag.StringVar(&o.collsFlag, "colls", "all", "collectives to run, comma-separated: allreduce, allgather, reducescatter, broadcast, alltoall, alltoallv")
	flag.StringVar(&o.bF, "b", "8", "smallest size in bytes (K, M, G suffixes)")
	flag.StringVar(&o.eF, "e", "16M", "largest size in bytes")
	flag.IntVar(&o.factor, "f", 4, "size factor between rows")
	flag.StringVar(&o.typeF, "type", "float32", "data type: float32, float64, int32, int64, bfloat16 (no reductions), uint8")
	flag.StringVar(&o.opF, "op", "sum", "reduction: sum, prod, min, max")
	flag.IntVar(&o.root, "root", 0, "broadcast root")
	flag.BoolVar(&o.anchor, "anchor", false, "run the Open MPI anchor's figures instead of the size sweep")
	flag.BoolVar(&o.check, "check", true, "verify every row's result before timing it")
	flag.StringVar(&o.idle, "idle", "auto", "how waits idle: "+perf.IdleModes)
	flag.IntVar(&o.spins, "spins", 0, "polls before a wait gives the core away (0: the -idle mode's)")
	flag.IntVar(&o.coll.Scratch, "scratch", 0, "bytes per scratch half (0: collective.DefaultScratch)")
	flag.IntVar(&o.coll.Piece, "piece", 0, "bytes per pipelined put (0: collective.DefaultPiece)")
	flag.IntVar(&o.coll.OneShotMax, "oneshot-max", 0, "largest one-shot message in bytes (0: collective.DefaultOneShotMax; -1: never)")
	flag.IntVar(&o.coll.HostRanks, "host-ranks", 0, "ranks per group of the hierarchical all-reduce (0: the ranks of one host; -1: never)")
	flag.IntVar(&o.coll.HierarchicalMax, "hierarchical-max", 0, "largest hierarchical all-reduce or all-gather message in bytes (0: collective.DefaultHierarchicalMax; -1: never)")
	flag.Float64Var(&o.method.RepSeconds, "rep-seconds", 0.1, "seconds per timed repetition (the anchor uses 0.4)")
	flag.IntVar(&o.method.Reps, "reps", 5, "timed repetitions (the median is reported)")
	flag.DurationVar(&o.timeout, "timeout", 10*time.Minute, "deadline for the whole run")
	flag.StringVar(&o.bind, "bind", "auto", "pin each rank process to a core: "+perf.BindModes)
	flag.StringVar(&o.profile, "cpuprofile", "", "write a CPU profile of this process to this file (suffixed .rank under the launcher)")
	flag.Parse()
	o.method.MinSeconds = min(perf.Anchor.MinSeconds, o.method.RepSeconds)
	var err error
	if o.dt, err = parseType(o.typeF); err != nil {
		return o, err
	}
	if o.op, err = parseOp(o.opF); err != nil {
		return o, err
	}
	if o.minB, err = parseSize(o.bF); err != nil {
		return o, err
	}
	if o.maxB, err = parseSize(o.eF); err != nil {
		return o, err
	}
	if o.factor < 2 {
		return o, fmt.Errorf("-f %d: want at least 2", o.factor)
	}
	for _, s := range strings.Split(o.collsFlag, ",") {
		found := false
		for _, k := range allColls {
			if s == "all" || s == k.String() {
				o.colls, found = append(o.colls, k), true
			}
		}
		if !found {
			return o, fmt.Errorf("-colls: unknown collective %q", s)
		}
	}
	return o, nil
}

// parseSize reads 8, 64K, 16M, 1G.
func parseSize(s string) (int, error) {
	mul := 1
	switch {
	case strings.HasSuffix(s, "K"):
		mul, s = 1<<10, strings.TrimSuffix(s, "K")
	case strings.HasSuffix(s, "M"):
		mul, s = 1<<20, strings.TrimSuffix(s, "M")
	case strings.HasSuffix(s, "G"):
		mul, s = 1<<30, strings.TrimSuffix(s, "G")
	}
	v, err := strconv.Atoi(s)
	if err != nil || v < 0 {
		return 0, fmt.Errorf("size %q", s)
	}
	return v * mul, nil
}

// rank is one rank's part of the run.
type rank struct {
	c     *collective.Comm
	timer *perf.Timer
	sum   *gin.Window // 16 bytes: wrong elements here, then summed over the ranks
}

func run(ctx context.Context, g *gin.Comm, o options, cfg collective.Config) error {
	x, err := g.Context(0)
	if err != nil {
		return err
	}
	b, err := barrier.NewWorldSession(x, 0, 0, barrier.WithPacing(cfg.Pacing))
	if err != nil {
		return err
	}
	c, err := collective.New(ctx, g, cfg)
	if err != nil {
		return err
	}
	timer, err := perf.New(ctx, c, b)
	if err != nil {
		return err
	}
	sum, err := g.RegisterWindow(ctx, 16, 0)
	if err != nil {
		return err
	}
	r := &rank{c: c, timer: timer, sum: sum}
	if o.anchor {
		err = r.anchor(ctx, o)
	} else {
		err = r.sweep(ctx, o)
	}
	if err != nil {
		return err
	}
	return g.Barrier(ctx)
}

// header prints what the run is, on rank 0.
func (r *rank) header(o options, what string) {
	if r.c.Rank() == 0 {
		fmt.Printf("# rdmactor %s: %d ranks (%d cores), %s transport, idle %s, %s, %v, %.2f s x %d repetitions (median, slowest rank)\n",
			what, r.c.Size(), runtime.NumCPU(), r.c.Gin().Transport(), o.idle, o.bound, o.dt, o.method.RepSeconds, o.method.Reps)
	}
}

// wrongTotal sums a count of wrong elements over every rank.
func (r *rank) wrongTotal(ctx context.Context, wrong int) (int, error) {
	v, err := collective.Elements[int64](r.sum, 0, 2)
	if err != nil {
		return 0, err
	}
	v[0] = int64(wrong)
	err = r.c.AllReduce(ctx, collective.At(r.sum, 8), collective.At(r.sum, 0), 1, collective.Int64, collective.Sum)
	return int(v[1]), err
}

// measure verifies p (when check) and times it; wrong is summed over
// every rank.
func (r *rank) measure(ctx context.Context, o options, p plan) (sec float64, wrong int, err error) {
	if o.check {
		if err := p.call(ctx); err != nil {
			return 0, 0, err
		}
		w, err := p.check()
		if err != nil {
			return 0, 0, err
		}
		if wrong, err = r.wrongTotal(ctx, w); err != nil {
			return 0, 0, err
		}
	}
	sec, err = r.timer.Measure(ctx, o.method, func(iters int) error {
		for range iters {
			if err := p.call(ctx); err != nil {
				return err
			}
		}
		return nil
	})
	return sec, wrong, err
}

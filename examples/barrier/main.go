// Command barrier runs many one-sided barriers (package barrier) over N
// ranks, checks that none lets a rank out early, and prints the latency of
// the flat barrier (NCCL's ncclGinBarrierSession), the dissemination
// barrier and the hierarchical barrier (grouped by host: the LSA teams),
// measured as the Open MPI anchor measures MPI_Barrier (bench/perf).
//
// Run it as processes through the launcher:
//
//	go build -o bin/ ./cmd/rdmarun ./examples/barrier
//	bin/rdmarun -np 4 bin/barrier
//
// or with ranks as goroutines of one process: barrier -local 4.
//
// Rank 0 prints one line per figure, "name: value unit", named like the
// anchor's (barrier_2ranks_latency, barrier_4ranks_oversubscribed_latency
// when ranks outnumber cores), with the dissemination and hierarchical
// barriers' figures named barrier_dissemination_* and
// barrier_hierarchical_*.
package main

import (
	"context"
	"encoding/binary"
	"flag"
	"fmt"
	"log"
	"os"
	"runtime"
	"strings"
	"time"

	"github.com/rdmactor/rdmactor/barrier"
	"github.com/rdmactor/rdmactor/bench/perf"
	"github.com/rdmactor/rdmactor/collective"
	"github.com/rdmactor/rdmactor/gin"
)

type options struct {
	local   int
	checks  int
	algo    string
	idle    string
	spins   int
	method  perf.Method
	timeout time.Duration
	profile string
	bind    string
	bound   string // what -bind did
}

func main() {
	log.SetFlags(0)
	var o options
	flag.IntVar(&o.local, "local", 0, "run this many ranks as goroutines of this process instead of reading RDMACTOR_* from the launcher")
	flag.IntVar(&o.checks, "checks", 2000, "barriers checked for early leavers before timing")
	flag.StringVar(&o.algo, "algo", "all", "barrier to time: flat, dissemination, hierarchical or all")
	flag.StringVar(&o.idle, "idle", "auto", "how waits idle: "+perf.IdleModes)
	flag.IntVar(&o.spins, "spins", 0, "polls before a wait gives the core away (0: the -idle mode's)")
	flag.Float64Var(&o.method.RepSeconds, "rep-seconds", perf.Anchor.RepSeconds, "seconds per timed repetition")
	flag.IntVar(&o.method.Reps, "reps", perf.Anchor.Reps, "timed repetitions (the median is reported)")
	flag.DurationVar(&o.timeout, "timeout", 5*time.Minute, "deadline for the whole run")
	flag.StringVar(&o.bind, "bind", "auto", "pin each rank process to a core: "+perf.BindModes)
	flag.StringVar(&o.profile, "cpuprofile", "", "write a CPU profile of this process to this file (suffixed .rank under the launcher)")
	flag.Parse()
	var err error
	o.bound, err = perf.Bind(o.bind, o.local > 0)
	if err != nil {
		log.Fatal(err)
	}
	stop, err := perf.StartCPUProfile(o.profile)
	if err != nil {
		log.Fatal(err)
	}
	o.method.MinSeconds = min(perf.Anchor.MinSeconds, o.method.RepSeconds)
	ctx, cancel := context.WithTimeout(context.Background(), o.timeout)
	defer cancel()

	// Signals: the flat barrier's slots, the dissemination barrier's, the
	// hierarchical barrier's (room for groups of any size), then the
	// collective Comm's (the timer max-reduces times with it).
	var sig signals
	config := func(n int) gin.Config {
		gi, _, err := perf.Idle(o.idle, n, false, o.local > 0, o.spins)
		if err != nil {
			log.Fatal(err)
		}
		sig.diss = gin.Signal(barrier.Requirement(n, 1))
		sig.hier = sig.diss + gin.Signal(barrier.DisseminationRequirement(n, 1))
		sig.coll = sig.hier + gin.Signal(n+barrier.DisseminationRequirement(n, 1)) // HierarchicalRequirement(n, g, 1) for any g
		return gin.Config{Signals: int(sig.coll) + collective.Requirement(n), Idle: gi}
	}
	err = gin.RunRanks(ctx, o.local, config, func(ctx context.Context, c *gin.Comm) error {
		return run(ctx, c, o, sig)
	})
	stop()
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		os.Exit(1)
	}
}

// signals are the first signals of each barrier's slots and of the
// collective Comm's (the flat barrier's start at 0).
type signals struct{ diss, hier, coll gin.Signal }

func run(ctx context.Context, c *gin.Comm, o options, sig signals) error {
	n, me := c.Size(), c.Rank()
	_, pacing, err := perf.Idle(o.idle, n, c.Oversubscribed(), o.local > 0, o.spins)
	if err != nil {
		return err
	}
	x, err := c.Context(0)
	if err != nil {
		return err
	}
	flat, err := barrier.NewWorldSession(x, 0, 0, barrier.WithPacing(pacing))
	if err != nil {
		return err
	}
	diss, err := barrier.NewDisseminationSession(x, c.World(), sig.diss, 0, barrier.WithPacing(pacing))
	if err != nil {
		return err
	}
	hier, err := barrier.NewHierarchicalSession(x, c.World(), c.LSA().NRanks, sig.hier, 0, barrier.WithPacing(pacing))
	if err != nil {
		return err
	}
	coll, err := collective.New(ctx, c, collective.Config{Signal0: sig.coll, Scratch: 64 << 10, Pacing: pacing})
	if err != nil {
		return err
	}
	timer, err := perf.New(ctx, coll, flat)
	if err != nil {
		return err
	}
	sessions := []struct {
		name string
		s    barrier.Syncer
	}{{"flat", flat}, {"dissemination", diss}, {"hierarchical", hier}}
	var checked []string
	for _, s := range sessions {
		count := o.checks
		switch {
		case s.name == "flat" && !c.Capabilities().StrongSignals,
			s.name != "flat" && c.LSA().NRanks < n:
			count = 0 // the puts need not have landed: see check
		}
		if err := check(ctx, c, s.s, count); err != nil {
			return fmt.Errorf("%s barrier: %w", s.name, err)
		}
		checked = append(checked, fmt.Sprintf("%d %s", count, s.name))
	}
	if me == 0 {
		fmt.Printf("# %d ranks (%d cores), %s transport, idle %s, %s: barriers checked: %s\n", n, runtime.NumCPU(), c.Transport(), o.idle, o.bound, strings.Join(checked, ", "))
	}
	over := ""
	if c.Oversubscribed() {
		over = "_oversubscribed"
	}
	for _, s := range sessions {
		if o.algo != "all" && o.algo != s.name {
			continue
		}
		sec, err := timer.Measure(ctx, o.method, func(iters int) error {
			for range iters {
				if err := s.s.Sync(ctx, barrier.FenceNone); err != nil {
					return err
				}
			}
			return nil
		})
		if err != nil {
			return fmt.Errorf("%s barrier: %w", s.name, err)
		}
		name := "barrier"
		if s.name != "flat" {
			name += "_" + s.name
		}
		if me == 0 {
			fmt.Printf("%s_%dranks%s_latency: %.3f us\n", name, n, over, sec*1e6)
		}
	}
	return c.Barrier(ctx)
}

// check runs count barriers: before each, every rank puts the barrier's
// number into its slot of every other rank's window; after it, every slot
// must hold at least that number (a rank that left early would find an
// older one); a second barrier ends the round. For the flat barrier the
// arrival signals imply the puts where signals are strong; the
// dissemination barrier orders arrivals, not a third rank's puts, so its
// check holds only where every rank shares this host (shm's puts land
// before the call returns), and so does the hierarchical barrier's. The
// caller checks only what holds.
func check(ctx context.Context, c *gin.Comm, s barrier.Syncer, count int) error {
	n, me := c.Size(), c.Rank()
	win, err := c.RegisterWindow(ctx, 8*n, 0)
	if err != nil {
		return err
	}
	x, _ := c.Context(0)
	for i := 1; i <= count; i++ {
		for p := range n {
			if p != me {
				if err := x.PutValue(c.World(), p, win, 8*me, uint64(i), 8, gin.None); err != nil {
					return err
				}
			}
		}
		if err := s.Sync(ctx, barrier.FenceNone); err != nil {
			return fmt.Errorf("barrier %d: %w", i, err)
		}
		for q := range n {
			if v := binary.LittleEndian.Uint64(win.Bytes()[8*q:]); q != me && v < uint64(i) {
				return fmt.Errorf("barrier %d: left before rank %d arrived (its slot holds %d)", i, q, v)
			}
		}
		if err := s.Sync(ctx, barrier.FenceNone); err != nil {
			return err
		}
	}
	return nil
}

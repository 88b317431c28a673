// Command rdmabench measures rdmactor's one-sided puts between two ranks
// on shm against anchors measured in the same run, and prints one line per
// figure, "name: value unit", in the style of the Open MPI anchor (a C
// program outside this repository, docs/benchmarks.md), then a summary of
// the ratios.
//
// Run it as two processes through the launcher (scripts/bench.sh does this
// and prints it side by side with the Open MPI anchor):
//
//	go build -o bin/ ./cmd/rdmarun ./cmd/rdmabench
//	bin/rdmarun -np 2 bin/rdmabench
//
// or with both ranks as goroutines of one process: rdmabench -local.
//
// Figures (one-way latency = round trip / 2):
//
//   - putsig_<size>_one_way: ping-pong of gin Put + SignalInc; rank 1 waits
//     with WaitSignal and answers the same way. Median over repetitions of
//     the mean time per round trip, halved; _p50 and _p99 come from one more
//     repetition that times every round trip.
//   - floor_<size>_one_way: the same ping-pong with no gin at all: a plain
//     Go copy into the peer's part of a file both ranks map from /dev/shm,
//     then an atomic add on the peer's flag; waits are atomic loads. The
//     physical floor of a put with a signal on one host.
//   - put_<size>_bw: rank 0 streams puts of size bytes (SignalInc each,
//     alternating halves of a window of twice the size, Flush at the end);
//     rank 1 waits for the last signal. GB/s = 1e9 bytes/s.
//   - floor_put_<size>_bw: the same stream as plain copies + atomic adds
//     into the shared file (what put_bw would be with no gin layers).
//   - copy_<size>_bw: single-core Go copy between two private, touched
//     buffers, measured by rank 0 alone while rank 1 is parked (the anchor's
//     memcpy figure).
//
// Method (as bench/mpi/rmabench.c): each figure is warmed up and calibrated until a
// repetition lasts about -rep-seconds, then repeated -reps times; the median
// is reported, and every repetition is timed on the slower rank. Figures
// that are compared run their repetitions interleaved (floor, gin, floor,
// gin, ...) so that a slow phase of a noisy host hits both.
//
// Waiting: both ranks spin. The Comm is built with an idle strategy that
// spins -spins times (default 1<<20, about a millisecond) before it yields
// and parks, instead of gin's default (256 spins), so that a waiter that
// is about to be answered is never asleep; -spins 0 keeps gin's default.
package main

import (
	"context"
	"crypto/rand"
	"encoding/binary"
	"errors"
	"flag"
	"fmt"
	"io"
	"log"
	"os"
	"runtime"
	"runtime/pprof"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/rdmactor/rdmactor/gin"
)

type options struct {
	latSizes   []int
	bwSizes    []int
	reps       int
	repSeconds float64
	iters      int
	spins      int
	verbose    bool
	cpuProfile string
	local      bool
	timeout    time.Duration
}

func main() {
	log.SetFlags(0)
	log.SetPrefix("rdmabench: ")
	opt, err := parseFlags(os.Args[1:])
	if err != nil {
		log.Fatal(err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), opt.timeout)
	defer cancel()
	cfg := gin.Config{Signals: nSignal, Idle: gin.DefaultIdle}
	if opt.spins > 0 {
		cfg.Idle = gin.IdleStrategy{Spins: opt.spins, Yields: 1 << 10, MinSleep: time.Microsecond, MaxSleep: 100 * time.Microsecond}
	}

	if opt.local {
		comms, err := gin.NewLocal(ctx, 2, cfg)
		if err != nil {
			log.Fatal(err)
		}
		errs := make([]error, len(comms))
		var wg sync.WaitGroup
		for i, c := range comms {
			wg.Go(func() { errs[i] = run(ctx, c, cfg.Idle, opt) })
		}
		wg.Wait()
		if err := errors.Join(errs...); err != nil {
			log.Fatal(err)
		}
		return
	}
	c, err := gin.Init(ctx, cfg)
	if err != nil {
		log.Fatal(err)
	}
	if err := run(ctx, c, cfg.Idle, opt); err != nil {
		log.Fatal(err)
	}
}

func parseFlags(args []string) (*options, error) {
	fs := flag.NewFlagSet("rdmabench", flag.ContinueOnError)
	lat := fs.String("sizes", "8,64KiB", "comma-separated sizes of the latency figures (B, KiB, MiB suffixes)")
	bw := fs.String("bwsizes", "1MiB,64MiB", "comma-separated sizes of the bandwidth figures")
	reps := fs.Int("reps", 5, "repetitions per figure; the median is reported")
	repSeconds := fs.Float64("rep-seconds", 0.4, "target duration of one repetition in seconds")
	iters := fs.Int("iters", 0, "iterations per repetition (0: calibrate to -rep-seconds)")
	spins := fs.Int("spins", 1<<20, "busy spins of every wait before it yields and parks (0: gin's default idle strategy)")
	verbose := fs.Bool("v", false, "also print every repetition's value as a comment")
	cpuProfile := fs.String("cpuprofile", "", "write each rank's CPU profile to this file, with \".<rank>\" appended (not with -local)")
	quick := fs.Bool("quick", false, "short run: 3 repetitions of 0.1 s")
	local := fs.Bool("local", false, "run both ranks as goroutines of this process (gin.NewLocal) instead of under rdmarun")
	timeout := fs.Duration("timeout", 10*time.Minute, "deadline for the whole run")
	if err := fs.Parse(args); err != nil {
		return nil, err
	}
	if fs.NArg() > 0 {
		return nil, fmt.Errorf("unexpected arguments %q", fs.Args())
	}
	opt := &options{reps: *reps, repSeconds: *repSeconds, iters: *iters, spins: *spins, verbose: *verbose, cpuProfile: *cpuProfile, local: *local, timeout: *timeout}
	if *quick {
		opt.reps, opt.repSeconds = 3, 0.1
	}
	var err error
	if opt.latSizes, err = parseSizes(*lat); err != nil {
		return nil, fmt.Errorf("-sizes: %w", err)
	}
	if opt.bwSizes, err = parseSizes(*bw); err != nil {
		return nil, fmt.Errorf("-bwsizes: %w", err)
	}
	if len(opt.latSizes) == 0 && len(opt.bwSizes) == 0 {
		return nil, errors.New("-sizes and -bwsizes are both empty")
	}
	if opt.reps < 1 || opt.repSeconds <= 0 || opt.iters < 0 || opt.spins < 0 {
		return nil, errors.New("-reps and -rep-seconds must be positive, -iters and -spins not negative")
	}
	return opt, nil
}

// parseSizes reads "8,64KiB,1MiB"; "" is no sizes (that part is skipped).
func parseSizes(s string) ([]int, error) {
	var out []int
	for _, f := range strings.Split(s, ",") {
		f = strings.TrimSpace(f)
		if f == "" {
			continue
		}
		mult := 1
		for _, u := range []struct {
			suffix string
			mult   int
		}{{"KiB", 1 << 10}, {"MiB", 1 << 20}, {"B", 1}} {
			if strings.HasSuffix(f, u.suffix) {
				f, mult = strings.TrimSuffix(f, u.suffix), u.mult
				break
			}
		}
		n, err := strconv.Atoi(f)
		if err != nil || n <= 0 {
			return nil, fmt.Errorf("size %q: want a positive number of bytes", f)
		}
		out = append(out, n*mult)
	}
	return out, nil
}

// sizeName writes 8 as "8B", 65536 as "64KiB", 1<<20 as "1MiB".
func sizeName(n int) string {
	switch {
	case n >= 1<<20 && n%(1<<20) == 0:
		return fmt.Sprintf("%dMiB", n>>20)
	case n >= 1<<10 && n%(1<<10) == 0:
		return fmt.Sprintf("%dKiB", n>>10)
	}
	return fmt.Sprintf("%dB", n)
}

// run is one rank's part. Both ranks go through the same steps; only rank 0
// prints.
func run(ctx context.Context, c *gin.Comm, wait gin.IdleStrategy, opt *options) (err error) {
	defer func() { err = errors.Join(err, c.Close()) }()
	if c.Size() != 2 {
		return fmt.Errorf("rdmabench needs exactly 2 ranks, got %d", c.Size())
	}
	x, err := c.Context(0)
	if err != nil {
		return err
	}
	r := &rank{c: c, x: x, team: c.World(), me: c.Rank(), peer: 1 - c.Rank(), ctx: ctx, opt: opt, idle: wait}
	out := io.Discard
	if r.me == 0 {
		out = os.Stdout
	}
	latMax, bwMax := roundPage(max(8, maxOf(opt.latSizes))), roundPage(maxOf(opt.bwSizes))
	if r.lat, err = c.RegisterWindow(ctx, 2*latMax, 0); err != nil {
		return err
	}
	if r.bw, err = c.RegisterWindow(ctx, 2*bwMax, 0); err != nil {
		return err
	}
	if r.ctrl, err = c.RegisterWindow(ctx, 16, 0); err != nil {
		return err
	}
	// Touch our parts (the peer's first puts fault its own mapping in
	// during calibration, which is warm-up).
	pattern(r.lat.Bytes()[:latMax], r.me)
	pattern(r.bw.Bytes(), r.me)
	if err := r.openFloor(max(latMax, bwMax)); err != nil {
		return err
	}
	defer func() { err = errors.Join(err, r.floor.close()) }()
	pattern(r.floor.send[r.me], r.me)
	clear(r.floor.recv[r.me])

	fmt.Fprintf(out, "# rdmabench: %s, 2 ranks, %d cores, GOMAXPROCS %d, %s; %+v; %d reps of ~%gs, median\n",
		c.Transport(), runtime.NumCPU(), runtime.GOMAXPROCS(0), runtime.Version(), c.Capabilities(), opt.reps, opt.repSeconds)
	if opt.spins > 0 {
		fmt.Fprintf(out, "# waits spin %d times before yielding (gin.Config.Idle)\n", opt.spins)
	} else {
		fmt.Fprintf(out, "# waits use gin's default idle strategy (gin.DefaultIdle)\n")
	}

	if opt.cpuProfile != "" && !opt.local {
		f, err := os.Create(fmt.Sprintf("%s.%d", opt.cpuProfile, r.me))
		if err != nil {
			return err
		}
		if err := pprof.StartCPUProfile(f); err != nil {
			return errors.Join(err, f.Close())
		}
		defer func() {
			pprof.StopCPUProfile()
			err = errors.Join(err, f.Close())
		}()
	}

	var lat, bws []*figure
	for _, n := range opt.latSizes {
		fl := &figure{name: "floor_" + sizeName(n) + "_one_way", k: r.floorPingPong(n), unit: 1e6 / 2, dist: true}
		gf := &figure{name: "putsig_" + sizeName(n) + "_one_way", k: r.putsigPingPong(n), unit: 1e6 / 2, dist: true}
		if err := r.measure([]*figure{fl, gf}); err != nil {
			return err
		}
		for _, f := range []*figure{gf, fl} {
			fmt.Fprintf(out, "%s: %.3f us\n%s_p50: %.3f us\n%s_p99: %.3f us\n", f.name, f.value(), f.name, f.p50, f.name, f.p99)
			f.printReps(out, opt)
		}
		lat = append(lat, gf, fl)
	}
	if err := r.verify(latMax); err != nil {
		return err
	}
	// The copy anchor runs on rank 0 alone, interleaved with the puts;
	// meanwhile rank 1 waits in the next control exchange (a gin wait: it
	// spins about a millisecond, then parks).
	for _, n := range opt.bwSizes {
		fl := &figure{name: "floor_put_" + sizeName(n) + "_bw", k: r.floorStream(n), bytes: n}
		gf := &figure{name: "put_" + sizeName(n) + "_bw", k: r.putStream(n), bytes: n}
		cp := &figure{name: "copy_" + sizeName(n) + "_bw", k: copyKernel(n, r.me == 0), bytes: n, solo: true}
		if err := r.measure([]*figure{cp, fl, gf}); err != nil {
			return err
		}
		for _, f := range []*figure{gf, fl, cp} {
			fmt.Fprintf(out, "%s: %.3f GB/s\n", f.name, f.value())
			f.printReps(out, opt)
		}
		bws = append(bws, gf, fl, cp)
	}
	if err := c.Barrier(ctx); err != nil {
		return err
	}
	if r.me == 0 {
		summary(out, lat, bws)
	}
	if err := x.Flush(ctx); err != nil {
		return err
	}
	// Nobody unmaps before the peer is done writing into its mappings.
	return c.Barrier(ctx)
}

// openFloor maps the floor's shared file on both ranks: rank 0 names and
// creates it, rank 1 maps it, rank 0 unlinks it (both mappings stay). Each
// step ends with an exchange of an ok flag, so a rank that fails does not
// leave the other waiting for the deadline.
func (r *rank) openFloor(span int) error {
	var id [8]byte
	rand.Read(id[:])
	got, err := r.exchange(binary.LittleEndian.Uint64(id[:]))
	if err != nil {
		return err
	}
	if r.me == 1 {
		copy(id[:], binary.LittleEndian.AppendUint64(nil, got))
	}
	path := floorPath(binary.LittleEndian.Uint64(id[:]))
	step := func(do bool, f func() error) error {
		var err error
		if do {
			err = f()
		}
		ok := uint64(1)
		if err != nil {
			ok = 0
		}
		peerOK, xerr := r.exchange(ok)
		if err == nil && xerr == nil && peerOK != 1 {
			err = errors.New("the peer failed to map the floor's file")
		}
		return errors.Join(err, xerr)
	}
	if err := step(r.me == 0, func() (err error) { r.floor, err = mapFloor(path, span, true); return }); err != nil {
		return errors.Join(err, r.floor.close())
	}
	if err := step(r.me == 1, func() (err error) { r.floor, err = mapFloor(path, span, false); return }); err != nil {
		return errors.Join(err, r.floor.close())
	}
	if r.me == 0 {
		if err := unlink(path); err != nil {
			return errors.Join(fmt.Errorf("floor: %w", err), r.floor.close())
		}
	}
	return nil
}

// verify checks, after the latency figures, that each rank's receive areas
// hold the peer's pattern (the last ping-pong wrote the largest size), and
// that both ranks agree.
func (r *rank) verify(latMax int) error {
	n := maxOf(r.opt.latSizes)
	want := make([]byte, latMax)
	pattern(want, r.peer)
	var err error
	if string(r.lat.Bytes()[latMax:latMax+n]) != string(want[:n]) {
		err = errors.New("verify: putsig payload differs from the peer's pattern")
	} else if string(r.floor.recv[r.me][:n]) != string(want[:n]) {
		err = errors.New("verify: floor payload differs from the peer's pattern")
	}
	ok := uint64(1)
	if err != nil {
		ok = 0
	}
	peerOK, xerr := r.exchange(ok)
	if err == nil && xerr == nil && peerOK != 1 {
		err = errors.New("verify: the peer saw a wrong payload")
	}
	return errors.Join(err, xerr)
}

// printReps prints, with -v, the value of every repetition in the order
// they ran.
func (f *figure) printReps(out io.Writer, opt *options) {
	if !opt.verbose {
		return
	}
	fmt.Fprintf(out, "#   %s reps (n=%d):", f.name, f.n)
	for _, t := range f.reps {
		if f.bytes > 0 {
			fmt.Fprintf(out, " %.3f", float64(f.bytes)/t/1e9)
		} else {
			fmt.Fprintf(out, " %.3f", t*f.unit)
		}
	}
	fmt.Fprintln(out)
}

// pattern fills b with bytes that name rank.
func pattern(b []byte, rank int) {
	for i := range b {
		b[i] = byte(rank*31 + i*7 + 1)
	}
}

func maxOf(s []int) int {
	m := 0
	for _, v := range s {
		m = max(m, v)
	}
	return m
}

// summary prints the same-run ratios and whether the targets hold: 8 B
// one-way within 2x of the floor and under 1 µs; put bandwidth at least 80%
// of single-core copy. "paired" is the median of the per-round ratios of
// interleaved repetitions (see pairedRatio).
func summary(out io.Writer, lat, bws []*figure) {
	fmt.Fprintf(out, "#\n# summary (same run; ratio = rdmactor / anchor, of the medians; paired = median of per-round ratios)\n")
	fmt.Fprintf(out, "# %-26s %12s  %-26s %12s %7s %7s  %s\n", "figure", "rdmactor", "anchor", "anchor val", "ratio", "paired", "target")
	for i := 0; i+1 < len(lat); i += 2 {
		g, f := lat[i], lat[i+1]
		ratio := g.value() / f.value()
		target := "-"
		if strings.HasPrefix(g.name, "putsig_8B_") {
			// Stalls of a noisy host add the same absolute time to both
			// figures' means and so pull the ratio of medians towards 1;
			// the per-round-trip p50 is immune, so both must hold.
			ok := ratio <= 2 && g.p50/f.p50 <= 2 && g.value() < 1
			target = fmt.Sprintf("<= 2x floor (median and p50) and < 1 us: %s", met(ok))
		}
		fmt.Fprintf(out, "# %-26s %9.3f us  %-26s %9.3f us %6.2fx %6.2fx  %s\n", g.name, g.value(), f.name, f.value(), ratio, pairedRatio(g, f), target)
		fmt.Fprintf(out, "# %-26s %9.3f us  %-26s %9.3f us %6.2fx %7s\n", g.name+"_p50", g.p50, f.name+"_p50", f.p50, g.p50/f.p50, "")
		fmt.Fprintf(out, "# %-26s %9.3f us  %-26s %9.3f us %6.2fx %7s\n", g.name+"_p99", g.p99, f.name+"_p99", f.p99, g.p99/f.p99, "")
	}
	for i := 0; i+2 < len(bws); i += 3 {
		g, fl, c := bws[i], bws[i+1], bws[i+2]
		ratio := g.value() / c.value()
		fmt.Fprintf(out, "# %-26s %7.3f GB/s  %-26s %7.3f GB/s %6.2fx %6.2fx  >= 0.80x copy: %s\n", g.name, g.value(), c.name, c.value(), ratio, 1/pairedRatio(g, c), met(ratio >= 0.8))
		fmt.Fprintf(out, "# %-26s %7.3f GB/s  %-26s %7.3f GB/s %6.2fx %6.2fx\n", g.name, g.value(), fl.name, fl.value(), g.value()/fl.value(), 1/pairedRatio(g, fl))
	}
}

func met(ok bool) string {
	if ok {
		return "met"
	}
	return "MISSED"
}

// Command rdmascale measures how rdmactor's costs change with the number
// of ranks, for docs/scaling.md. scripts/scaling.sh runs it for every N
// and plots what it writes (scripts/scaling/plot).
//
//	rdmarun -np N bin/rdmascale -out data.jsonl    # N ranks as processes
//	bin/rdmascale -local N -out data.jsonl         # N ranks as goroutines of one process
//
// One run measures on one gin.Comm per rank (shm), in this order: the
// actor figures (memory first), the barriers, the puts.
//
//   - put_ns: a stream of 8 B Put + SignalInc(0) from rank 0 to rank 1 on
//     context 1, after k signal indices were used towards rank 1 there (k
//     from -sweep, each an SCEndpoint of the group); the least over -reps
//     repetitions of the mean ns per put (a CPU-bound loop: other work on
//     the host only adds to it). Runs of 256 puts alternate with as many
//     on context 0, which has one signal in use: put_ratio is the median
//     over the repetitions of context 1's time over context 0's, a figure
//     a noisy host moves far less. The other ranks wait in a control-plane
//     barrier.
//   - barrier_flat_ns, barrier_dissemination_ns: one barrier.Session /
//     barrier.DisseminationSession Sync on the world team, FenceNone, the
//     mean over about a second of barriers, taken on the slowest rank.
//   - actor_rtt_ns: request/response round trips between an actor on rank
//     0 and one on rank N-1 (actor.Context.Request, Respond), the others
//     idle; the median over -reps of the mean.
//   - actor_msgs_per_s: every rank Tells -msgs messages (8 B of data) to
//     each of its neighbours r-1 and r+1 (mod N) at once (fewer when
//     goroutine ranks outnumber the cores); messages delivered per second
//     per rank, over the slowest rank's time. Then every rank sends each
//     neighbour a ring's lap of 16 KiB messages, so every ring in use has
//     been written end to end.
//   - mem_*: what a rank holds, before the actor traffic ("start") and
//     after it ("traffic"): shm_committed (bytes of its shared-memory
//     files that have pages, from st_blocks: what the kernel committed),
//     of which mailbox_committed is the mailbox window; mapped (bytes of
//     shared-memory files mapped, its own and its imports of every peer's:
//     virtual address space) and maps (how many mappings those are);
//     mailbox_window (the window's nominal size,
//     mailbox.WindowBytes); heap (Go heap in use; with processes also
//     heap_max, the largest rank's, rank 0's); rss and pss (from
//     /proc/self/smaps_rollup). With goroutine ranks, process-wide figures
//     (mapped, maps, heap, rss, pss) are divided by N.
//
// Each record is one JSON line {"mode","n","metric","x","value","unit"}
// appended to -out by rank 0 (x is k for put_ns and put_ratio, else 0).
package main

import (
	"context"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"log"
	"os"
	"path/filepath"
	"runtime"
	"runtime/pprof"
	"slices"
	"sort"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/rdmactor/rdmactor/actor"
	"github.com/rdmactor/rdmactor/barrier"
	"github.com/rdmactor/rdmactor/gin"
	"github.com/rdmactor/rdmactor/mailbox"
	_ "github.com/rdmactor/rdmactor/transport/rdma/std"
)

type options struct {
	local     int
	out       string
	sweep     []int
	reps      int
	putIters  int
	rttIters  int
	msgs      int
	ringBytes int
	linger    time.Duration
	timeout   time.Duration
	heapDir   string
}

// record is one line of the output.
type record struct {
	Mode   string  `json:"mode"` // "process" or "goroutine"
	N      int     `json:"n"`
	Metric string  `json:"metric"`
	X      float64 `json:"x"`
	Value  float64 `json:"value"`
	Unit   string  `json:"unit"`
}

func main() {
	log.SetFlags(0)
	log.SetPrefix("rdmascale: ")
	var o options
	var sweep string
	flag.IntVar(&o.local, "local", 0, "run N ranks as goroutines of this process (0: one rank of the job in the environment)")
	flag.StringVar(&o.out, "out", "", "append JSON records to this file (default: stdout)")
	flag.StringVar(&sweep, "sweep", "1,8,32,128,256", "signals in use towards the peer for put_ns")
	flag.IntVar(&o.reps, "reps", 5, "repetitions of put_ns and actor_rtt_ns (median)")
	flag.IntVar(&o.putIters, "put-iters", 100000, "puts per repetition")
	flag.IntVar(&o.rttIters, "rtt-iters", 2000, "round trips per repetition")
	flag.IntVar(&o.msgs, "msgs", 20000, "messages each rank sends to each neighbour")
	flag.IntVar(&o.ringBytes, "ring", mailbox.DefaultRingBytes, "mailbox RingBytes")
	flag.DurationVar(&o.linger, "linger", 0, "mailbox Linger (0: its default; negative: never)")
	flag.DurationVar(&o.timeout, "timeout", 10*time.Minute, "bound on the whole run")
	flag.StringVar(&o.heapDir, "heap-profiles", "", "write each process's heap profile after the actor traffic to this directory (heap-r<rank>.pprof)")
	flag.Parse()
	for _, f := range strings.Split(sweep, ",") {
		k, err := strconv.Atoi(strings.TrimSpace(f))
		if err != nil || k < 1 {
			log.Fatalf("-sweep: %q is not a positive count", f)
		}
		o.sweep = append(o.sweep, k)
	}
	ctx, cancel := context.WithTimeout(context.Background(), o.timeout)
	defer cancel()
	if err := run(ctx, o); err != nil {
		log.Fatal(err)
	}
}

func run(ctx context.Context, o options) error {
	maxK := 0
	for _, k := range o.sweep {
		maxK = max(maxK, k)
	}
	if o.local > 0 {
		comms, err := gin.NewLocal(ctx, o.local, ginConfig(o.local, maxK))
		if err != nil {
			return err
		}
		defer closeAll(comms)
		var wg sync.WaitGroup
		errs := make([]error, len(comms))
		for r, c := range comms {
			wg.Go(func() {
				if errs[r] = rank(ctx, c, o, maxK); errs[r] != nil {
					c.Close() // unblock the others' collectives
				}
			})
		}
		wg.Wait()
		return errors.Join(errs...)
	}
	size, err := gin.SizeFromEnv()
	if err != nil {
		return err
	}
	c, err := gin.Init(ctx, ginConfig(size, maxK))
	if err != nil {
		return err
	}
	defer c.Close()
	return rank(ctx, c, o, maxK)
}

func closeAll(comms []*gin.Comm) {
	for _, c := range comms {
		c.Close()
	}
}

// Signal layout: [0, maxK) the put sweep, then the flat barrier's slots,
// the dissemination barrier's, and the mailbox's.
func flatBase(int, maxK int) gin.Signal { return gin.Signal(maxK) }
func dissBase(n, maxK int) gin.Signal {
	return flatBase(n, maxK) + gin.Signal(barrier.Requirement(n, 1))
}
func mailboxBase(n, maxK int) gin.Signal {
	return dissBase(n, maxK) + gin.Signal(barrier.DisseminationRequirement(n, 1))
}

func ginConfig(n, maxK int) gin.Config {
	return gin.Config{Signals: int(mailboxBase(n, maxK)) + mailbox.SignalsNeeded(n), Contexts: 2}
}

// job is what one rank measures with; rank 0 also writes the records.
type job struct {
	c     *gin.Comm
	x     *gin.Context
	o     options
	mode  string
	n, me int
	out   []record
}

func (j *job) add(metric string, x, value float64, unit string) {
	j.out = append(j.out, record{Mode: j.mode, N: j.n, Metric: metric, X: x, Value: value, Unit: unit})
}

// rank runs every measurement on one rank of c.
func rank(ctx context.Context, c *gin.Comm, o options, maxK int) error {
	x, err := c.Context(0)
	if err != nil {
		return err
	}
	j := &job{c: c, x: x, o: o, mode: "process", n: c.Size(), me: c.Rank()}
	if o.local > 0 {
		j.mode = "goroutine"
	}
	// Actors first: the put sweep's endpoints (one SQ each) would count
	// in the heap figures.
	if err := j.actors(ctx, maxK); err != nil {
		return fmt.Errorf("actors: %w", err)
	}
	if err := j.barriers(ctx, maxK); err != nil {
		return fmt.Errorf("barriers: %w", err)
	}
	if j.n >= 2 {
		if err := j.puts(ctx); err != nil {
			return fmt.Errorf("puts: %w", err)
		}
	}
	if j.me != 0 {
		return nil
	}
	return j.write()
}

func (j *job) write() error {
	w := os.Stdout
	if j.o.out != "" {
		f, err := os.OpenFile(j.o.out, os.O_WRONLY|os.O_CREATE|os.O_APPEND, 0o644)
		if err != nil {
			return err
		}
		defer f.Close()
		w = f
	}
	enc := json.NewEncoder(w)
	for _, r := range j.out {
		if err := enc.Encode(r); err != nil {
			return err
		}
	}
	return nil
}

// puts measures put_ns at rank 0 for every k of the sweep.
func (j *job) puts(ctx context.Context) error {
	win, err := j.c.RegisterWindow(ctx, 4096, 0)
	if err != nil {
		return err
	}
	if j.me != 0 {
		return j.c.Barrier(ctx)
	}
	// Context 1 carries the k signals in use; context 0 keeps one, the
	// anchor, timed in runs alternating with context 1's.
	var xs [2]*gin.Context
	for i := range xs {
		if xs[i], err = j.c.Context(i); err != nil {
			return err
		}
	}
	team := j.c.World()
	put := func(x *gin.Context, sig int) error {
		return x.Put(team, 1, win, 2048, win, 0, 8, gin.SignalInc(gin.Signal(sig)), gin.LocalNone)
	}
	if err := put(xs[0], 0); err != nil {
		return err
	}
	const run = 256
	inUse := 0
	for _, k := range j.o.sweep {
		for ; inUse < k; inUse++ {
			if err := put(xs[1], inUse); err != nil {
				return err
			}
		}
		reps := make([]float64, j.o.reps+1) // the first warms up
		ratios := make([]float64, j.o.reps+1)
		for i := range reps {
			var spent [2]time.Duration
			for round := 0; round*run < j.o.putIters; round++ {
				for _, c := range [][]int{{1, 0}, {0, 1}}[round%2] {
					if err := xs[c].Flush(ctx); err != nil {
						return err
					}
					t := time.Now()
					for range run {
						if err := put(xs[c], 0); err != nil {
							return err
						}
					}
					spent[c] += time.Since(t)
				}
			}
			reps[i] = float64(spent[1].Nanoseconds()) / float64(j.o.putIters/run*run)
			ratios[i] = float64(spent[1]) / float64(spent[0])
		}
		j.add("put_ns", float64(k), slices.Min(reps[1:]), "ns")
		j.add("put_ratio", float64(k), median(ratios[1:]), "x")
	}
	for _, x := range xs {
		if err := x.Flush(ctx); err != nil {
			return err
		}
	}
	return j.c.Barrier(ctx)
}

// barriers measures both barrier kinds on the world team.
func (j *job) barriers(ctx context.Context, maxK int) error {
	var pacing barrier.Pacing
	if j.mode == "goroutine" && j.n > runtime.GOMAXPROCS(0) {
		pacing.Gosched = true // as barrier's BenchmarkSync: ranks beyond the cores yield
	}
	flat, err := barrier.NewWorldSession(j.x, flatBase(j.n, maxK), 0, barrier.WithPacing(pacing))
	if err != nil {
		return err
	}
	diss, err := barrier.NewDisseminationSession(j.x, j.c.World(), dissBase(j.n, maxK), 0, barrier.WithPacing(pacing))
	if err != nil {
		return err
	}
	for _, b := range []struct {
		name string
		s    barrier.Syncer
	}{{"barrier_flat_ns", flat}, {"barrier_dissemination_ns", diss}} {
		// Warm up and calibrate: about a second of barriers, the same
		// count on every rank.
		t := time.Now()
		for range 10 {
			if err := b.s.Sync(ctx, barrier.FenceNone); err != nil {
				return err
			}
		}
		each, err := j.maxAll(ctx, time.Since(t).Seconds()/10)
		if err != nil {
			return err
		}
		iters := min(max(int(1/each), 20), 20000)
		t = time.Now()
		for range iters {
			if err := b.s.Sync(ctx, barrier.FenceNone); err != nil {
				return err
			}
		}
		ns := float64(time.Since(t).Nanoseconds()) / float64(iters)
		slowest, err := j.maxAll(ctx, ns)
		if err != nil {
			return err
		}
		j.add(b.name, 0, slowest, "ns")
	}
	return nil
}

// maxAll is the largest v over the ranks (control-plane all-gather).
func (j *job) maxAll(ctx context.Context, v float64) (float64, error) {
	all, err := j.c.AllGather(ctx, []byte(strconv.FormatFloat(v, 'g', -1, 64)))
	if err != nil {
		return 0, err
	}
	m := 0.0
	for _, b := range all {
		f, err := strconv.ParseFloat(string(b), 64)
		if err != nil {
			return 0, err
		}
		m = max(m, f)
	}
	return m, nil
}

func median(v []float64) float64 {
	s := append([]float64(nil), v...)
	sort.Float64s(s)
	return s[len(s)/2]
}

// ScaleMsg is the message of the actor measurements (24 B encoded).
type ScaleMsg struct {
	Seq  uint64
	Data []byte
}

func init() { actor.RegisterMessage[ScaleMsg]() }

// neighbours are the ranks r-1 and r+1 (mod n), without repeats or r.
func neighbours(r, n int) []int {
	var out []int
	for _, p := range []int{(r + 1) % n, (r - 1 + n) % n} {
		if p != r && (len(out) == 0 || out[0] != p) {
			out = append(out, p)
		}
	}
	return out
}

// actors starts a Node on the Comm and measures memory, round trips and
// throughput.
func (j *job) actors(ctx context.Context, maxK int) error {
	cfg := actor.Config{}
	cfg.Mailbox.RingBytes = j.o.ringBytes
	cfg.Mailbox.Linger = j.o.linger
	cfg.Mailbox.SignalBase = mailboxBase(j.n, maxK)
	node, err := actor.Start(ctx, j.c, cfg)
	if err != nil {
		return err
	}
	defer node.Close()
	nb := neighbours(j.me, j.n)
	senders := 0 // ranks that have this one as a neighbour
	for p := range j.n {
		for _, q := range neighbours(p, j.n) {
			if q == j.me {
				senders++
			}
		}
	}
	// Small messages, fewer as ranks outnumber the cores (each then takes
	// longer); and one ring lap of 16 KiB messages per pair.
	msgs := j.o.msgs
	if j.mode == "goroutine" && j.n > runtime.GOMAXPROCS(0) {
		msgs = max(msgs*runtime.GOMAXPROCS(0)/j.n, 200)
	}
	lap := j.o.ringBytes/(16<<10) + 8
	got, err := sink(node, "sink", senders*msgs)
	if err != nil {
		return err
	}
	gotLap, err := sink(node, "lap", senders*lap)
	if err != nil {
		return err
	}
	if _, err := node.SpawnNamed(actor.PropsFromFunc(func(c actor.Context) {
		if _, ok := c.Message().(*ScaleMsg); ok {
			c.Respond(c.Message())
		}
	}), "pong"); err != nil {
		return err
	}
	if err := j.c.Barrier(ctx); err != nil {
		return err
	}
	if err := j.memory(ctx, "start", node); err != nil {
		return err
	}

	// Round trips, rank 0 <-> rank n-1.
	if j.n >= 2 && j.me == 0 {
		reps := make([]float64, j.o.reps)
		for i := range reps {
			ns, err := roundTrips(ctx, node, node.PID(j.n-1, "pong"), j.o.rttIters)
			if err != nil {
				return err
			}
			reps[i] = ns
		}
		j.add("actor_rtt_ns", 0, median(reps), "ns")
	}
	if err := j.c.Barrier(ctx); err != nil {
		return err
	}

	// Throughput: everyone to its neighbours at once.
	if j.n >= 2 {
		t := time.Now()
		if err := tellAll(ctx, node, nb, "sink", msgs, 8, got); err != nil {
			return fmt.Errorf("rank %d: %w", j.me, err)
		}
		slowest, err := j.maxAll(ctx, time.Since(t).Seconds())
		if err != nil {
			return err
		}
		j.add("actor_msgs_per_s", 0, float64(senders*msgs)/slowest, "msg/s")
		// A lap of every ring in use, so the memory figure is the most
		// those pairs can commit.
		if err := tellAll(ctx, node, nb, "lap", lap, 16<<10-64, gotLap); err != nil {
			return fmt.Errorf("rank %d: %w", j.me, err)
		}
	}
	if err := j.c.Barrier(ctx); err != nil {
		return err
	}
	if err := j.memory(ctx, "traffic", node); err != nil {
		return err
	}
	if j.o.heapDir != "" && (j.mode == "process" || j.me == 0) {
		return heapProfile(filepath.Join(j.o.heapDir, fmt.Sprintf("heap-r%d.pprof", j.me)))
	}
	return nil
}

func heapProfile(path string) error {
	f, err := os.Create(path)
	if err != nil {
		return err
	}
	runtime.GC()
	return errors.Join(pprof.WriteHeapProfile(f), f.Close())
}

// sink spawns an actor named name that closes the returned channel once it
// has received want ScaleMsgs.
func sink(node *actor.Node, name string, want int) (<-chan struct{}, error) {
	got := make(chan struct{})
	count := 0
	_, err := node.SpawnNamed(actor.PropsFromFunc(func(c actor.Context) {
		if _, ok := c.Message().(*ScaleMsg); ok {
			if count++; count == want {
				close(got)
			}
		}
	}), name)
	return got, err
}

// tellAll Tells msgs ScaleMsgs of size data bytes to the actor named name
// on each rank of to, then waits for this rank's sink channel got.
func tellAll(ctx context.Context, node *actor.Node, to []int, name string, msgs, size int, got <-chan struct{}) error {
	msg := &ScaleMsg{Data: make([]byte, size)}
	for i := range msgs {
		msg.Seq = uint64(i)
		for _, p := range to {
			if err := node.Tell(node.PID(p, name), msg); err != nil {
				return err
			}
		}
	}
	select {
	case <-got:
		return nil
	case <-ctx.Done():
		return fmt.Errorf("%s: messages still missing: %w", name, ctx.Err())
	}
}

// roundTrips is the mean ns of iters request/response round trips from an
// actor on this node to target.
func roundTrips(ctx context.Context, node *actor.Node, target *actor.PID, iters int) (float64, error) {
	done := make(chan time.Duration, 1)
	left := 0
	var start time.Time
	msg := &ScaleMsg{Data: make([]byte, 8)}
	ping := node.Spawn(actor.PropsFromFunc(func(c actor.Context) {
		switch c.Message().(type) {
		case int:
			left, start = c.Message().(int), time.Now()
			c.Request(target, msg)
		case *ScaleMsg:
			if left--; left == 0 {
				done <- time.Since(start)
				return
			}
			c.Request(target, msg)
		}
	}))
	defer node.Root().Stop(ping)
	node.Root().Send(ping, iters)
	select {
	case d := <-done:
		return float64(d.Nanoseconds()) / float64(iters), nil
	case <-ctx.Done():
		return 0, ctx.Err()
	}
}

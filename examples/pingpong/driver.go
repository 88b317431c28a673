package main

import (
	"context"
	"fmt"
	"os"
	"runtime/pprof"
	"slices"
	"strings"
	"sync"
	"time"
)

// results are one transport's figures, over all repetitions.
type results struct {
	rtt, rttIdle []time.Duration
	mesh         []time.Duration // every request of the mesh figure
	meshRate     []float64       // requests/s of the job, per repetition
	thr1, thrN   []float64       // messages/s per repetition
	// CPU per message of the throughput runs (µs): the receiving rank's
	// process, and the sending ranks' processes together.
	cpuRecv1, cpuSend1, cpuRecvN, cpuSendN []float64
}

// idleWarmup is how many round trips, a pause apart, each transport's
// after-idle series starts with, untimed.
const idleWarmup = 2

// drive runs the phases on rank 0 and prints the report.
func drive(ctx context.Context, r *rank, o options) error {
	n := r.node
	ask := func(rank int, msg any) (any, error) {
		return n.Root().RequestFuture(n.PID(rank, "ctl"), msg, 10*time.Second).Result()
	}
	if at := r.ts["protoremote"]; at != nil {
		for k := 1; k < n.Size(); k++ {
			res, err := ask(k, &AnchorAddrRequest{})
			if err != nil {
				return fmt.Errorf("anchor address of rank %d: %w", k, err)
			}
			at.addrs[k] = res.(*AnchorAddr).Addr
		}
	}
	res := map[string]*results{}
	for _, t := range r.order {
		res[t.name] = &results{}
	}
	fmt.Printf("# pingpong: %d ranks, %d-byte messages, %d reps; transports %v; %s\n", n.Size(), o.size, o.reps, names(r.order), host())

	// Round trips, warm.
	for rep := range o.reps {
		if o.only != "" && o.only != "rtt" {
			break
		}
		for _, t := range r.order {
			if _, err := pingRounds(ctx, t, o.warmup, o.size); err != nil {
				return err
			}
			s, err := pingRounds(ctx, t, o.n, o.size)
			if err != nil {
				return err
			}
			res[t.name].rtt = append(res[t.name].rtt, s...)
			fmt.Printf("# rep %d %-12s rtt median %v\n", rep, t.name, pct(s, 50))
		}
	}
	// Round trips after an idle pause.
	for range o.reps {
		if o.only != "" && o.only != "idle" {
			break
		}
		for _, t := range r.order {
			// Two round trips first, not timed: the first follows the other
			// transports' figures (seconds of this transport's quiet, not
			// one pause), and a receive loop lingers only once frames have
			// recurred within mailbox.Config.Linger, which the second
			// shows it.
			for i := -idleWarmup; i < o.idleN; i++ {
				time.Sleep(o.pause)
				s, err := pingRounds(ctx, t, 1, o.size)
				if err != nil {
					return err
				}
				if i >= 0 {
					res[t.name].rttIdle = append(res[t.name].rttIdle, s...)
				}
			}
		}
	}
	// Mesh: every rank client and server.
	for rep := range o.reps {
		if o.only != "mesh" {
			break // only on request: it is the oversubscribed figure
		}
		for _, t := range r.order {
			lat, rate, err := meshRound(ctx, r, t, o, uint64(rep))
			if err != nil {
				return err
			}
			x := res[t.name]
			x.mesh, x.meshRate = append(x.mesh, lat...), append(x.meshRate, rate)
			fmt.Printf("# rep %d %-14s mesh p50 %v, %.0f requests/s\n", rep, t.name, pct(lat, 50), rate)
		}
	}
	// Throughput: one sender, then every other rank.
	senderSets := [][]int{{1}}
	if n.Size() > 2 {
		all := make([]int, 0, n.Size()-1)
		for k := 1; k < n.Size(); k++ {
			all = append(all, k)
		}
		senderSets = append(senderSets, all)
	}
	stopProfile := func() {}
	if o.cpuprofile != "" {
		stop, err := profile(o.cpuprofile)
		if err != nil {
			return err
		}
		stopProfile = stop
		defer stop()
	}
	for i, senders := range senderSets {
		if o.only != "" && o.only != "throughput" {
			break
		}
		for rep := range o.reps {
			for _, t := range r.order {
				rate, cpuRecv, cpuSend, err := throughput(ctx, r, t, senders, o)
				if err != nil {
					return err
				}
				x := res[t.name]
				if i == 0 {
					x.thr1, x.cpuRecv1, x.cpuSend1 = append(x.thr1, rate), append(x.cpuRecv1, cpuRecv), append(x.cpuSend1, cpuSend)
				} else {
					x.thrN, x.cpuRecvN, x.cpuSendN = append(x.thrN, rate), append(x.cpuRecvN, cpuRecv), append(x.cpuSendN, cpuSend)
				}
				fmt.Printf("# rep %d %-14s %d→1 %.3f M msg/s, CPU per message %.2f µs receiving, %.2f µs sending\n",
					rep, t.name, len(senders), rate/1e6, cpuRecv, cpuSend)
			}
		}
	}
	stopProfile()
	// Idle CPU of ranks 0 and 1.
	var idle0, idle1 float64
	if o.idleWindow > 0 {
		// Both ranks sample their own process over the same window,
		// which starts once the probe's request has been answered and the
		// receive loops have backed off.
		probe := &IdleProbe{Settle: o.idleWindow / 2, Window: o.idleWindow}
		f := n.Root().RequestFuture(n.PID(1, "ctl"), probe, probe.Settle+probe.Window+10*time.Second)
		used0 := idleCPU(probe.Settle, probe.Window)
		res, err := f.Result()
		if err != nil {
			return fmt.Errorf("idle probe of rank 1: %w", err)
		}
		idle0 = float64(used0) / float64(o.idleWindow)
		idle1 = float64(res.(*CPU).Used) / float64(o.idleWindow)
	}
	for k := 1; k < n.Size(); k++ {
		if _, err := ask(k, &Finish{}); err != nil {
			return fmt.Errorf("finish rank %d: %w", k, err)
		}
	}
	report(r, res, o, len(senderSets[len(senderSets)-1]), idle0, idle1)
	return nil
}

// pingRounds runs n round trips through t's pinger and pong on rank 1.
func pingRounds(ctx context.Context, t *transport, n, size int) ([]time.Duration, error) {
	if n == 0 {
		return nil, nil
	}
	out := make(chan []time.Duration, 1)
	t.system.Root.Send(t.pinger, &pingRun{Target: t.pid(1, "pong"), N: n, Msg: t.msg(size), Out: out})
	select {
	case s := <-out:
		return s, nil
	case <-ctx.Done():
		return nil, fmt.Errorf("%s: %d round trips: %w", t.name, n, ctx.Err())
	}
}

// throughput has every rank in senders blast o.msgs messages at t's sink
// on rank 0 and returns messages/s, and the CPU time per message (µs) of
// rank 0's process and of the senders' processes together: a figure that a
// busy host disturbs less than the rate.
func throughput(ctx context.Context, r *rank, t *transport, senders []int, o options) (rate, cpuRecv, cpuSend float64, err error) {
	n := r.node
	want := o.msgs * len(senders)
	done := make(chan struct{})
	t.system.Root.Send(t.pid(0, "sink"), &sinkExpect{N: want, Done: done})
	cpus := func() (time.Duration, error) {
		var sum time.Duration
		for _, k := range senders {
			res, err := n.Root().RequestFuture(n.PID(k, "ctl"), &CPURequest{}, 10*time.Second).Result()
			if err != nil {
				return 0, err
			}
			sum += res.(*CPU).Used
		}
		return sum, nil
	}
	sendBefore, err := cpus()
	if err != nil {
		return 0, 0, 0, err
	}
	start, recvBefore := time.Now(), cpuTime()
	for _, k := range senders {
		if err := n.Tell(n.PID(k, "ctl"), &Blast{Transport: t.name, SinkAddr: t.addrs[0], N: o.msgs, Size: o.size}); err != nil {
			return 0, 0, 0, err
		}
	}
	limit := time.NewTimer(2 * time.Minute)
	defer limit.Stop()
	select {
	case <-done:
	case <-limit.C:
		return 0, 0, 0, fmt.Errorf("%s: %d→1: %d of %d messages arrived in 2 min", t.name, len(senders), t.sink.n.Load(), want)
	case <-ctx.Done():
		return 0, 0, 0, ctx.Err()
	}
	rate = float64(want) / time.Since(start).Seconds()
	cpuRecv = float64(cpuTime()-recvBefore) / 1e3 / float64(want)
	sendAfter, err := cpus()
	if err != nil {
		return 0, 0, 0, err
	}
	cpuSend = float64(sendAfter-sendBefore) / 1e3 / float64(want)
	return rate, cpuRecv, cpuSend, nil
}

// report prints every figure as "transport_figure: value unit", then the
// side-by-side table with each rdmactor variant's ratio to the anchor
// (anchor / rdmactor for times, rdmactor / anchor for rates: above 1 means
// rdmactor is better).
func report(r *rank, res map[string]*results, o options, many int, idle0, idle1 float64) {
	type figure struct {
		name, unit string
		higher     bool // higher is better
		get        func(*results) float64
	}
	first := res[r.order[0].name]
	us := func(d time.Duration) float64 { return float64(d) / 1e3 }
	var figs []figure
	if len(first.rtt) > 0 {
		figs = append(figs,
			figure{"rtt_p50", "us", false, func(s *results) float64 { return us(pct(s.rtt, 50)) }},
			figure{"rtt_p99", "us", false, func(s *results) float64 { return us(pct(s.rtt, 99)) }})
	}
	if len(first.rttIdle) > 0 {
		figs = append(figs,
			figure{"rtt_after_idle_p50", "us", false, func(s *results) float64 { return us(pct(s.rttIdle, 50)) }},
			figure{"rtt_after_idle_p99", "us", false, func(s *results) float64 { return us(pct(s.rttIdle, 99)) }})
	}
	if len(first.mesh) > 0 {
		figs = append(figs,
			figure{"mesh_p50", "us", false, func(s *results) float64 { return us(pct(s.mesh, 50)) }},
			figure{"mesh_p99", "us", false, func(s *results) float64 { return us(pct(s.mesh, 99)) }},
			figure{"mesh_requests", "k req/s", true, func(s *results) float64 { return median(s.meshRate) / 1e3 }})
	}
	if len(first.thr1) > 0 {
		figs = append(figs,
			figure{"throughput_1to1", "M msg/s", true, func(s *results) float64 { return median(s.thr1) / 1e6 }},
			figure{"cpu_per_msg_1to1", "us", false, func(s *results) float64 { return median(s.cpuRecv1) + median(s.cpuSend1) }})
	}
	if many > 1 && len(first.thrN) > 0 {
		figs = append(figs,
			figure{fmt.Sprintf("throughput_%dto1", many), "M msg/s", true, func(s *results) float64 { return median(s.thrN) / 1e6 }},
			figure{fmt.Sprintf("cpu_per_msg_%dto1", many), "us", false, func(s *results) float64 { return median(s.cpuRecvN) + median(s.cpuSendN) }})
	}
	for _, f := range figs {
		for _, t := range r.order {
			fmt.Printf("%s_%s: %.3f %s\n", t.name, f.name, f.get(res[t.name]), f.unit)
		}
	}
	if o.idleWindow > 0 {
		fmt.Printf("idle_cpu_rank0: %.2f %% of a core\nidle_cpu_rank1: %.2f %% of a core\n", 100*idle0, 100*idle1)
	}
	anchor := res["protoremote"]
	fmt.Printf("#\n# %-20s", "figure")
	for _, t := range r.order {
		fmt.Printf(" %16s", t.name)
	}
	if anchor != nil {
		for _, t := range r.order[:len(r.order)-1] {
			fmt.Printf(" %15s", "ratio "+strings.TrimPrefix(t.name, "rdmactor"))
		}
	}
	fmt.Println()
	for _, f := range figs {
		fmt.Printf("# %-20s", f.name)
		for _, t := range r.order {
			fmt.Printf(" %12.3f %-3s", f.get(res[t.name]), short(f.unit))
		}
		if anchor != nil {
			a := f.get(anchor)
			for _, t := range r.order[:len(r.order)-1] {
				v := f.get(res[t.name])
				ratio := a / v
				if f.higher {
					ratio = v / a
				}
				fmt.Printf(" %14.1fx", ratio)
			}
		}
		fmt.Println()
	}
	if anchor != nil {
		fmt.Printf("# ratio: protoremote/rdmactor for times, rdmactor/protoremote for rates (>1: rdmactor better)\n")
	}
}

func short(unit string) string {
	if unit == "M msg/s" {
		return "M/s"
	}
	return unit
}

// pct is the p-th percentile of s (nearest rank).
func pct(s []time.Duration, p float64) time.Duration {
	if len(s) == 0 {
		return 0
	}
	c := slices.Clone(s)
	slices.Sort(c)
	i := int(p/100*float64(len(c))+0.5) - 1
	return c[min(max(i, 0), len(c)-1)]
}

func median(s []float64) float64 {
	if len(s) == 0 {
		return 0
	}
	c := slices.Clone(s)
	slices.Sort(c)
	return c[len(c)/2]
}

func names(ts []*transport) []string {
	out := make([]string, len(ts))
	for i, t := range ts {
		out[i] = t.name
	}
	return out
}

// profile writes a CPU profile to path until stop is called (more than
// once is fine).
func profile(path string) (stop func(), err error) {
	f, err := os.Create(path)
	if err != nil {
		return nil, err
	}
	if err := pprof.StartCPUProfile(f); err != nil {
		f.Close()
		return nil, err
	}
	var once sync.Once
	return func() { once.Do(func() { pprof.StopCPUProfile(); f.Close() }) }, nil
}

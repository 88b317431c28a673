//go:build ofi && cgo && linux

// Command ofiraw measures rdmactor's ofi provider against raw libfabric on
// the same fabric, as docs/benchmarks.md reports (scripts/bench_ofi.sh
// builds it as "bench" and runs it):
//
//	bench -mode raw -role server -addr 127.0.0.1:47700 -prov tcp &
//	bench -mode raw -role client -addr 127.0.0.1:47700 -prov tcp
//	bench -mode raw ... -loop go   (the same loops driven from Go)
//	RDMACTOR_OFI_PROVIDER=tcp rdmarun -np 2 -transport ofi bench -mode gin
//
// Both modes run the same tests and print one line per result:
//
//		RESULT <mode> <test> <bytes> <median> <unit> [all runs]
//
//	  - latency: a ping-pong of size-byte writes that signal the peer (raw:
//	    fi_writedata, the peer spinning on fi_cq_read, or with -sread
//	    blocking in fi_cq_sread; gin: Put with SignalInc, the peer in
//	    WaitSignal), reported as half a round trip in µs, like
//	    fi_pingpong's usec/xfer;
//	  - bw: iters writes of size bytes with at most window in flight (raw:
//	    window completions outstanding; gin: Config.SQDepth = window), the
//	    last one signalled and answered by the peer, reported in MB/s (1e6
//	    bytes) from the first post to the answer.
//
// Before each run the two sides synchronize the way each mode would: raw
// over its control socket (the server sends, then waits for the client's
// answer, so it is polling before the client starts), gin with a
// one-sided barrier (package barrier, two signals). Not with the
// bootstrap's Barrier: that goes through the launcher's control plane
// (protoactor remote over gRPC), whose members leave up to 3 ms apart on
// the 2-core VM, and a run's first writes then wait for a target that is
// not yet reading its CQ.
package main

import (
	"context"
	"flag"
	"fmt"
	"net"
	"os"
	"runtime/pprof"
	"sort"
	"strings"
	"time"

	"github.com/rdmactor/rdmactor/barrier"
	"github.com/rdmactor/rdmactor/gin"
	"github.com/rdmactor/rdmactor/internal/idle"
	"github.com/rdmactor/rdmactor/transport/rdma/ofi"
)

type params struct {
	latSize, latIters, warmup int
	bwSizes                   []int
	bwBytes                   int // bytes per bandwidth run
	window, reps              int
	idle, cpuprofile, label   string
	sread, goLoop, goYield    bool
}

func main() {
	mode := flag.String("mode", "gin", "raw (libfabric alone) or gin (rdmactor over the ofi provider, under rdmarun -np 2)")
	role := flag.String("role", "client", "raw: server or client")
	addr := flag.String("addr", "127.0.0.1:47700", "raw: the server's control address (address exchange)")
	prov := flag.String("prov", os.Getenv(ofi.EnvProvider), "raw: libfabric provider (tcp, sockets...)")
	iface := flag.String("iface", os.Getenv(ofi.EnvIface), "raw: libfabric domain (interface)")
	var p params
	flag.IntVar(&p.latSize, "lat-size", 8, "ping-pong size in bytes")
	flag.IntVar(&p.latIters, "lat-iters", 10000, "ping-pong round trips per run")
	flag.IntVar(&p.warmup, "warmup", 1000, "untimed round trips before each run")
	sizes := flag.String("bw-sizes", "65536,1048576", "bandwidth sizes in bytes")
	flag.IntVar(&p.bwBytes, "bw-bytes", 256<<20, "bytes per bandwidth run")
	flag.IntVar(&p.window, "window", 64, "writes in flight in bandwidth runs")
	flag.IntVar(&p.reps, "reps", 5, "runs per test (the median is reported)")
	flag.BoolVar(&p.sread, "sread", false, "raw: block in fi_cq_sread (a CQ wait object) instead of spinning on fi_cq_read")
	loop := flag.String("loop", "c", "raw: run the ping-pong and bandwidth loops in c, in go (one cgo call per post and per CQ read: what the Go runtime adds), or in goyield (go, yielding as the ofi provider does)")
	flag.StringVar(&p.label, "label", "gin", "gin: the mode's name in RESULT lines")
	flag.StringVar(&p.cpuprofile, "cpuprofile", "", "gin: write a CPU profile to this file, suffixed .<rank>")
	flag.StringVar(&p.idle, "idle", "default", "gin: how waits idle: default (idle.Default) or spin (as cmd/rdmabench: 2^20 spins, 2^10 yields, parks of 1-100 µs; on a loaded 2-core VM spinning waiters starve the progress threads)")
	flag.Parse()
	switch *loop {
	case "c":
	case "go":
		p.goLoop = true
	case "goyield":
		p.goLoop, p.goYield = true, true
	default:
		fail(fmt.Errorf("-loop %q: want c, go or goyield", *loop))
	}
	for _, s := range strings.Split(*sizes, ",") {
		var n int
		if _, err := fmt.Sscan(s, &n); err != nil || n <= 0 {
			fail(fmt.Errorf("-bw-sizes: %q", s))
		}
		p.bwSizes = append(p.bwSizes, n)
	}
	var err error
	switch *mode {
	case "raw":
		err = runRaw(*role == "server", *addr, *prov, *iface, p)
	case "gin":
		err = runGin(p)
	default:
		err = fmt.Errorf("-mode %q: want raw or gin", *mode)
	}
	fail(err)
}

func fail(err error) {
	if err != nil {
		fmt.Fprintln(os.Stderr, "bench:", err)
		os.Exit(1)
	}
}

func maxBuf(p params) int {
	n := p.latSize
	for _, s := range p.bwSizes {
		n = max(n, s)
	}
	return n
}

func report(mode, test string, size int, vals []float64, unit string) {
	s := append([]float64(nil), vals...)
	sort.Float64s(s)
	all := make([]string, len(vals))
	for i, v := range vals {
		all[i] = fmt.Sprintf("%.2f", v)
	}
	fmt.Printf("RESULT %s %s %d %.2f %s [%s]\n", mode, test, size, s[len(s)/2], unit, strings.Join(all, " "))
}

func runRaw(server bool, addr, prov, iface string, p params) error {
	if prov == "" {
		prov = "tcp"
	}
	var conn net.Conn
	var err error
	if server {
		l, err := net.Listen("tcp", addr)
		if err != nil {
			return err
		}
		conn, err = l.Accept()
		l.Close()
		if err != nil {
			return err
		}
	} else {
		deadline := time.Now().Add(10 * time.Second)
		for {
			if conn, err = net.Dial("tcp", addr); err == nil || time.Now().After(deadline) {
				break
			}
			time.Sleep(20 * time.Millisecond)
		}
		if err != nil {
			return err
		}
	}
	defer conn.Close()
	// No injection, as the ofi provider on these providers (config.go,
	// quirks): rxm 1.17 cannot fail an injected write, sockets drops the
	// CQ data of injected writes.
	s, err := openRaw(prov, iface, maxBuf(p), conn, server, 0, p.sread)
	if err != nil {
		return err
	}
	defer s.close()
	s.goLoop, s.goYield = p.goLoop, p.goYield
	if !server {
		fmt.Printf("# raw libfabric on %s\n", s.prov())
	}
	// Connection setup (tens of ms on tcp) is not timed: one round trip first.
	if _, err := s.pingpong(server, p.latSize, 1, 10); err != nil {
		return err
	}
	var lat []float64
	for range p.reps {
		if err := sync(conn, server); err != nil {
			return err
		}
		d, err := s.pingpong(server, p.latSize, p.latIters, p.warmup)
		if err != nil {
			return err
		}
		lat = append(lat, float64(d.Nanoseconds())/1e3)
	}
	if !server {
		report(rawLabel(p), "latency", p.latSize, lat, "us")
	}
	for _, size := range p.bwSizes {
		var bw []float64
		for range p.reps {
			if err := sync(conn, server); err != nil {
				return err
			}
			v, err := s.bandwidth(server, size, max(p.bwBytes/size, p.window), p.window)
			if err != nil {
				return err
			}
			bw = append(bw, v)
		}
		if !server {
			report(rawLabel(p), "bw", size, bw, "MB/s")
		}
	}
	return sync(conn, server)
}

func rawLabel(p params) string {
	l := "raw"
	if p.goYield {
		l += "-goyield"
	} else if p.goLoop {
		l += "-go"
	}
	if p.sread {
		l += "-sread"
	}
	return l
}

// syncSignal is the first of the gin mode's barrier signals (one per rank).
const syncSignal = 3

func runGin(p params) error {
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Minute)
	defer cancel()
	cfg := gin.Config{Signals: syncSignal + 2, SQDepth: p.window}
	switch p.idle {
	case "default":
	case "spin":
		// As cmd/rdmabench (docs/benchmarks.md): a waiter about to be
		// answered is never asleep (Go's sleeps cost ~1 ms here).
		cfg.Idle = idle.Strategy{Spins: 1 << 20, Yields: 1 << 10, MinSleep: time.Microsecond, MaxSleep: 100 * time.Microsecond}
	default:
		return fmt.Errorf("-idle %q: want spin or default", p.idle)
	}
	c, err := gin.Init(ctx, cfg)
	if err != nil {
		return err
	}
	defer c.Close()
	if c.Size() != 2 {
		return fmt.Errorf("want 2 ranks, have %d (rdmarun -np 2)", c.Size())
	}
	if p.cpuprofile != "" {
		f, err := os.Create(fmt.Sprintf("%s.%d", p.cpuprofile, c.Rank()))
		if err != nil {
			return err
		}
		defer f.Close()
		if err := pprof.StartCPUProfile(f); err != nil {
			return err
		}
		defer pprof.StopCPUProfile()
	}
	win, err := c.RegisterWindow(ctx, maxBuf(p), 0)
	if err != nil {
		return err
	}
	x, _ := c.Context(0)
	me, peer, w := c.Rank(), 1-c.Rank(), c.World()
	bar, err := barrier.NewSession(x, w, syncSignal, 0)
	if err != nil {
		return err
	}
	startRun := func() error { return bar.Sync(ctx, barrier.FenceNone) } // not raw.go's sync: that is the control socket's
	client := me == 0
	if client {
		fmt.Printf("# rdmactor gin over ofi (%s), idle %s\n", os.Getenv(ofi.EnvProvider), p.idle)
	}
	var pings, acks uint64 // signal 0: pings and pongs; signal 1: end of a bandwidth run; 2: its answer; syncSignal on: the barrier
	pingpong := func(iters int) (time.Duration, error) {
		start := time.Now()
		for range iters {
			if client {
				if err := x.Put(w, peer, win, 0, win, 0, p.latSize, gin.SignalInc(0), gin.LocalNone); err != nil {
					return 0, err
				}
				pings++
				if _, err := x.WaitSignal(ctx, 0, pings, 64); err != nil {
					return 0, err
				}
			} else {
				pings++
				if _, err := x.WaitSignal(ctx, 0, pings, 64); err != nil {
					return 0, err
				}
				if err := x.Put(w, peer, win, 0, win, 0, p.latSize, gin.SignalInc(0), gin.LocalNone); err != nil {
					return 0, err
				}
			}
		}
		return time.Since(start), nil
	}
	if _, err := pingpong(10); err != nil { // connections and mode queries, untimed
		return err
	}
	var lat []float64
	for range p.reps {
		if err := startRun(); err != nil {
			return err
		}
		if _, err := pingpong(p.warmup); err != nil {
			return err
		}
		d, err := pingpong(p.latIters)
		if err != nil {
			return err
		}
		lat = append(lat, float64(d.Nanoseconds())/1e3/float64(p.latIters)/2)
	}
	if client {
		report(p.label, "latency", p.latSize, lat, "us")
	}
	if err := x.Flush(ctx); err != nil {
		return err
	}
	for _, size := range p.bwSizes {
		iters := max(p.bwBytes/size, p.window)
		var bw []float64
		for range p.reps {
			if err := startRun(); err != nil {
				return err
			}
			acks++
			if !client {
				if _, err := x.WaitSignal(ctx, 1, acks, 64); err != nil {
					return err
				}
				if err := x.Signal(w, peer, gin.SignalInc(2)); err != nil {
					return err
				}
				continue
			}
			start := time.Now()
			for i := range iters {
				remote := gin.None
				if i == iters-1 {
					remote = gin.SignalInc(1)
				}
				if err := x.Put(w, peer, win, 0, win, 0, size, remote, gin.LocalNone); err != nil {
					return err
				}
			}
			if _, err := x.WaitSignal(ctx, 2, acks, 64); err != nil {
				return err
			}
			bw = append(bw, float64(size)*float64(iters)/float64(time.Since(start).Nanoseconds())*1e3)
			if err := x.Flush(ctx); err != nil {
				return err
			}
		}
		if client {
			report(p.label, "bw", size, bw, "MB/s")
		}
	}
	if err := x.Flush(ctx); err != nil {
		return err
	}
	return c.Barrier(ctx)
}

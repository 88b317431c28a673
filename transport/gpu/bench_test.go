package gpu_test

import (
	"context"
	"errors"
	"fmt"
	"os"
	"strconv"
	"sync"
	"testing"
	"time"

	"github.com/rdmactor/rdmactor/internal/memword"
	"github.com/rdmactor/rdmactor/transport/gpu"
	"github.com/rdmactor/rdmactor/transport/gpu/cuda"
	"github.com/rdmactor/rdmactor/transport/gpu/internal/gputest"
	"github.com/stretchr/testify/require"
)

// Benchmarks of the GPU paths, each with its anchor measured in the same
// run (docs/gpu.md quotes them):
//
//   - BenchmarkLSAPut: put bandwidth GPU0 -> GPU1 from a kernel (every block
//     puts its share, CoopBlock) against cuMemcpyPeerAsync of the same
//     bytes, 1 MiB .. 256 MiB, one put per launch: put-GB/s (gpu.Comm.Launch),
//     ovl-GB/s (gpu.Comm.LaunchOverlapped), peer-GB/s and the ratios
//     put/peer, ovl/peer; loop-GB/s is 16 puts in one kernel.
//   - BenchmarkLSAPingPong: put(8 B)+SignalInc ping-pong between kernels on
//     two GPUs, and the same with putValue, against a raw kernel doing a
//     peer store, a system fence and a flag store: put-us/rt,
//     putValue-us/rt, raw-us/rt and the ratios (round trips).
//   - BenchmarkProxy: the proxy path on one GPU (two ranks as goroutines
//     over shm): ping-pong of 8-byte puts (us/rt) and the message rate of
//     8-byte putValues (Mmsg/s).
//
// RDMACTOR_BENCH_BLOCKS overrides the put kernel's block count;
// RDMACTOR_BENCH_VA_SIGNALS=1 runs BenchmarkProxy with device signals as VA
// signals of a window (the fallback) instead of gin's own signals.

func benchSource(b testing.TB) string {
	return kernelSource(b, "bench.cu")
}

// benchRanks is two ranks, their windows and bench.cu loaded on each.
type benchRanks struct {
	gs   []*gpu.Comm
	ws   []*gpu.Window
	fns  []map[string]*cuda.Function
	outs []cuda.DevicePtr
	sig0 uint64 // signal 0's value so far (pingpong), the same on both ranks
	flag uint64 // the raw ping-pong's flag value so far
}

func newBenchRanks(b *testing.B, path gpu.Path, devices []int, window int) *benchRanks {
	b.Helper()
	gs := newLocal(b, 2, path, devices)
	br := &benchRanks{gs: gs, ws: make([]*gpu.Window, 2), fns: make([]map[string]*cuda.Function, 2), outs: make([]cuda.DevicePtr, 2)}
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	parallelRanks(b, gs, func(r int, g *gpu.Comm) error {
		var err error
		if br.ws[r], err = g.RegisterWindow(ctx, window); err != nil {
			return err
		}
		mod, err := g.Load("bench.cu", benchSource(b))
		if err != nil {
			return err
		}
		br.fns[r] = map[string]*cuda.Function{}
		for _, k := range []string{"put_bw", "pingpong", "raw_pingpong", "msgrate", "gate"} {
			if br.fns[r][k], err = mod.Function(k); err != nil {
				return err
			}
		}
		br.outs[r], err = g.Context().MemAlloc(64)
		return err
	})
	return br
}

func parallelRanks(b testing.TB, gs []*gpu.Comm, fn func(r int, g *gpu.Comm) error) {
	b.Helper()
	errs := make([]error, len(gs))
	var wg sync.WaitGroup
	for r, g := range gs {
		wg.Add(1)
		go func() {
			defer wg.Done()
			errs[r] = fn(r, g)
		}()
	}
	wg.Wait()
	require.NoError(b, errors.Join(errs...))
}

// both runs kernel k on both ranks with (DevComm, window, args..., out) and
// returns each rank's out[0] (ns measured in the kernel).
func (br *benchRanks) both(b *testing.B, k string, grid, block int, args ...any) [2]uint64 {
	b.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	var ns [2]uint64
	parallelRanks(b, br.gs, func(r int, g *gpu.Comm) error {
		if err := g.Context().Memset(br.outs[r], 0, 64); err != nil {
			return err
		}
		if err := g.Gin().Barrier(ctx); err != nil { // no setup call of a rank overlaps a kernel
			return err
		}
		a := append([]any{g.DevComm(), br.ws[r].Handle()}, args...)
		if err := g.Run(ctx, br.fns[r][k], cuda.Dim3{X: grid}, cuda.Dim3{X: block}, 0, append(a, br.outs[r])...); err != nil {
			return err
		}
		out := make([]byte, 16)
		if err := g.Context().CopyFromDevice(out, br.outs[r]); err != nil {
			return err
		}
		if le(out, 1) != 0 {
			return fmt.Errorf("rank %d: kernel %s reports %d (aborted or wrong data)", r, k, le(out, 1))
		}
		ns[r] = le(out, 0)
		return g.Gin().Barrier(ctx)
	})
	return ns
}

func BenchmarkLSAPut(b *testing.B) {
	gputest.SkipIfFewerGPUs(b, 2)
	const maxBytes = 256 << 20
	br := newBenchRanks(b, gpu.PathLSA, []int{0, 1}, maxBytes)
	g0, g1 := br.gs[0], br.gs[1]
	sms, err := g0.Device().Attribute(cuda.AttrMultiprocessorCount)
	require.NoError(b, err)
	st := g0.Stream()
	e0, err := g0.Context().NewEvent()
	require.NoError(b, err)
	e1, err := g0.Context().NewEvent()
	require.NoError(b, err)
	flagMem, err := g0.Context().HostAlloc(8)
	require.NoError(b, err)
	defer flagMem.Close()
	flag := memword.Uint64(flagMem.Bytes(), 0)
	// timed runs n ops back to back on the GPU and returns their GPU time:
	// batches of at most 256 are queued behind a gate kernel that the host
	// opens once they are all queued, so the host's launch rate (purego
	// calls) is not what is measured, for the kernel or the copy engine.
	timed := func(n int, op func() error) time.Duration {
		var total time.Duration
		for done := 0; done < n; {
			k := min(n-done, 256)
			flag.Store(0)
			require.NoError(b, g0.Launch(br.fns[0]["gate"], cuda.Dim3{X: 1}, cuda.Dim3{X: 1}, 0, flagMem.Dev()))
			require.NoError(b, e0.Record(st))
			for range k {
				if err := op(); err != nil {
					flag.Store(1)
					require.NoError(b, err)
				}
			}
			require.NoError(b, e1.Record(st))
			flag.Store(1)
			require.NoError(b, e1.Synchronize())
			d, err := cuda.Elapsed(e0, e1)
			require.NoError(b, err)
			total += d
			done += k
		}
		return total
	}
	blockCounts := []int{sms, 2 * sms, 4 * sms}
	if s := os.Getenv("RDMACTOR_BENCH_BLOCKS"); s != "" {
		n, err := strconv.Atoi(s)
		require.NoError(b, err)
		blockCounts = []int{n}
	}
	for size := 1 << 20; size <= maxBytes; size *= 4 {
		for _, blocks := range blockCounts {
			b.Run(fmt.Sprintf("size=%dMiB/blocks=%d", size>>20, blocks), func(b *testing.B) {
				putReps := func(reps int, overlapped bool) func() error {
					launch := g0.Launch
					if overlapped {
						launch = g0.LaunchOverlapped
					}
					return func() error {
						return launch(br.fns[0]["put_bw"], cuda.Dim3{X: blocks}, cuda.Dim3{X: 512}, 0,
							g0.DevComm(), br.ws[0].Handle(), int32(1), uint64(size), int32(reps))
					}
				}
				const reps = 16
				put, ovl, loop := putReps(1, false), putReps(1, true), putReps(reps, false)
				peer := func() error {
					return cuda.CopyPeerAsync(br.ws[1].Ptr(), g1.Context(), br.ws[0].Ptr(), g0.Context(), size, st)
				}
				timed(2, put) // warm up all four
				timed(2, ovl)
				timed(2, peer)
				timed(1, loop)
				b.SetBytes(int64(size))
				b.ResetTimer()
				tp := timed(b.N, put)
				to := timed(b.N, ovl)
				tc := timed(b.N, peer)
				nl := max(b.N/reps, 1)
				tl := timed(nl, loop)
				b.StopTimer()
				gbs := func(n int, d time.Duration) float64 { return float64(size) * float64(n) / d.Seconds() / 1e9 }
				b.ReportMetric(float64(tp.Nanoseconds())/float64(b.N), "ns/op")
				b.ReportMetric(gbs(b.N, tp), "put-GB/s")
				b.ReportMetric(gbs(b.N, tc), "peer-GB/s")
				b.ReportMetric(gbs(b.N, tp)/gbs(b.N, tc), "put/peer")
				b.ReportMetric(gbs(b.N, to), "ovl-GB/s")
				b.ReportMetric(gbs(b.N, to)/gbs(b.N, tc), "ovl/peer")
				b.ReportMetric(gbs(nl*reps, tl), "loop-GB/s")
				b.ReportMetric(gbs(nl*reps, tl)/gbs(b.N, tc), "loop/peer")
			})
		}
	}
}

func BenchmarkLSAPingPong(b *testing.B) {
	gputest.SkipIfFewerGPUs(b, 2)
	br := newBenchRanks(b, gpu.PathLSA, []int{0, 1}, 4096)
	b.ResetTimer()
	iters := max(b.N, 1000)
	put := br.both(b, "pingpong", 1, 1, int32(iters), int32(0), br.sig0)
	br.sig0 += uint64(iters)
	val := br.both(b, "pingpong", 1, 1, int32(iters), int32(1), br.sig0)
	br.sig0 += uint64(iters)
	raw := br.both(b, "raw_pingpong", 1, 1, int32(iters), br.flag)
	br.flag += uint64(iters)
	b.StopTimer()
	us := func(ns uint64) float64 { return float64(ns) / float64(iters) / 1e3 }
	p, v, r := us(put[0]), us(val[0]), us(raw[0])
	b.ReportMetric(p*1e3, "ns/op")
	b.ReportMetric(p, "put-us/rt")
	b.ReportMetric(v, "putValue-us/rt")
	b.ReportMetric(r, "raw-us/rt")
	b.ReportMetric(p/r, "put/raw")
	b.ReportMetric(v/r, "putValue/raw")
}

func BenchmarkProxy(b *testing.B) {
	gputest.SkipIfNoGPU(b)
	if os.Getenv("RDMACTOR_BENCH_VA_SIGNALS") == "1" {
		gpu.SetVASignalsOnly(true)
		defer gpu.SetVASignalsOnly(false)
	}
	br := newBenchRanks(b, gpu.PathProxy, []int{0, 0}, 4096)
	require.Equal(b, os.Getenv("RDMACTOR_BENCH_VA_SIGNALS") != "1", br.gs[0].GinSignals())
	b.Run("pingpong", func(b *testing.B) {
		iters := max(b.N, 200)
		ns := br.both(b, "pingpong", 1, 1, int32(iters), int32(0), br.sig0)
		br.sig0 += uint64(iters)
		us := float64(ns[0]) / float64(iters) / 1e3
		b.ReportMetric(us*1e3, "ns/op")
		b.ReportMetric(us, "us/rt")
		b.ReportMetric(us/2, "us/oneway")
	})
	var sent uint64
	b.Run("msgrate", func(b *testing.B) {
		n := max(b.N, 20000)
		ns := br.both(b, "msgrate", 1, 32, int32(n), sent)
		sent += uint64(n)
		rate := float64(n) / (float64(ns[1]) / 1e9) / 1e6
		b.ReportMetric(float64(ns[1])/float64(n), "ns/op")
		b.ReportMetric(rate, "Mmsg/s")
	})
}

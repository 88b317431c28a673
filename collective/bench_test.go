package collective_test

import (
	"fmt"
	"sync"
	"testing"

	"github.com/rdmactor/rdmactor/bench/perf"
	"github.com/rdmactor/rdmactor/collective"
	"github.com/rdmactor/rdmactor/gin"
)

// The benchmarks run 2 goroutine ranks (gin.NewLocal over shm) that spin
// while they wait. Each size has a same-run baseline, "copy": one Go copy
// of the bytes a rank must move at least (its share of the message), so
// the ratio shows the cost of synchronization and of the algorithm.
// examples/collectives measures ranks that are processes, against Open
// MPI (scripts/bench_collectives.sh).

var benchSizes = []int{8, 4 << 10, 256 << 10, 4 << 20}

// benchJob is a 2-rank job that spins, with a window of 2*size.
func benchJob(b *testing.B, size int) (*job, []*gin.Window) {
	b.Helper()
	j := newJob(b, 2, collective.Config{})
	return j, j.windows(2*size + 64)
}

// runRanks runs fn(r, iters) on both ranks b.N times and reports per-call
// figures.
func runRanks(b *testing.B, j *job, k collective.Collective, size int, fn func(r int) error) {
	b.ReportAllocs()
	b.SetBytes(int64(size))
	b.ResetTimer()
	errs := make([]error, 2)
	var wg sync.WaitGroup
	for r := range 2 {
		wg.Go(func() {
			for range b.N {
				if errs[r] = fn(r); errs[r] != nil {
					j.stop()
					return
				}
			}
		})
	}
	wg.Wait()
	b.StopTimer()
	for r, err := range errs {
		if err != nil {
			b.Fatalf("rank %d: %v", r, err)
		}
	}
	sec := b.Elapsed().Seconds() / float64(b.N)
	b.ReportMetric(sec*1e6, "us/call")
	b.ReportMetric(perf.AlgBW(size, sec)*perf.BusFactor(k, 2), "busGB/s")
}

func benchCopy(b *testing.B, n int) {
	src, dst := make([]byte, n), make([]byte, n)
	b.SetBytes(int64(n))
	for b.Loop() {
		copy(dst, src)
	}
}

func BenchmarkAllReduce(b *testing.B) {
	for _, size := range benchSizes {
		b.Run(fmt.Sprintf("size=%dB/copy", size), func(b *testing.B) { benchCopy(b, size) })
		b.Run(fmt.Sprintf("size=%dB/float32", size), func(b *testing.B) {
			j, w := benchJob(b, size)
			runRanks(b, j, collective.AllReduceOp, size, func(r int) error {
				return j.colls[r].AllReduce(j.ctx, collective.At(w[r], size), collective.At(w[r], 0), size/4, collective.Float32, collective.Sum)
			})
		})
	}
}

func BenchmarkAllGather(b *testing.B) {
	for _, size := range benchSizes[1:] {
		b.Run(fmt.Sprintf("size=%dB/copy", size), func(b *testing.B) { benchCopy(b, size) })
		b.Run(fmt.Sprintf("size=%dB/float32", size), func(b *testing.B) {
			j, w := benchJob(b, size)
			runRanks(b, j, collective.AllGatherOp, size, func(r int) error {
				return j.colls[r].AllGather(j.ctx, collective.At(w[r], size), collective.At(w[r], 0), size/8, collective.Float32)
			})
		})
	}
}

func BenchmarkAllToAll(b *testing.B) {
	for _, size := range benchSizes[1:] {
		b.Run(fmt.Sprintf("size=%dB/copy", size), func(b *testing.B) { benchCopy(b, size) })
		b.Run(fmt.Sprintf("size=%dB/bfloat16", size), func(b *testing.B) {
			j, w := benchJob(b, size)
			runRanks(b, j, collective.AllToAllOp, size, func(r int) error {
				return j.colls[r].AllToAll(j.ctx, collective.At(w[r], size), collective.At(w[r], 0), size/4, collective.Bfloat16)
			})
		})
	}
}

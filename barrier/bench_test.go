package barrier_test

import (
	"fmt"
	"runtime"
	"sync"
	"sync/atomic"
	"testing"

	"github.com/rdmactor/rdmactor/barrier"
	"github.com/rdmactor/rdmactor/gin"
)

// BenchmarkSync times one barrier over n goroutine ranks (gin.NewLocal on
// shm), flat against dissemination, with a same-run floor: a barrier on
// one shared atomic counter with no gin at all (what any barrier of
// goroutines costs at least). Ranks beyond GOMAXPROCS wait with
// Pacing.Gosched; the others spin (gin.Config.Idle). examples/barrier
// measures ranks that are processes, against Open MPI.
func BenchmarkSync(b *testing.B) {
	for _, n := range []int{2, 4, 8, 16, 32} {
		pacing, idle := barrier.Pacing{Gosched: true}, gin.DefaultIdle
		if n <= runtime.GOMAXPROCS(0) {
			pacing, idle = barrier.Pacing{}, gin.IdleStrategy{Spins: 1 << 20, Yields: 1 << 10, MinSleep: 1000, MaxSleep: 100000}
		}
		b.Run(fmt.Sprintf("n=%d/floor", n), func(b *testing.B) {
			var arrived atomic.Int64
			run(b, n, func(r int) error {
				for i := int64(1); i <= int64(b.N); i++ {
					arrived.Add(1)
					for arrived.Load() < i*int64(n) {
						if pacing.Gosched {
							runtime.Gosched()
						}
					}
				}
				return nil
			})
		})
		for _, k := range kinds {
			b.Run(fmt.Sprintf("n=%d/%s", n, k.name), func(b *testing.B) {
				j := newJob(b, n, gin.Config{Signals: k.signals(n, 1), Idle: idle})
				sessions := make([]barrier.Syncer, n)
				for r := range n {
					s, err := k.make(j.x(r), j.comms[r].World(), 0, 0, barrier.WithPacing(pacing))
					if err != nil {
						b.Fatal(err)
					}
					sessions[r] = s
				}
				run(b, n, func(r int) error {
					for range b.N {
						if err := sessions[r].Sync(j.ctx, barrier.FenceNone); err != nil {
							return err
						}
					}
					return nil
				})
			})
		}
	}
}

// run times fn on n goroutine ranks and reports ns per barrier.
func run(b *testing.B, n int, fn func(r int) error) {
	b.ReportAllocs()
	b.ResetTimer()
	errs := make([]error, n)
	var wg sync.WaitGroup
	for r := range n {
		wg.Go(func() { errs[r] = fn(r) })
	}
	wg.Wait()
	b.StopTimer()
	for r, err := range errs {
		if err != nil {
			b.Fatalf("rank %d: %v", r, err)
		}
	}
	b.ReportMetric(float64(b.Elapsed().Nanoseconds())/float64(b.N), "ns/barrier")
}

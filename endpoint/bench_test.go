package endpoint_test

import (
	"context"
	"fmt"
	"sync"
	"testing"
	"time"

	"github.com/rdmactor/rdmactor/gin"
	_ "github.com/rdmactor/rdmactor/transport/rdma/std"
)

// signalSweep is the numbers of signal indices in use towards one peer
// that BenchmarkPutSignalsInUse measures.
var signalSweep = []int{1, 8, 32, 128, 256}

// BenchmarkPutSignalsInUse is a stream of 8 B Put + SignalInc(0) from rank
// 0 to rank 1 (goroutine ranks over shm, gin.NewLocal) after k signal
// indices were used towards rank 1, so its endpoint group holds the data
// endpoint and k SCEndpoints. The doorbell visits only endpoints with
// published, unposted entries, so the cost must not grow with k: after the
// sweep it is flat: each k > 1 reports x-1sig, its ns/put over the ns/put
// at k = 1 measured just before in the same run (target: at most 1.2 at
// k = 128).
func BenchmarkPutSignalsInUse(b *testing.B) {
	maxK := signalSweep[len(signalSweep)-1]
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Minute)
	defer cancel()
	comms, err := gin.NewLocal(ctx, 2, gin.Config{Signals: maxK})
	if err != nil {
		b.Fatal(err)
	}
	defer func() {
		for _, c := range comms {
			c.Close()
		}
	}()
	var wins [2]*gin.Window
	var wg sync.WaitGroup
	errs := make([]error, 2)
	for r, c := range comms {
		wg.Go(func() { wins[r], errs[r] = c.RegisterWindow(ctx, 4096, 0) })
	}
	wg.Wait()
	for _, err := range errs {
		if err != nil {
			b.Fatal(err)
		}
	}
	x, err := comms[0].Context(0)
	if err != nil {
		b.Fatal(err)
	}
	team := comms[0].World()
	put := func(sig int) error {
		return x.Put(team, 1, wins[0], 2048, wins[0], 0, 8, gin.SignalInc(gin.Signal(sig)), gin.LocalNone)
	}
	ns := map[int]float64{}
	inUse := 0
	for _, k := range signalSweep {
		// Bring k signal indices into use (each creates its SCEndpoint),
		// outside the timed loop.
		for ; inUse < k; inUse++ {
			if err := put(inUse); err != nil {
				b.Fatal(err)
			}
		}
		if err := x.Flush(ctx); err != nil {
			b.Fatal(err)
		}
		b.Run(fmt.Sprintf("signals=%d", k), func(b *testing.B) {
			b.ReportAllocs()
			for b.Loop() {
				if err := put(0); err != nil {
					b.Fatal(err)
				}
			}
			v := float64(b.Elapsed().Nanoseconds()) / float64(b.N)
			b.ReportMetric(v, "ns/put")
			ns[k] = v
			if k > 1 && ns[1] > 0 {
				b.ReportMetric(v/ns[1], "x-1sig")
			}
		})
	}
}

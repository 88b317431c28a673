package endpoint_test

import (
	"context"
	"fmt"
	"testing"
	"time"

	"github.com/rdmactor/rdmactor/gin"
	"github.com/rdmactor/rdmactor/internal/testutils/ginlocal"
	_ "github.com/rdmactor/rdmactor/transport/rdma/std"
)

// signalSweep is the numbers of signal indices in use towards one peer
// that BenchmarkPutSignalsInUse measures.
var signalSweep = []int{1, 8, 32, 128, 256}

// BenchmarkPutSignalsInUse is a stream of 8 B Put + SignalInc(0) from rank
// 0 to rank 1 (goroutine ranks over shm, gin.NewLocal) after k signal
// indices were used towards rank 1 on context 1, so that group holds the
// data endpoint and k SCEndpoints. The doorbell visits only endpoints with
// published, unposted entries, so the cost must not grow with k.
//
// Each sub-benchmark alternates runs of 256 puts on context 1 (k signals
// in use) with as many on context 0 (one signal in use, the anchor; at
// k = 1 the two are alike, which shows the method's own spread), and
// reports ns/put for context 1 and x-1sig, its cost over the anchor's in
// the same interleaved run, which a noisy host moves far less than either
// figure (target: at most 1.2 at k = 128).
func BenchmarkPutSignalsInUse(b *testing.B) {
	maxK := signalSweep[len(signalSweep)-1]
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Minute)
	defer cancel()
	comms, err := gin.NewLocal(ctx, 2, gin.Config{Signals: maxK, Contexts: 2})
	if err != nil {
		b.Fatal(err)
	}
	defer func() {
		for _, c := range comms {
			c.Close()
		}
	}()
	wins := ginlocal.Windows(b, ctx, comms, 4096)
	var xs [2]*gin.Context
	for i := range xs {
		if xs[i], err = comms[0].Context(i); err != nil {
			b.Fatal(err)
		}
	}
	team := comms[0].World()
	put := func(x *gin.Context, sig int) error {
		return x.Put(team, 1, wins[0], 2048, wins[0], 0, 8, gin.SignalInc(gin.Signal(sig)), gin.LocalNone)
	}
	if err := put(xs[0], 0); err != nil {
		b.Fatal(err)
	}
	inUse := 0
	for _, k := range signalSweep {
		// Bring k signal indices into use on context 1 (each creates its
		// SCEndpoint), outside the timed loop.
		for ; inUse < k; inUse++ {
			if err := put(xs[1], inUse); err != nil {
				b.Fatal(err)
			}
		}
		for _, x := range xs {
			if err := x.Flush(ctx); err != nil {
				b.Fatal(err)
			}
		}
		b.Run(fmt.Sprintf("signals=%d", k), func(b *testing.B) {
			// b.N puts on each context, in alternating runs timed alike.
			const run = 256
			var spent [2]time.Duration
			var done [2]int
			b.ReportAllocs()
			order := [][]int{{1, 0}, {0, 1}} // alternate, so neither gains from going first
			for round := 0; done[1] < b.N; round++ {
				n := min(run, b.N-done[1])
				for _, i := range order[round%2] {
					t := time.Now()
					for range n {
						if err := put(xs[i], 0); err != nil {
							b.Fatal(err)
						}
					}
					spent[i] += time.Since(t)
					done[i] += n
				}
			}
			ns := func(i int) float64 { return float64(spent[i].Nanoseconds()) / float64(done[i]) }
			b.ReportMetric(ns(1), "ns/put")
			b.ReportMetric(ns(1)/ns(0), "x-1sig")
		})
	}
}

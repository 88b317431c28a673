//go:build ofi && cgo && linux

package ofi_test

import (
	"context"
	"fmt"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/rdmactor/rdmactor/gin"
	"github.com/rdmactor/rdmactor/transport/rdma"
	"github.com/rdmactor/rdmactor/transport/rdma/ofi"
)

// BenchmarkPost measures the provider's post path alone: one 8-byte
// OpWrite with SignalInc per iteration, rank 0 to rank 1 of one process
// (ns/put is the caller's cost; the progress goroutines run beside it).
// Anchor: BenchmarkPostNop, the same Post with an OpNop (validation and
// the record ring, no libfabric call).
func BenchmarkPost(b *testing.B) {
	for _, prov := range providers {
		b.Run(prov, func(b *testing.B) {
			pr := newPair(b, prov, 1<<16)
			done := make(chan error, 1<<20)
			q, err := pr.p[0].Connect(1, func(_ uint64, err error) {
				if err != nil {
					done <- err
				}
			})
			require.NoError(b, err)
			w := []rdma.WQE{{Op: rdma.OpWrite, Local: pr.reg[0], Remote: pr.imp[0][1], RemoteOff: 64, Len: 8,
				Signal: rdma.Signal{Mode: rdma.SignalInc, Region: pr.imp[0][1], Off: 0, ModeOff: 8}}}
			require.NoError(b, q.Post(w)) // mode query, connection
			b.ReportAllocs()
			b.ResetTimer()
			for i := 0; i < b.N; i++ {
				for {
					err := q.Post(w)
					if err == nil {
						break
					}
					b.Fatal(err)
				}
				q.Progress()
			}
			b.StopTimer()
			b.ReportMetric(float64(b.Elapsed().Nanoseconds())/float64(b.N), "ns/put")
			select {
			case err := <-done:
				b.Fatal(err)
			default:
			}
		})
	}
}

func BenchmarkPostNop(b *testing.B) {
	pr := newPair(b, "tcp", 4096)
	q, err := pr.p[0].Connect(1, func(uint64, error) {})
	require.NoError(b, err)
	w := []rdma.WQE{{Op: rdma.OpNop}}
	b.ReportAllocs()
	for i := 0; i < b.N; i++ {
		if err := q.Post(w); err != nil {
			b.Fatal(err)
		}
	}
}

// BenchmarkGinPut is gin's Put (8 B, SignalInc) over ofi in one process,
// two goroutine ranks: what the gin and endpoint layers add to Post.
func BenchmarkGinPut(b *testing.B) {
	for _, prov := range providers {
		b.Run(prov, func(b *testing.B) {
			b.Setenv(ofi.EnvProvider, prov)
			skipIfNoProvider(b, prov)
			ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
			defer cancel()
			comms, err := gin.NewLocal(ctx, 2, gin.Config{Transport: ofi.Name, Signals: 2})
			require.NoError(b, err)
			defer func() {
				for _, c := range comms {
					c.Close()
				}
			}()
			ws, err := registerAll(ctx, comms, 4096, 0)
			require.NoError(b, err)
			x, _ := comms[0].Context(0)
			w := comms[0].World()
			require.NoError(b, x.Put(w, 1, ws[0], 0, ws[0], 0, 8, gin.SignalInc(0), gin.LocalNone))
			b.ReportAllocs()
			b.ResetTimer()
			for i := 0; i < b.N; i++ {
				if err := x.Put(w, 1, ws[0], 0, ws[0], 0, 8, gin.SignalInc(0), gin.LocalNone); err != nil {
					b.Fatal(fmt.Errorf("put %d: %w", i, err))
				}
			}
			require.NoError(b, x.Flush(ctx))
			b.StopTimer()
			b.ReportMetric(float64(b.Elapsed().Nanoseconds())/float64(b.N), "ns/put")
		})
	}
}

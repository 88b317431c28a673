package shm

import (
	"fmt"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/rdmactor/rdmactor/transport/rdma"
)

// BenchmarkPut posts one OpWrite+SignalInc per iteration between two
// in-process ranks, the shm hot path. Anchor: BenchmarkMemcpy, a plain copy
// of the same size between the same mappings.
func BenchmarkPut(b *testing.B) {
	for _, n := range []int{8, 64 << 10, 1 << 20} {
		b.Run(fmt.Sprintf("size=%dB", n), func(b *testing.B) {
			pr := newPair(b, n, n+64)
			wqe := []rdma.WQE{{Op: rdma.OpWrite, Local: pr.src, Remote: pr.imp, RemoteOff: 64, Len: n,
				Signal: rdma.Signal{Mode: rdma.SignalInc, Region: pr.imp, Off: 0, ModeOff: 8}}}
			q, err := pr.p0.Connect(1, func(uint64, error) {}) // no test bookkeeping
			require.NoError(b, err)
			b.SetBytes(int64(n))
			b.ReportAllocs()
			b.ResetTimer()
			for i := 0; i < b.N; i++ {
				wqe[0].WrID = uint64(i)
				if err := q.Post(wqe); err != nil {
					b.Fatal(err)
				}
			}
			b.StopTimer()
			b.ReportMetric(float64(b.Elapsed().Nanoseconds())/float64(b.N), "ns/put")
		})
	}
}

// BenchmarkMemcpy is the anchor for BenchmarkPut: copy alone, same sizes and
// mappings, no validation, no signal.
func BenchmarkMemcpy(b *testing.B) {
	for _, n := range []int{8, 64 << 10, 1 << 20} {
		b.Run(fmt.Sprintf("size=%dB", n), func(b *testing.B) {
			pr := newPair(b, n, n+64)
			src, dst := pr.src.Bytes(), pr.imp.(*remoteRegion).mem[64:64+n]
			b.SetBytes(int64(n))
			b.ReportAllocs()
			for i := 0; i < b.N; i++ {
				copy(dst, src)
			}
		})
	}
}

// TestPostDoesNotAllocate pins down the hot-path promise of Post.
func TestPostDoesNotAllocate(t *testing.T) {
	pr := newPair(t, 64, 4096)
	q, err := pr.p0.Connect(1, func(uint64, error) {})
	require.NoError(t, err)
	wqe := []rdma.WQE{
		{Op: rdma.OpWrite, Local: pr.src, Remote: pr.imp, RemoteOff: 64, Len: 64,
			Signal: rdma.Signal{Mode: rdma.SignalInc, Region: pr.imp, Off: 0, ModeOff: 8}},
		{Op: rdma.OpSignal, Signal: rdma.Signal{Mode: rdma.SignalAdd, Region: pr.imp, Off: 16, ModeOff: 24, Value: 3}},
		{Op: rdma.OpNop},
	}
	allocs := testing.AllocsPerRun(100, func() {
		if err := q.Post(wqe); err != nil {
			t.Fatal(err)
		}
	})
	require.Zero(t, allocs)
}

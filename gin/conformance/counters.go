package conformance

import (
	"fmt"
	"testing"

	"github.com/rdmactor/rdmactor/gin"
	"github.com/stretchr/testify/require"
)

func testCounters(t *testing.T, f Factory) {
	// gin/action.go, CounterInc: "ticks local counter c once the put's
	// source may be reused (ncclGin_CounterInc)": once per put, whatever
	// the put's remote action. NCCL gin.h ncclGin::waitCounter.
	t.Run("TickOncePerPut", func(t *testing.T) {
		e := setup(t, f, 2, gin.Config{Signals: 2, Counters: 4})
		n := scale(1000, 200)
		win := e.windows(64*n, 0)
		x := e.x(0, 0)
		for k := range n {
			remote := gin.None // data endpoint
			if k%3 == 0 {
				remote = gin.SignalInc(0) // SCEndpoint
			}
			require.NoError(t, x.Put(e.comms[0].World(), 1, win[0], 64*k, win[0], 0, 1+k%64, remote, gin.CounterInc(2)))
		}
		v, err := x.WaitCounter(e.ctx, 2, uint64(n), 56)
		require.NoError(t, err)
		require.Equal(t, uint64(n), v, "WaitCounter's value")
		require.NoError(t, x.Flush(e.ctx))
		v, err = x.ReadCounter(2, 56)
		require.NoError(t, err)
		require.Equal(t, uint64(n), v, "counter after %d puts and Flush", n)
		for _, c := range []gin.Counter{0, 1, 3} {
			v, err := x.ReadCounter(c, 56)
			require.NoError(t, err)
			require.Zero(t, v, "counter %d, never named", c)
		}
		// Counters are local: the peer's counter 2 did not move.
		v, err = e.x(1, 0).ReadCounter(2, 56)
		require.NoError(t, err)
		require.Zero(t, v, "peer's counter")
	})

	// gin/doc.go: "Counters are 56 bits wide"; gin/errors.go ErrBadArgument:
	// "bits outside 1..64 (1..56 for counters)". NCCL gin.h
	// ncclGinCounter_t: "limited to storing values of at most 56 bits".
	t.Run("Bits", func(t *testing.T) {
		e := setup(t, f, 1, gin.Config{Counters: 2})
		x := e.x(0, 0)
		for _, bits := range []int{0, -1, 57, 64, 65} {
			_, err := x.ReadCounter(0, bits)
			require.ErrorIs(t, err, gin.ErrBadArgument, "ReadCounter bits %d", bits)
			_, err = x.WaitCounter(e.ctx, 0, 0, bits)
			require.ErrorIs(t, err, gin.ErrBadArgument, "WaitCounter bits %d", bits)
		}
		for _, bits := range []int{1, 8, 56} {
			_, err := x.ReadCounter(0, bits)
			require.NoError(t, err, "ReadCounter bits %d", bits)
			_, err = x.WaitCounter(e.ctx, 0, 0, bits)
			require.NoError(t, err, "WaitCounter(0) bits %d", bits)
		}
	})

	// gin/counter.go, ResetCounter: "sets counter n to 0
	// (ncclGin::resetCounter)".
	t.Run("Reset", func(t *testing.T) {
		e := setup(t, f, 2, gin.Config{Counters: 2})
		win := e.windows(4096, 0)
		x := e.x(0, 0)
		for range 5 {
			require.NoError(t, x.Put(e.comms[0].World(), 1, win[0], 0, win[0], 0, 64, gin.None, gin.CounterInc(1)))
		}
		require.NoError(t, x.Flush(e.ctx))
		_, err := x.WaitCounter(e.ctx, 1, 5, 56)
		require.NoError(t, err)
		require.NoError(t, x.ResetCounter(1))
		v, err := x.ReadCounter(1, 56)
		require.NoError(t, err)
		require.Zero(t, v, "counter after ResetCounter")
		require.NoError(t, x.Put(e.comms[0].World(), 1, win[0], 0, win[0], 0, 64, gin.None, gin.CounterInc(1)))
		v, err = x.WaitCounter(e.ctx, 1, 1, 56)
		require.NoError(t, err)
		require.Equal(t, uint64(1), v, "counter ticks from 0 after a reset")
	})
}

func testFlush(t *testing.T, f Factory) {
	// gin/doc.go: "Flush returns when every put this Context issued is
	// locally complete: its source may be reused." The counter of every
	// earlier put has ticked when Flush returns (no wait needed). NCCL
	// gin.h ncclGin::flush.
	t.Run("CompletesEarlierPuts", func(t *testing.T) {
		e := setup(t, f, 2, gin.Config{Signals: 2, Counters: 2})
		win := e.windows(1<<20, 0)
		x := e.x(0, 0)
		n := 0
		for round := range scale(20, 5) {
			for k := range 50 {
				remote := gin.None
				if k%2 == 0 {
					remote = gin.SignalInc(1)
				}
				require.NoError(t, x.Put(e.comms[0].World(), 1, win[0], (k*4099)%(1<<19), win[0], 0, 1+k*97, remote, gin.CounterInc(0)))
				n++
			}
			require.NoError(t, x.Flush(e.ctx))
			v, err := x.ReadCounter(0, 56)
			require.NoError(t, err)
			require.Equal(t, uint64(n), v, "round %d: counter right after Flush", round)
		}
	})

	// "its source may be reused": after Flush the source is overwritten,
	// and the peer still gets what the put had when it was issued.
	t.Run("SourceReusable", func(t *testing.T) {
		e := setup(t, f, 2, gin.Config{Signals: 2})
		const size = 1 << 16
		src, dst := e.windows(size, 0), e.windows(size, 0)
		x := e.x(0, 0)
		for round := range scale(20, 5) {
			fill(src[0].Bytes(), uint64(round))
			require.NoError(t, x.Put(e.comms[0].World(), 1, dst[0], 0, src[0], 0, size, gin.SignalInc(0), gin.LocalNone))
			require.NoError(t, x.Flush(e.ctx))
			fill(src[0].Bytes(), 1<<32+uint64(round)) // reuse the source at once
			_, err := e.x(1, 0).WaitSignal(e.ctx, 0, uint64(round+1), 64)
			require.NoError(t, err)
			require.NoError(t, checkFill(dst[1].Bytes(), uint64(round)), "round %d: peer got the reused source", round)
		}
	})

	// gin/doc.go, Aggregate: "the next non-aggregated put or signal of the
	// Context to that peer, or Flush, hands the batch to the NIC at once":
	// Flush posts aggregated puts and completes them.
	t.Run("PostsAggregated", func(t *testing.T) {
		e := setup(t, f, 2, gin.Config{Signals: 2, Counters: 2})
		const n, size = 16, 512
		src, dst := e.windows(n*size, 0), e.windows(n*size, 0)
		x := e.x(0, 0)
		for k := range n {
			fill(src[0].Bytes()[k*size:(k+1)*size], uint64(k))
			require.NoError(t, x.Put(e.comms[0].World(), 1, dst[0], k*size, src[0], k*size, size, gin.SignalInc(0), gin.CounterInc(1), gin.Aggregate))
		}
		require.NoError(t, x.Flush(e.ctx))
		v, err := x.ReadCounter(1, 56)
		require.NoError(t, err)
		require.Equal(t, uint64(n), v, "counter right after Flush of %d aggregated puts", n)
		_, err = e.x(1, 0).WaitSignal(e.ctx, 0, n, 64)
		require.NoError(t, err)
		for k := range n {
			require.NoError(t, checkFill(dst[1].Bytes()[k*size:(k+1)*size], uint64(k)), fmt.Sprintf("put %d", k))
		}
	})
}

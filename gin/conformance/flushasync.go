package conformance

import (
	"testing"

	"github.com/rdmactor/rdmactor/gin"
	"github.com/stretchr/testify/require"
)

func testFlushAsync(t *testing.T, f Factory) {
	// gin/put.go, FlushAsync: "the handle's Wait returns once every put, put
	// value and signal this context issued before the call is locally complete, as Flush
	// would" (ncclGin::flushAsync, NCCL 2.30). Puts issued after the call
	// are not covered, and Done turns true once Wait has returned.
	t.Run("CoversEarlierPuts", func(t *testing.T) {
		e := setup(t, f, 2, gin.Config{Signals: 2, Counters: 2})
		win := e.windows(1<<20, 0)
		x := e.x(0, 0)
		n := 0
		for round := range scale(20, 5) {
			for k := range 40 {
				require.NoError(t, x.Put(e.comms[0].World(), 1, win[0], (k*4099)%(1<<19), win[0], 0, 1+k*97, gin.SignalInc(1), gin.CounterInc(0)))
				n++
			}
			h := x.FlushAsync()
			require.NoError(t, x.Put(e.comms[0].World(), 1, win[0], 0, win[0], 0, 8, gin.SignalInc(1), gin.CounterInc(1)))
			require.NoError(t, h.Wait(e.ctx))
			require.True(t, h.Done())
			v, err := x.ReadCounter(0, 56)
			require.NoError(t, err)
			require.Equal(t, uint64(n), v, "round %d: counter right after Wait", round)
			require.NoError(t, h.Wait(e.ctx), "a second Wait")
			require.NoError(t, x.Flush(e.ctx))
		}
		// Nothing issued: done at once.
		h := e.x(1, 0).FlushAsync()
		require.True(t, h.Done())
		require.NoError(t, h.Wait(e.ctx))
	})

	t.Run("AfterClose", func(t *testing.T) {
		e := setup(t, f, 2, gin.Config{Signals: 2})
		x := e.x(1, 0)
		h := x.FlushAsync()
		require.NoError(t, e.comms[1].Close())
		require.ErrorIs(t, h.Wait(e.ctx), gin.ErrClosed)
		require.ErrorIs(t, x.FlushAsync().Wait(e.ctx), gin.ErrClosed)
	})
}

package conformance

import (
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/rdmactor/rdmactor/gin"
)

func testGet(t *testing.T, f Factory) {
	// gin/get.go, Get: "reads bytes bytes of the peer's part of src at
	// srcOff into this rank's part of dst at dstOff ... CounterInc(c)
	// ticks counter c once the bytes have landed in dst, and Flush returns
	// only once every earlier Get of this context has landed"
	// (ncclGin::get, NCCL 2.30).
	t.Run("ReadsPeerBytes", func(t *testing.T) {
		e := setup(t, f, 2, gin.Config{Signals: 2, Counters: 2})
		if !e.comms[0].Capabilities().Get {
			win := e.windows(4096, 0)
			require.ErrorIs(t, e.x(0, 0).Get(e.comms[0].World(), 1, win[0], 0, win[0], 0, 8, gin.LocalNone), gin.ErrNotSupported)
			return
		}
		const size = 1 << 20
		win := e.windows(2*size, 0)
		src := win[1].Bytes()[:size]
		for i := range src {
			src[i] = byte(i*7 + i>>8)
		}
		// The source is written before the window is read by any peer:
		// a barrier orders the stores before the reads.
		e.ranks(func(r int) error { return e.comms[r].Barrier(e.ctx) })
		x := e.x(0, 0)
		world := e.comms[0].World()
		n := 0
		for k := range scale(200, 40) {
			off, ln := (k*4099)%(size/2), 1+(k*977)%(size/2)
			if k%10 == 0 {
				ln = 0
			}
			require.NoError(t, x.Get(world, 1, win[0], size+off, win[0], off, ln, gin.CounterInc(0)))
			n++
			if k%16 == 15 {
				_, err := x.WaitCounter(e.ctx, 0, uint64(n), 56)
				require.NoError(t, err)
				require.Equal(t, src[off:off+ln], win[0].Bytes()[size+off:size+off+ln], "get %d: [%d, +%d)", k, off, ln)
			}
		}
		// Flush covers a Get with no local action.
		require.NoError(t, x.Get(world, 1, win[0], 0, win[0], 0, size, gin.LocalNone))
		require.NoError(t, x.Flush(e.ctx))
		require.Equal(t, src, win[0].Bytes()[:size])
		_, err := x.WaitCounter(e.ctx, 0, uint64(n), 56)
		require.NoError(t, err)
	})

	t.Run("Loopback", func(t *testing.T) {
		e := setup(t, f, 2, gin.Config{Signals: 2, Counters: 1})
		if !e.comms[0].Capabilities().Get {
			t.Skip("provider without Get")
		}
		win := e.windows(8192, 0)
		copy(win[1].Bytes(), "loopback get")
		x := e.x(1, 0)
		require.NoError(t, x.Get(e.comms[1].World(), 1, win[1], 4096, win[1], 0, 12, gin.CounterInc(0)))
		_, err := x.WaitCounter(e.ctx, 0, 1, 56)
		require.NoError(t, err)
		require.Equal(t, "loopback get", string(win[1].Bytes()[4096:4108]))
	})

	t.Run("Errors", func(t *testing.T) {
		e := setup(t, f, 2, gin.Config{Signals: 2, Counters: 1})
		if !e.comms[0].Capabilities().Get {
			t.Skip("provider without Get")
		}
		win := e.windows(4096, 0)
		x := e.x(0, 0)
		world := e.comms[0].World()
		require.ErrorIs(t, x.Get(world, 1, win[0], 4090, win[0], 0, 8, gin.LocalNone), gin.ErrOutOfBounds)
		require.ErrorIs(t, x.Get(world, 1, win[0], 0, win[0], -1, 8, gin.LocalNone), gin.ErrOutOfBounds)
		require.ErrorIs(t, x.Get(world, 2, win[0], 0, win[0], 0, 8, gin.LocalNone), gin.ErrPeerOutOfRange)
		require.ErrorIs(t, x.Get(world, 1, win[0], 0, win[0], 0, 8, gin.CounterInc(5)), gin.ErrUnknownCounter)
		require.NoError(t, e.comms[0].Close())
		require.ErrorIs(t, x.Get(world, 1, win[0], 0, win[0], 0, 8, gin.LocalNone), gin.ErrClosed)
	})
}

package conformance

import (
	"fmt"
	"testing"
	"time"

	"github.com/rdmactor/rdmactor/gin"
	"github.com/stretchr/testify/require"
)

// settle is how long an absence is watched for: nothing of a deferred post
// may show up in it.
const settle = 20 * time.Millisecond

func testAggregate(t *testing.T, f Factory) {
	// gin/action.go, Aggregate: "defers the doorbell: the put is queued, and
	// a later non-aggregated put or signal of the same context to the same
	// peer, or Flush, hands the whole batch to the NIC at once ... Until
	// then nothing of it is posted." AggregateRequests in the aws-ofi-nccl
	// EFA-GDA backend.
	const n, size = 12, 1000
	aggregated := func(e *env, src, dst []*gin.Window, to int) {
		x := e.x(0, 0)
		for k := range n {
			fill(src[0].Bytes()[k*size:(k+1)*size], uint64(k))
			remote := gin.None
			if k%2 == 0 {
				remote = gin.SignalInc(0)
			}
			require.NoError(e.t, x.Put(e.comms[0].World(), to, dst[0], k*size, src[0], k*size, size, remote, gin.LocalNone, gin.Aggregate))
		}
	}
	nothing := func(e *env, dst []*gin.Window, at int, what string) {
		time.Sleep(settle)
		v, err := e.x(at, 0).ReadSignal(0, 64)
		require.NoError(e.t, err)
		require.Zero(e.t, v, "%s: signal of an aggregated put arrived", what)
		require.NoError(e.t, zero(dst[at].Bytes()), "%s: data of an aggregated put arrived", what)
	}
	arrived := func(e *env, dst []*gin.Window, at int) {
		for k := range n {
			require.NoError(e.t, checkFill(dst[at].Bytes()[k*size:(k+1)*size], uint64(k)), "aggregated put %d", k)
		}
		v, err := e.x(at, 0).ReadSignal(0, 64)
		require.NoError(e.t, err)
		require.Equal(e.t, uint64(n/2), v, "signal of the aggregated puts")
	}

	t.Run("RungBySignal", func(t *testing.T) {
		e := setup(t, f, 2, gin.Config{Signals: 4})
		src, dst := e.windows(n*size, 0), e.windows(n*size, 0)
		aggregated(e, src, dst, 1)
		nothing(e, dst, 1, "before the doorbell")
		require.NoError(t, e.x(0, 0).Signal(e.comms[0].World(), 1, gin.SignalInc(1)))
		_, err := e.x(1, 0).WaitSignal(e.ctx, 1, 1, 64)
		require.NoError(t, err)
		arrived(e, dst, 1)
	})

	t.Run("RungByPut", func(t *testing.T) {
		e := setup(t, f, 2, gin.Config{Signals: 4})
		src, dst := e.windows(n*size+64, 0), e.windows(n*size+64, 0)
		aggregated(e, src, dst, 1)
		nothing(e, dst, 1, "before the doorbell")
		require.NoError(t, e.x(0, 0).Put(e.comms[0].World(), 1, dst[0], n*size, src[0], 0, 64, gin.SignalInc(2), gin.LocalNone))
		_, err := e.x(1, 0).WaitSignal(e.ctx, 2, 1, 64)
		require.NoError(t, err)
		arrived(e, dst, 1)
	})

	t.Run("RungByFlush", func(t *testing.T) {
		e := setup(t, f, 2, gin.Config{Signals: 4})
		src, dst := e.windows(n*size, 0), e.windows(n*size, 0)
		aggregated(e, src, dst, 1)
		nothing(e, dst, 1, "before Flush")
		require.NoError(t, e.x(0, 0).Flush(e.ctx))
		e.awaitSignal(1, 0, n/2)
		e.fence(0, 1, 3)
		arrived(e, dst, 1)
	})

	// "of the same context to the same peer": a post to another peer, or on
	// another context, rings nothing of the batch.
	t.Run("OtherPeerOrContextDoesNotRing", func(t *testing.T) {
		e := setup(t, f, 3, gin.Config{Signals: 4, Contexts: 2})
		src, dst := e.windows(n*size, 0), e.windows(n*size, 0)
		aggregated(e, src, dst, 1)
		require.NoError(t, e.x(0, 0).Signal(e.comms[0].World(), 2, gin.SignalInc(1)))
		_, err := e.x(2, 0).WaitSignal(e.ctx, 1, 1, 64)
		require.NoError(t, err)
		require.NoError(t, e.x(0, 1).Put(e.comms[0].World(), 1, src[0], 0, src[0], 0, 8, gin.SignalInc(1), gin.LocalNone))
		_, err = e.x(1, 0).WaitSignal(e.ctx, 1, 1, 64)
		require.NoError(t, err)
		nothing(e, dst, 1, "after posts to another peer and on another context")
		require.NoError(t, e.x(0, 0).Signal(e.comms[0].World(), 1, gin.SignalInc(2)))
		_, err = e.x(1, 0).WaitSignal(e.ctx, 2, 1, 64)
		require.NoError(t, err)
		arrived(e, dst, 1)
	})

	// A batch longer than the SQ cannot wait for a doorbell that only a
	// later call rings: it must neither deadlock nor fail with a full ring
	// (endpoint: "aggregated entries may be what fills the ring"). All of it
	// arrives once rung.
	t.Run("LongerThanSQ", func(t *testing.T) {
		e := setup(t, f, 2, gin.Config{Signals: 4, SQDepth: 8, PostTimeout: 5 * time.Second})
		const m = 50
		src, dst := e.windows(m*64, 0), e.windows(m*64, 0)
		x := e.x(0, 0)
		for k := range m {
			fill(src[0].Bytes()[k*64:(k+1)*64], uint64(k))
			require.NoError(t, x.Put(e.comms[0].World(), 1, dst[0], k*64, src[0], k*64, 64, gin.SignalInc(0), gin.LocalNone, gin.Aggregate), "aggregated put %d of %d, SQ depth 8", k, m)
		}
		require.NoError(t, x.Signal(e.comms[0].World(), 1, gin.SignalInc(1)))
		_, err := e.x(1, 0).WaitSignal(e.ctx, 1, 1, 64)
		require.NoError(t, err)
		v, err := e.x(1, 0).ReadSignal(0, 64)
		require.NoError(t, err)
		require.Equal(t, uint64(m), v)
		for k := range m {
			require.NoError(t, checkFill(dst[1].Bytes()[k*64:(k+1)*64], uint64(k)), "put %d", k)
		}
	})

	// gin/doc.go: "Errors of aggregated puts (ErrMixedSignalOps) are
	// returned by the call that rings it, and by Flush."
	t.Run("ErrorAtDoorbell", func(t *testing.T) {
		e := setup(t, f, 2, gin.Config{Signals: 4})
		win := e.windows(4096, 0)
		x := e.x(0, 0)
		world := e.comms[0].World()
		require.NoError(t, x.Signal(world, 1, gin.SignalInc(0))) // signal 0 is in Inc mode
		_, err := e.x(1, 0).WaitSignal(e.ctx, 0, 1, 64)
		require.NoError(t, err)
		require.NoError(t, x.Put(world, 1, win[0], 0, win[0], 0, 8, gin.SignalAdd(0, 5), gin.LocalNone, gin.Aggregate),
			"an aggregated put posts nothing, so it cannot fail at the target yet")
		err = x.Signal(world, 1, gin.SignalInc(1))
		require.ErrorIs(t, err, gin.ErrMixedSignalOps, "the call that rings the batch")
		require.ErrorIs(t, x.Flush(e.ctx), gin.ErrMixedSignalOps, "Flush after the failed batch")
		v, err := e.x(1, 0).ReadSignal(0, 64)
		require.NoError(t, err)
		require.Equal(t, uint64(1), v, "the mixed SignalAdd added nothing")
		// The failure is the put's, not the connection's: later posts work.
		require.NoError(t, x.Flush(e.ctx), "second Flush: the error was reported")
		require.NoError(t, x.Signal(world, 1, gin.SignalInc(2)), "post after the reported error")
		_, err = e.x(1, 0).WaitSignal(e.ctx, 2, 1, 64)
		require.NoError(t, err, fmt.Sprintf("faults: %v", e.comms[0].Faults()))
	})
}

//go:build ofi && cgo && linux

package hybrid_test

import (
	"context"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/rdmactor/rdmactor/gin"
	"github.com/rdmactor/rdmactor/transport/rdma/hybrid"
)

// mixed builds ranks on hosts A, A, B: rank 1 reaches rank 0 through shm,
// rank 2 through ofi.
func mixed(t *testing.T, cfg gin.Config) []*gin.Comm {
	t.Helper()
	useTCP(t)
	cfg.Transport = hybrid.Name
	comms, err := gin.NewLocalOnHosts(context.Background(), []string{"A", "A", "B"}, cfg)
	require.NoError(t, err)
	t.Cleanup(func() {
		for _, c := range comms {
			c.Close()
		}
	})
	return comms
}

func ctxOf(t *testing.T, c *gin.Comm) *gin.Context {
	x, err := c.Context(0)
	require.NoError(t, err)
	return x
}

// SignalInc and SignalAdd exclude each other between resets whichever
// kinds of peers post them (ncclGin_SignalInc, nccl_device/gin.h, NCCL
// 2.28): shm claims the mode word in the sender's Post, ofi at the target
// (or by a mode query); both claim the same word with rdma.ClaimMode.
func TestModesAcrossKinds(t *testing.T) {
	comms := mixed(t, gin.Config{Signals: 2})
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()
	x0 := ctxOf(t, comms[0])
	shmPeer, ofiPeer := ctxOf(t, comms[1]), ctxOf(t, comms[2])

	// shm claims Inc; ofi's Add is refused, and so is shm's own Add.
	require.NoError(t, shmPeer.Signal(comms[1].World(), 0, gin.SignalInc(0)))
	_, err := x0.WaitSignal(ctx, 0, 1, 64)
	require.NoError(t, err)
	require.ErrorIs(t, ofiPeer.Signal(comms[2].World(), 0, gin.SignalAdd(0, 5)), gin.ErrMixedSignalOps)
	require.NoError(t, ofiPeer.Signal(comms[2].World(), 0, gin.SignalInc(0)))
	_, err = x0.WaitSignal(ctx, 0, 2, 64)
	require.NoError(t, err)

	// After a reset, ofi claims Add first; shm's Inc is then refused.
	require.NoError(t, x0.ResetSignal(0))
	require.NoError(t, ofiPeer.Signal(comms[2].World(), 0, gin.SignalAdd(0, 5)))
	_, err = x0.WaitSignal(ctx, 0, 5, 64)
	require.NoError(t, err)
	require.ErrorIs(t, shmPeer.Signal(comms[1].World(), 0, gin.SignalInc(0)), gin.ErrMixedSignalOps)
	require.NoError(t, shmPeer.Signal(comms[1].World(), 0, gin.SignalAdd(0, 3)))
	v, err := x0.WaitSignal(ctx, 0, 8, 64)
	require.NoError(t, err)
	require.Equal(t, uint64(8), v)
}

// A waiter blocked on its doorbell (no spinning: the strategy blocks at
// once) wakes for a signal from a peer of either kind, each time, long
// before the wait's deadline; each round trip also proves the other way.
func TestBlockedWaiterWokenByEither(t *testing.T) {
	blocking := gin.IdleStrategy{Spins: 1, MinSleep: time.Microsecond, MaxSleep: time.Millisecond}
	comms := mixed(t, gin.Config{Signals: 3, Idle: blocking})
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()
	const rounds = 200
	errs := make(chan error, 3)
	go func() { // rank 0 waits for both, alternately, and answers each
		x := ctxOf(t, comms[0])
		for k := 1; k <= rounds; k++ {
			for _, from := range []int{1, 2} {
				wctx, wcancel := context.WithTimeout(ctx, 2*time.Second)
				_, err := x.WaitSignal(wctx, gin.Signal(from), uint64(k), 64)
				wcancel()
				if err == nil {
					err = x.Signal(comms[0].World(), from, gin.SignalInc(0))
				}
				if err != nil {
					errs <- err
					return
				}
			}
		}
		errs <- nil
	}()
	for _, r := range []int{1, 2} {
		go func() {
			x := ctxOf(t, comms[r])
			for k := 1; k <= rounds; k++ {
				err := x.Signal(comms[r].World(), 0, gin.SignalInc(gin.Signal(r)))
				if err == nil {
					wctx, wcancel := context.WithTimeout(ctx, 2*time.Second)
					_, err = x.WaitSignal(wctx, 0, uint64(k), 64)
					wcancel()
				}
				if err != nil {
					errs <- err
					return
				}
			}
			errs <- nil
		}()
	}
	for range 3 {
		require.NoError(t, <-errs)
	}
}

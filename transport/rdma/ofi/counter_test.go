//go:build ofi && cgo && linux

package ofi_test

import (
	"context"
	"fmt"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/rdmactor/rdmactor/gin"
	"github.com/rdmactor/rdmactor/transport/rdma/ofi"
)

// counterComms builds n goroutine ranks on sockets with the counter signal
// strategy (as in the aws-ofi-nccl EFA-GDA backend: a signal is the
// peer's remote-write counter).
func counterComms(t *testing.T, n int, cfg gin.Config) []*gin.Comm {
	t.Helper()
	t.Setenv(ofi.EnvProvider, "sockets")
	t.Setenv(ofi.EnvSignals, "counter")
	skipIfNoProvider(t, "sockets")
	cfg.Transport = ofi.Name
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	comms, err := gin.NewLocal(ctx, n, cfg)
	require.NoError(t, err)
	t.Cleanup(func() {
		for _, c := range comms {
			c.Close()
		}
	})
	return comms
}

// TestCounterSignals: with the counter strategy, one write through the
// peer's signal endpoint carries the data and ticks the signal by one
// (value and signal in one write); the signal implies that
// put's data (weak signals).
func TestCounterSignals(t *testing.T) {
	comms := counterComms(t, 2, gin.Config{Signals: 4})
	caps := comms[0].Capabilities()
	require.False(t, caps.StrongSignals, "counter signals are weak")
	require.False(t, caps.SignalAdd, "a counter ticks once per write")
	require.GreaterOrEqual(t, caps.MaxSignals, 4)

	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()
	const n, size = 64, 4093
	wins := make([]*gin.Window, 2)
	errs := make(chan error, 2)
	for r := range 2 {
		go func() {
			w, err := comms[r].RegisterWindow(ctx, n*size+64, 0)
			wins[r] = w
			errs <- err
		}()
	}
	require.NoError(t, <-errs)
	require.NoError(t, <-errs)
	x0, err := comms[0].Context(0)
	require.NoError(t, err)
	x1, err := comms[1].Context(0)
	require.NoError(t, err)
	world := comms[0].World()
	for k := range n {
		b := wins[0].Bytes()[k*size : (k+1)*size]
		for i := range b {
			b[i] = byte(k + i)
		}
		require.NoError(t, x0.Put(world, 1, wins[0], k*size, wins[0], k*size, size, gin.SignalInc(0), gin.LocalNone))
		// Weak: the signal implies this put's data, so wait for each.
		_, err := x1.WaitSignal(ctx, 0, uint64(k+1), 64)
		require.NoError(t, err)
		require.Equal(t, b, wins[1].Bytes()[k*size:(k+1)*size], "put %d", k)
	}
	// PutValue and Signal (a zero-byte write) tick too, and so does a
	// put to this rank itself.
	require.NoError(t, x0.PutValue(world, 1, wins[0], n*size, 0xfeed, 8, gin.SignalInc(1)))
	require.NoError(t, x0.Signal(world, 1, gin.SignalInc(1)))
	v, err := x1.WaitSignal(ctx, 1, 2, 64)
	require.NoError(t, err)
	require.Equal(t, uint64(2), v)
	require.NoError(t, x0.Signal(world, 0, gin.SignalInc(2)))
	_, err = x0.WaitSignal(ctx, 2, 1, 64)
	require.NoError(t, err)
	// Reset, then count again from 0 (only the counters' growth is added).
	require.NoError(t, x1.ResetSignal(0))
	require.NoError(t, x0.Signal(world, 1, gin.SignalInc(0)))
	v, err = x1.WaitSignal(ctx, 0, 1, 64)
	require.NoError(t, err)
	require.Equal(t, uint64(1), v)
	require.NoError(t, x0.Flush(ctx))

	// What a counter cannot do is refused at the call, with a clear error.
	err = x0.Signal(world, 1, gin.SignalAdd(3, 5))
	require.ErrorIs(t, err, gin.ErrNotSupported)
	require.Contains(t, err.Error(), "SignalAdd")
	strict, err := registerAll(ctx, comms, 4096, gin.StrictOrdering)
	require.NoError(t, err)
	require.ErrorIs(t, x0.Signal(world, 1, gin.VASignalInc(strict[0], 0)), gin.ErrNotSupported)
	v, err = x1.ReadSignal(3, 64)
	require.NoError(t, err)
	require.Zero(t, v, "a refused SignalAdd added nothing")
}

// TestCounterRequire: gin refuses a Comm that requires what counter
// signals lack (gin.Config.Require: creation fails with a clear error).
func TestCounterRequire(t *testing.T) {
	counterComms(t, 1, gin.Config{Signals: 2}) // sets the environment, checks the provider
	for _, req := range []gin.Requirements{{StrongSignals: true}, {SignalAdd: true}} {
		_, err := gin.NewLocal(context.Background(), 2, gin.Config{Transport: ofi.Name, Signals: 2, Require: req})
		require.ErrorIs(t, err, gin.ErrNotSupported, "%+v", req)
	}
}

func registerAll(ctx context.Context, comms []*gin.Comm, size int, flags gin.WindowFlags) ([]*gin.Window, error) {
	ws := make([]*gin.Window, len(comms))
	errs := make(chan error, len(comms))
	for r := range comms {
		go func() {
			var err error
			ws[r], err = comms[r].RegisterWindow(ctx, size, flags)
			errs <- err
		}()
	}
	for range comms {
		if err := <-errs; err != nil {
			return nil, fmt.Errorf("register window: %w", err)
		}
	}
	return ws, nil
}

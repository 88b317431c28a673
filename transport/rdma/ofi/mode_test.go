//go:build ofi && cgo && linux

package ofi_test

import (
	"context"
	"errors"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/rdmactor/rdmactor/gin"
	"github.com/rdmactor/rdmactor/transport/rdma/ofi"
)

// modeComms opens a 2-rank gin job over the libfabric provider prov.
func modeComms(t *testing.T, prov string) (x0, x1 *gin.Context, world []gin.Team, win []*gin.Window) {
	t.Helper()
	t.Setenv(ofi.EnvProvider, prov)
	skipIfNoProvider(t, prov)
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	comms, err := gin.NewLocal(ctx, 2, gin.Config{Signals: 4, Transport: ofi.Name})
	require.NoError(t, err)
	t.Cleanup(func() {
		for _, c := range comms {
			c.Close()
		}
	})
	win = make([]*gin.Window, 2)
	errs := make(chan error, 2)
	for r := range 2 {
		go func() {
			var err error
			win[r], err = comms[r].RegisterWindow(ctx, 4096, 0)
			errs <- err
		}()
	}
	require.NoError(t, <-errs)
	require.NoError(t, <-errs)
	x0, err = comms[0].Context(0)
	require.NoError(t, err)
	x1, err = comms[1].Context(0)
	require.NoError(t, err)
	return x0, x1, []gin.Team{comms[0].World(), comms[1].World()}, win
}

// waitOrMixed reports whether rank 1's signal s reached least within 10 s;
// a rank-0 error wrapping ErrMixedSignalOps from post or flush is the
// other allowed outcome. A silent drop (neither) fails the test.
func waitOrMixed(t *testing.T, x0, x1 *gin.Context, s gin.Signal, least uint64, postErr error) {
	t.Helper()
	if postErr != nil {
		require.ErrorIs(t, postErr, gin.ErrMixedSignalOps)
		return
	}
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	if err := x0.Flush(ctx); err != nil {
		require.ErrorIs(t, err, gin.ErrMixedSignalOps)
		return
	}
	_, err := x1.WaitSignal(ctx, s, least, 64)
	if errors.Is(err, context.DeadlineExceeded) {
		t.Fatalf("signal %d never reached %d, and rank 0 saw no error: the op was dropped", s, least)
	}
	require.NoError(t, err)
}

// TestSignalModeAfterReset: after the target's ResetSignal, a signal op of
// the other mode than the initiator last claimed is applied (or refused at
// the call with ErrMixedSignalOps), never dropped; without a reset the mix
// is ErrMixedSignalOps.
func TestSignalModeAfterReset(t *testing.T) {
	for _, prov := range []string{"tcp", "sockets"} {
		t.Run(prov, func(t *testing.T) {
			x0, x1, ws, win := modeComms(t, prov)
			w := ws[0]
			ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
			defer cancel()
			inc := func(s gin.Signal) error {
				return x0.Put(w, 1, win[0], 0, win[0], 0, 8, gin.SignalInc(s), gin.LocalNone)
			}
			add := func(s gin.Signal, v uint64) error {
				return x0.Put(w, 1, win[0], 0, win[0], 0, 8, gin.SignalAdd(s, v), gin.LocalNone)
			}

			// Add, reset, Inc.
			require.NoError(t, add(0, 5))
			_, err := x1.WaitSignal(ctx, 0, 5, 64)
			require.NoError(t, err)
			require.NoError(t, x1.ResetSignal(0))
			waitOrMixed(t, x0, x1, 0, 1, inc(0))

			// Inc, reset, Add.
			require.NoError(t, inc(1))
			_, err = x1.WaitSignal(ctx, 1, 1, 64)
			require.NoError(t, err)
			require.NoError(t, x1.ResetSignal(1))
			waitOrMixed(t, x0, x1, 1, 7, add(1, 7))

			// No reset: the target's word holds Inc, so Add is the mix.
			require.NoError(t, inc(2))
			_, err = x1.WaitSignal(ctx, 2, 1, 64)
			require.NoError(t, err)
			require.ErrorIs(t, add(2, 3), gin.ErrMixedSignalOps)
			_ = x0.Flush(ctx)
		})
	}
}

// TestSignalModeClaimedElsewhere: rank 0's record says Inc; after a reset
// the target's own loopback SignalAdd claims the signal for Add, so rank
// 0's next SignalInc is a mix it cannot see at the call without a query:
// it must come back as ErrMixedSignalOps (at that post, a later one or
// Flush), never be dropped silently.
func TestSignalModeClaimedElsewhere(t *testing.T) {
	for _, prov := range []string{"tcp", "sockets"} {
		t.Run(prov, func(t *testing.T) {
			x0, x1, ws, _ := modeComms(t, prov)
			w := ws[0]
			ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
			defer cancel()
			require.NoError(t, x0.Signal(w, 1, gin.SignalInc(0)))
			_, err := x1.WaitSignal(ctx, 0, 1, 64)
			require.NoError(t, err)
			require.NoError(t, x1.ResetSignal(0))
			require.NoError(t, x1.Signal(ws[1], 1, gin.SignalAdd(0, 5)), "rank 1's own SignalAdd claims the reset signal")
			require.NoError(t, x1.Flush(ctx))
			_, err = x1.WaitSignal(ctx, 0, 5, 64)
			require.NoError(t, err)

			err = x0.Signal(w, 1, gin.SignalInc(0))
			if err == nil {
				err = x0.Flush(ctx)
			}
			for i := 0; err == nil && i < 1000; i++ { // a later post on the QP
				time.Sleep(10 * time.Millisecond)
				err = x0.Signal(w, 1, gin.SignalInc(1))
				if err == nil {
					err = x0.Flush(ctx)
				}
			}
			require.ErrorIs(t, err, gin.ErrMixedSignalOps, "the dropped SignalInc came back to rank 0")
			v, err := x1.ReadSignal(0, 64)
			require.NoError(t, err)
			require.Equal(t, uint64(5), v, "the mixed SignalInc added nothing")
		})
	}
}

package conformance

import (
	"context"
	"testing"
	"time"

	"github.com/rdmactor/rdmactor/gin"
	"github.com/stretchr/testify/require"
)

func testWaits(t *testing.T, f Factory) {
	// gin/doc.go caller duty 5: "Every wait takes a context.Context: give
	// it a deadline."
	// gin/signal.go, WaitSignal: "It ends with ctx's error when ctx ends".
	t.Run("Deadline", func(t *testing.T) {
		e := setup(t, f, 2, gin.Config{Signals: 2, Counters: 2})
		strict := e.windows(4096, gin.StrictOrdering)
		x := e.x(1, 0)
		_, err := x.IncreaseSignalShadow(1, 1)
		require.NoError(t, err)
		waits := map[string]func(ctx context.Context) error{
			"WaitSignal": func(ctx context.Context) error {
				_, err := x.WaitSignal(ctx, 0, 1, 64)
				return err
			},
			"WaitCounter": func(ctx context.Context) error {
				_, err := x.WaitCounter(ctx, 0, 1, 56)
				return err
			},
			"WaitSignalVA": func(ctx context.Context) error {
				_, err := x.WaitSignalVA(ctx, strict[1], 8, 1, 64)
				return err
			},
			"WaitSignalMeetShadow": func(ctx context.Context) error {
				_, err := x.WaitSignalMeetShadow(ctx, 1, 64)
				return err
			},
		}
		for name, wait := range waits {
			ctx, cancel := context.WithTimeout(context.Background(), 50*time.Millisecond)
			start := time.Now()
			err := wait(ctx)
			took := time.Since(start)
			cancel()
			require.ErrorIs(t, err, context.DeadlineExceeded, name)
			require.Less(t, took, time.Second, "%s returned long after its deadline", name)
			require.GreaterOrEqual(t, took, 40*time.Millisecond, "%s returned before its deadline", name)

			ctx, cancel = context.WithCancel(context.Background())
			time.AfterFunc(20*time.Millisecond, cancel)
			start = time.Now()
			err = wait(ctx)
			took = time.Since(start)
			require.ErrorIs(t, err, context.Canceled, "%s, cancelled", name)
			require.Less(t, took, time.Second, "%s returned long after its cancel", name)
		}
	})

	// gin/doc.go: every wait checks its context before it spins and while
	// it spins, however long the spin phase (Config.Idle.Spins) is.
	t.Run("CancelledWhileSpinning", func(t *testing.T) {
		e := setup(t, f, 2, gin.Config{Signals: 1, Idle: gin.IdleStrategy{Spins: 1 << 30, MinSleep: time.Microsecond, MaxSleep: time.Millisecond}})
		x := e.x(1, 0)
		ctx, cancel := context.WithCancel(context.Background())
		cancel()
		start := time.Now()
		_, err := x.WaitSignal(ctx, 0, 1, 64)
		require.ErrorIs(t, err, context.Canceled)
		require.Less(t, time.Since(start), 100*time.Millisecond, "an ended context seen only after the spin")
		ctx, cancel = context.WithCancel(context.Background())
		time.AfterFunc(20*time.Millisecond, cancel)
		start = time.Now()
		_, err = x.WaitSignal(ctx, 0, 1, 64)
		require.ErrorIs(t, err, context.Canceled)
		require.Less(t, time.Since(start), time.Second, "a cancel during the spin")
	})

	// gin/signal.go, WaitSignal: "It ends ... with ErrPeerLost or ErrClosed
	// when those happen meanwhile: no wait outlives its deadline." A wait
	// in progress when its Comm is closed ends with ErrClosed.
	// It runs in a child process: a wait that faults on unmapped memory
	// would kill the suite.
	t.Run("CloseDuringWait", func(t *testing.T) {
		inSubprocess(t, func(t *testing.T) {
			for _, after := range []time.Duration{0, time.Millisecond, 5 * time.Millisecond, 20 * time.Millisecond, 50 * time.Millisecond} {
				e := setup(t, f, 2, gin.Config{Signals: 2})
				x := e.x(1, 0)
				done := make(chan error, 1)
				go func() {
					_, err := x.WaitSignal(e.ctx, 0, 1, 64)
					done <- err
				}()
				time.Sleep(after)
				start := time.Now()
				require.NoError(t, e.comms[1].Close())
				select {
				case err := <-done:
					require.ErrorIs(t, err, gin.ErrClosed, "Close %v into the wait", after)
					require.Less(t, time.Since(start), time.Second)
				case <-time.After(5 * time.Second):
					t.Fatalf("WaitSignal still waits 5 s after Close (%v into the wait)", after)
				}
			}
		})
	})
}

package conformance

import (
	"context"
	"errors"
	"fmt"
	"testing"
	"time"

	"github.com/rdmactor/rdmactor/gin"
	"github.com/stretchr/testify/require"
)

// blocking paces waits with no spin and no yield phase: every wait that
// does not find its signal ready blocks in the provider at once, so the
// tests below exercise the wake-up path, not the spin.
var blocking = gin.IdleStrategy{Spins: 1, Yields: 0, MinSleep: time.Microsecond, MaxSleep: time.Millisecond}

func testWaitSignals(t *testing.T, f Factory) {
	// gin/signal.go, WaitSignals: "waits until any member of set reaches
	// its Least ... and returns the index in set of the first member found
	// ready"; "blocks until a put or signal reaches any signal of this
	// rank". Every member must wake it, by a put with a signal and by a
	// bare signal.
	t.Run("AnyMemberWakes", func(t *testing.T) {
		e := setup(t, f, 2, gin.Config{Signals: 4, Idle: blocking})
		w := e.windows(4096, 0)
		x0, x1 := e.x(0, 0), e.x(1, 0)
		set := []gin.SignalWait{{Signal: 1, Least: 1}, {Signal: 2, Least: 1}, {Signal: 3, Least: 1}}
		for i, sw := range set {
			done := make(chan error, 1)
			go func() {
				got, v, err := x1.WaitSignals(e.ctx, set, 64)
				if err == nil && (got != i || v != 1) {
					err = fmt.Errorf("woke with member %d value %d, want member %d value 1", got, v, i)
				}
				done <- err
			}()
			time.Sleep(20 * time.Millisecond) // let it block
			var err error
			if i%2 == 0 {
				err = x0.Put(e.comms[0].World(), 1, w[0], 0, w[0], 0, 64, gin.SignalInc(sw.Signal), gin.LocalNone)
			} else {
				err = x0.Signal(e.comms[0].World(), 1, gin.SignalInc(sw.Signal))
			}
			require.NoError(t, err)
			select {
			case err := <-done:
				require.NoError(t, err, "member %d", i)
			case <-time.After(5 * time.Second):
				t.Fatalf("WaitSignals not woken by a put to member %d", i)
			}
			set[i].Least = 2 // this member is spent: wait for the next
		}
		// Ready members are found without blocking, the first in set order.
		require.NoError(t, x0.Signal(e.comms[0].World(), 1, gin.SignalInc(2)))
		require.NoError(t, x0.Signal(e.comms[0].World(), 1, gin.SignalInc(3)))
		e.awaitSignal(1, 3, 2)
		got, _, err := x1.WaitSignals(e.ctx, set, 64)
		require.NoError(t, err)
		require.Equal(t, 1, got, "the first ready member in set order")
	})

	// "It ends as WaitSignal does: ctx's error when ctx ends, ErrPeerLost
	// or ErrClosed when those happen meanwhile."
	t.Run("DeadlineAndCancel", func(t *testing.T) {
		e := setup(t, f, 2, gin.Config{Signals: 2, Idle: blocking})
		x := e.x(1, 0)
		set := []gin.SignalWait{{Signal: 0, Least: 1}, {Signal: 1, Least: 1}}
		ctx, cancel := context.WithTimeout(context.Background(), 50*time.Millisecond)
		start := time.Now()
		_, _, err := x.WaitSignals(ctx, set, 64)
		cancel()
		require.ErrorIs(t, err, context.DeadlineExceeded)
		require.Less(t, time.Since(start), time.Second)
		require.GreaterOrEqual(t, time.Since(start), 40*time.Millisecond)

		ctx, cancel = context.WithCancel(context.Background())
		time.AfterFunc(20*time.Millisecond, cancel)
		start = time.Now()
		_, _, err = x.WaitSignals(ctx, set, 64)
		require.ErrorIs(t, err, context.Canceled)
		require.Less(t, time.Since(start), time.Second)

		// Checked before anything spins: an ended ctx returns at once.
		_, _, err = x.WaitSignals(ctx, set, 64)
		require.ErrorIs(t, err, context.Canceled)

		_, _, err = x.WaitSignals(e.ctx, nil, 64)
		require.ErrorIs(t, err, gin.ErrBadArgument)
		_, _, err = x.WaitSignals(e.ctx, []gin.SignalWait{{Signal: 9, Least: 1}}, 64)
		require.ErrorIs(t, err, gin.ErrUnknownSignal)
	})

	t.Run("CloseDuringWait", func(t *testing.T) {
		inSubprocess(t, func(t *testing.T) {
			e := setup(t, f, 2, gin.Config{Signals: 2, Idle: blocking})
			x := e.x(1, 0)
			done := make(chan error, 1)
			go func() {
				_, _, err := x.WaitSignals(e.ctx, []gin.SignalWait{{Signal: 0, Least: 1}, {Signal: 1, Least: 1}}, 64)
				done <- err
			}()
			time.Sleep(30 * time.Millisecond)
			start := time.Now()
			require.NoError(t, e.comms[1].Close())
			select {
			case err := <-done:
				require.ErrorIs(t, err, gin.ErrClosed)
				require.Less(t, time.Since(start), time.Second)
			case <-time.After(5 * time.Second):
				t.Fatal("WaitSignals still waits 5 s after Close")
			}
		})
	})

	// No lost wake-ups: a ping-pong in which every wait blocks, each bounded
	// by a deadline; a missed wake-up is a deadline error. The rounds get a
	// budget of their own, 2 ms each: on a loaded host a blocking round
	// trip takes over 1 ms, and 20000 would outlast Timeout.
	t.Run("NoLostWakeups", func(t *testing.T) {
		e := setup(t, f, 2, gin.Config{Signals: 2, Idle: blocking})
		rounds := scale(20000, 2000)
		ctx, cancel := context.WithTimeout(context.Background(), Timeout+time.Duration(rounds)*2*time.Millisecond)
		defer cancel()
		e.ranks(func(r int) error {
			return pingPong(ctx, e.comms[r], e.x(r, 0), rounds)
		})
	})
}

// pingPong plays rounds signal round trips between ranks 0 and 1 of c:
// rank 0 signals 0 at rank 1 and waits for signal 1, rank 1 answers. Each
// wait is a WaitSignals on both signals with a 5 s deadline.
func pingPong(ctx context.Context, c *gin.Comm, x *gin.Context, rounds int) error {
	me := c.Rank()
	mine, theirs := gin.Signal(me), gin.Signal(1-me)
	for k := 1; k <= rounds; k++ {
		if me == 0 {
			if err := x.Signal(c.World(), 1, gin.SignalInc(theirs)); err != nil {
				return err
			}
		}
		wctx, cancel := context.WithTimeout(ctx, 5*time.Second)
		_, _, err := x.WaitSignals(wctx, []gin.SignalWait{{Signal: mine, Least: uint64(k)}, {Signal: theirs, Least: 1 << 62}}, 64)
		cancel()
		if errors.Is(err, context.DeadlineExceeded) && ctx.Err() != nil {
			return fmt.Errorf("round %d of %d: the test's budget ran out, not a wait's deadline: %w", k, rounds, err)
		}
		if errors.Is(err, context.DeadlineExceeded) {
			return fmt.Errorf("round %d: wake-up lost (5 s deadline passed): %w", k, err)
		}
		if err != nil {
			return fmt.Errorf("round %d: %w", k, err)
		}
		if me == 1 {
			if err := x.Signal(c.World(), 0, gin.SignalInc(theirs)); err != nil {
				return err
			}
		}
	}
	return nil
}

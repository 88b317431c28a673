package conformance

import (
	"context"
	"errors"
	"fmt"
	"sync"
	"testing"

	"github.com/rdmactor/rdmactor/gin"
	"github.com/stretchr/testify/require"
)

func testConcurrency(t *testing.T, f Factory) {
	// gin/put.go, Context: "A Context is safe for concurrent use; ordering
	// between goroutines is whatever order their calls take effect in."
	// Four goroutines of one rank Put with SignalInc on one context to one
	// peer; the peer sees the signal reach the total, and all data.
	t.Run("PutSignalInc", func(t *testing.T) {
		e := setup(t, f, 2, gin.Config{Signals: 2, Counters: 4, SQDepth: 16})
		const g, size = 4, 256
		n := scale(2000, 1000)
		src, dst := e.windows(g*n*size, 0), e.windows(g*n*size, 0)
		for i := range g * n {
			fill(src[0].Bytes()[i*size:(i+1)*size], uint64(i))
		}
		x := e.x(0, 0)
		parallel(t, g, "goroutine", func(i int) error {
			for k := range n {
				off := (i*n + k) * size
				if err := x.Put(e.comms[0].World(), 1, dst[0], off, src[0], off, size, gin.SignalInc(0), gin.CounterInc(gin.Counter(i))); err != nil {
					return err
				}
			}
			if err := x.Flush(e.ctx); err != nil {
				return err
			}
			v, err := x.ReadCounter(gin.Counter(i), 56)
			if err == nil && v != uint64(n) {
				err = fmt.Errorf("counter %d is %d after Flush, want %d", i, v, n)
			}
			return err
		})
		v, err := e.x(1, 0).WaitSignal(e.ctx, 0, uint64(g*n), 64)
		require.NoError(t, err)
		require.Equal(t, uint64(g*n), v)
		for i := range g * n {
			require.NoError(t, checkFill(dst[1].Bytes()[i*size:(i+1)*size], uint64(i)), "put %d", i)
		}
		e.fence(0, 1, 1)
		v, err = e.x(1, 0).ReadSignal(0, 64)
		require.NoError(t, err)
		require.Equal(t, uint64(g*n), v, "no extra increments")
	})

	// The strong-signal sentence with several goroutines (gin/doc.go): a
	// goroutine's own put returned before its Signal, so it is an earlier
	// put of the context, even while other goroutines post on the same
	// (data) endpoint. Big puts by two other goroutines keep that endpoint's
	// doorbell busy.
	t.Run("SignalAfterPutAmongGoroutines", func(t *testing.T) {
		e := setup(t, f, 2, gin.Config{Signals: 8})
		const g, size, big = 3, 512, 256 << 10
		n := scale(1000, 200)
		src, dst := e.windows(g*n*size+big, 0), e.windows(g*n*size+big, 0)
		for i := range g * n {
			fill(src[0].Bytes()[i*size:(i+1)*size], uint64(i))
		}
		x := e.x(0, 0)
		// ctx ends when the senders are done or a checker failed.
		ctx, halt := context.WithCancel(e.ctx)
		defer halt()
		stopped := func() bool { return ctx.Err() != nil }
		var noise sync.WaitGroup
		noiseErr := make([]error, 2)
		for j := range 2 {
			noise.Add(1)
			go func() {
				defer noise.Done()
				for !stopped() {
					if err := x.Put(e.comms[0].World(), 1, dst[0], g*n*size, src[0], g*n*size, big, gin.None, gin.LocalNone); err != nil {
						noiseErr[j] = err
						return
					}
				}
			}()
		}
		parallel(t, 2*g, "goroutine", func(i int) error {
			if i < g { // sender i: put, then signal i
				for k := 0; k < n && !stopped(); k++ {
					off := (i*n + k) * size
					if err := x.Put(e.comms[0].World(), 1, dst[0], off, src[0], off, size, gin.None, gin.LocalNone); err != nil {
						return err
					}
					if err := x.Signal(e.comms[0].World(), 1, gin.SignalInc(gin.Signal(i))); err != nil {
						return err
					}
				}
				return nil
			}
			i -= g // checker of sender i
			y := e.x(1, 0)
			for k := 0; k < n; {
				v, err := y.WaitSignal(ctx, gin.Signal(i), uint64(k+1), 64)
				if errors.Is(err, context.Canceled) {
					return nil // another checker failed: its error is the one
				}
				if err != nil {
					halt()
					return err
				}
				for ; k < int(v); k++ {
					off := (i*n + k) * size
					if err := checkFill(dst[1].Bytes()[off:off+size], uint64(i*n+k)); err != nil {
						halt()
						return fmt.Errorf("sender %d: signal at %d, but put %d is not there: %w", i, v, k, err)
					}
				}
			}
			return nil
		})
		halt()
		noise.Wait()
		require.NoError(t, errors.Join(noiseErr...))
	})

	// Every kind of post at once on one context, to two peers, each
	// goroutine with its own signal and counter.
	t.Run("MixedPosts", func(t *testing.T) {
		e := setup(t, f, 3, gin.Config{Signals: 8, Counters: 8, SQDepth: 8})
		const g = 4
		n := scale(1000, 400)
		win := e.windows(g*n*8, 0)
		x := e.x(0, 0)
		parallel(t, g, "goroutine", func(i int) error {
			for k := range n {
				peer := 1 + k%2
				off := (i*n + k) * 8
				var err error
				switch k % 3 {
				case 0:
					err = x.PutValue(e.comms[0].World(), peer, win[0], off, uint64(i*n+k+1), 8, gin.SignalInc(gin.Signal(i)))
				case 1:
					win[0].Bytes()[off] = byte(i*n + k + 1) // own source byte, never rewritten
					err = x.Put(e.comms[0].World(), peer, win[0], off, win[0], off, 1, gin.SignalInc(gin.Signal(i)), gin.CounterInc(gin.Counter(i)))
				default:
					if err = x.PutValue(e.comms[0].World(), peer, win[0], off, uint64(i*n+k+1), 4, gin.None); err == nil {
						err = x.Signal(e.comms[0].World(), peer, gin.SignalInc(gin.Signal(i)))
					}
				}
				if err != nil {
					return fmt.Errorf("post %d: %w", k, err)
				}
			}
			return x.Flush(e.ctx)
		})
		for peer := 1; peer <= 2; peer++ {
			for i := range g {
				want := (n + 2 - peer) / 2 // posts with k%2 == peer-1
				_, err := e.x(peer, 0).WaitSignal(e.ctx, gin.Signal(i), uint64(want), 64)
				require.NoError(t, err, "peer %d signal %d", peer, i)
				for k := peer - 1; k < n; k += 2 {
					off := (i*n + k) * 8
					b := win[peer].Bytes()[off : off+8]
					var got uint64
					switch k % 3 {
					case 1:
						got = uint64(b[0])
						require.Equal(t, uint64(byte(i*n+k+1)), got, "peer %d, goroutine %d, put %d", peer, i, k)
					case 0:
						for j := 7; j >= 0; j-- {
							got = got<<8 | uint64(b[j])
						}
						require.Equal(t, uint64(i*n+k+1), got, "peer %d, goroutine %d, put value %d", peer, i, k)
					default:
						for j := 3; j >= 0; j-- {
							got = got<<8 | uint64(b[j])
						}
						require.Equal(t, uint64(uint32(i*n+k+1)), got, "peer %d, goroutine %d, put value %d", peer, i, k)
					}
				}
			}
		}
	})
}

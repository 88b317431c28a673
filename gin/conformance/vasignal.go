package conformance

import (
	"context"
	"fmt"
	"testing"
	"time"

	"github.com/rdmactor/rdmactor/gin"
	"github.com/stretchr/testify/require"
)

func testVASignals(t *testing.T, f Factory) {
	// gin/action.go, VASignalInc: "adds 1 to the 64-bit word at byte offset
	// off of the peer's part of window w, a VA signal (ncclGin_VASignalInc,
	// NCCL 2.28). w must be registered with StrictOrdering". Like an
	// indexed signal it implies the put's data.
	t.Run("IncAddReset", func(t *testing.T) {
		e := setup(t, f, 2, gin.Config{Signals: 2})
		const size = 1 << 16
		sig := e.windows(4096, gin.StrictOrdering)
		src, dst := e.windows(size, 0), e.windows(size, 0)
		rounds := scale(50, 10)
		e.ranks(func(r int) error {
			x := e.x(r, 0)
			if r == 0 {
				for round := range rounds {
					if round > 0 {
						if _, err := x.WaitSignalVA(e.ctx, sig[0], 128, uint64(round), 64); err != nil { // ack
							return err
						}
						if err := x.Flush(e.ctx); err != nil {
							return err
						}
					}
					fill(src[0].Bytes(), uint64(round))
					if err := x.Put(e.comms[0].World(), 1, dst[0], 0, src[0], 0, size, gin.VASignalInc(sig[0], 64), gin.LocalNone); err != nil {
						return err
					}
				}
				return nil
			}
			for round := range rounds {
				v, err := x.WaitSignalVA(e.ctx, sig[1], 64, uint64(round+1), 64)
				if err != nil {
					return err
				}
				if v != uint64(round+1) {
					return fmt.Errorf("VA signal %d in round %d", v, round)
				}
				if err := checkFill(dst[1].Bytes(), uint64(round)); err != nil {
					return fmt.Errorf("round %d: VA signal visible before the data: %w", round, err)
				}
				if err := x.Signal(e.comms[1].World(), 0, gin.VASignalInc(sig[1], 128)); err != nil {
					return err
				}
			}
			return nil
		})
		x0, x1 := e.x(0, 0), e.x(1, 0)
		// VASignalAdd, on a word of its own.
		for range 3 {
			require.NoError(t, x0.Signal(e.comms[0].World(), 1, gin.VASignalAdd(sig[0], 256, 7)))
		}
		v, err := x1.WaitSignalVA(e.ctx, sig[1], 256, 21, 64)
		require.NoError(t, err)
		require.Equal(t, uint64(21), v)
		v, err = x1.ReadSignalVA(sig[1], 256, 64)
		require.NoError(t, err)
		require.Equal(t, uint64(21), v, "ReadSignalVA")
		v, err = x1.ReadSignalVA(sig[1], 256, 3)
		require.NoError(t, err)
		require.Equal(t, uint64(21&7), v, "ReadSignalVA, 3 bits")
		// Only the named word changed.
		for off := 0; off < 4096; off += 8 {
			if off == 64 || off == 128 || off == 256 {
				continue
			}
			v, err := x1.ReadSignalVA(sig[1], off, 64)
			require.NoError(t, err)
			require.Zero(t, v, "VA word at %d", off)
		}
		// ResetSignalVA.
		require.NoError(t, x1.ResetSignalVA(sig[1], 256))
		v, err = x1.ReadSignalVA(sig[1], 256, 64)
		require.NoError(t, err)
		require.Zero(t, v, "after ResetSignalVA")
		require.NoError(t, x0.Signal(e.comms[0].World(), 1, gin.VASignalAdd(sig[0], 256, 2)))
		v, err = x1.WaitSignalVA(e.ctx, sig[1], 256, 2, 64)
		require.NoError(t, err)
		require.Equal(t, uint64(2), v, "counts from 0 after a reset")
		// The indexed signals were not touched.
		for s := range gin.Signal(2) {
			v, err := x1.ReadSignal(s, 64)
			require.NoError(t, err)
			require.Zero(t, v, "indexed signal %d", s)
		}
	})

	// A VA signal by Signal implies the earlier unsignalled puts too (the
	// strong-signal sentence holds for every remote action).
	t.Run("SignalAfterPuts", func(t *testing.T) {
		e := setup(t, f, 2, gin.Config{Signals: 2})
		n := 8
		l := newLayout(orderingSizes, n)
		sig := e.windows(4096, gin.StrictOrdering)
		src, dst := e.windows(l.end, 0), e.windows(l.end, 0)
		x := e.x(0, 0)
		for k := range n {
			fill(l.region(src[0].Bytes(), k), uint64(k))
			require.NoError(t, x.Put(e.comms[0].World(), 1, dst[0], l.offs[k], src[0], l.offs[k], l.sizes[k], gin.None, gin.LocalNone))
		}
		require.NoError(t, x.Signal(e.comms[0].World(), 1, gin.VASignalInc(sig[0], 8)))
		_, err := e.x(1, 0).WaitSignalVA(e.ctx, sig[1], 8, 1, 64)
		require.NoError(t, err)
		for k := range n {
			require.NoError(t, checkFill(l.region(dst[1].Bytes(), k), uint64(k)), "put %d", k)
		}
	})
}

func testShadows(t *testing.T, f Factory) {
	// gin/shadow.go: "one local word per signal that only its owner
	// changes, holding the value the owner expects the signal to reach
	// next (NCCL 2.29's signal shadows)"; WaitSignalMeetShadow "waits until
	// the low bits bits of signal s reach its shadow"; ResetSignal "clears
	// ... its shadow".
	e := setup(t, f, 2, gin.Config{Signals: 4})
	x0, x1 := e.x(0, 0), e.x(1, 0)
	v, err := x1.ReadSignalShadow(2)
	require.NoError(t, err)
	require.Zero(t, v, "a new shadow")
	v, err = x1.IncreaseSignalShadow(2, 3)
	require.NoError(t, err)
	require.Equal(t, uint64(3), v, "IncreaseSignalShadow returns the new shadow")
	v, err = x1.ReadSignalShadow(2)
	require.NoError(t, err)
	require.Equal(t, uint64(3), v)
	v, err = e.x(0, 0).ReadSignalShadow(2)
	require.NoError(t, err)
	require.Zero(t, v, "shadows are local: rank 0's did not move")
	v, err = x1.ReadSignal(2, 64)
	require.NoError(t, err)
	require.Zero(t, v, "a shadow is not the signal")

	ctx, cancel := context.WithTimeout(e.ctx, 50*time.Millisecond)
	_, err = x1.WaitSignalMeetShadow(ctx, 2, 64)
	cancel()
	require.ErrorIs(t, err, context.DeadlineExceeded, "shadow 3, signal 0: the wait must not return")

	for i := range 3 {
		require.NoError(t, x0.Signal(e.comms[0].World(), 1, gin.SignalInc(2)))
		if i < 2 {
			e.awaitSignal(1, 2, uint64(i+1))
			ctx, cancel := context.WithTimeout(e.ctx, 10*time.Millisecond)
			_, err = x1.WaitSignalMeetShadow(ctx, 2, 64)
			cancel()
			require.ErrorIs(t, err, context.DeadlineExceeded, "signal %d, shadow 3", i+1)
		}
	}
	v, err = x1.WaitSignalMeetShadow(e.ctx, 2, 64)
	require.NoError(t, err)
	require.Equal(t, uint64(3), v, "WaitSignalMeetShadow returns the signal")

	// A barrier-style epoch: increase the shadow, wait for peers to meet it.
	for epoch := uint64(4); epoch < 8; epoch++ {
		s, err := x1.IncreaseSignalShadow(2, 1)
		require.NoError(t, err)
		require.Equal(t, epoch, s)
		require.NoError(t, x0.Signal(e.comms[0].World(), 1, gin.SignalInc(2)))
		v, err := x1.WaitSignalMeetShadow(e.ctx, 2, 64)
		require.NoError(t, err)
		require.Equal(t, epoch, v)
	}

	require.NoError(t, x1.ResetSignal(2))
	v, err = x1.ReadSignalShadow(2)
	require.NoError(t, err)
	require.Zero(t, v, "ResetSignal clears the shadow")
	v, err = x1.ReadSignal(2, 64)
	require.NoError(t, err)
	require.Zero(t, v, "ResetSignal clears the signal")
	v, err = x1.WaitSignalMeetShadow(e.ctx, 2, 64)
	require.NoError(t, err, "signal 0 meets shadow 0")
	require.Zero(t, v)

	// Shadows compare in rolling order, with the wait's bits.
	v, err = x1.IncreaseSignalShadow(3, 1<<32+1)
	require.NoError(t, err)
	require.Equal(t, uint64(1<<32+1), v)
	require.NoError(t, x0.Signal(e.comms[0].World(), 1, gin.SignalInc(3)))
	v, err = x1.WaitSignalMeetShadow(e.ctx, 3, 32)
	require.NoError(t, err, "signal 1 meets shadow 2^32+1 in 32 bits")
	require.Equal(t, uint64(1), v)
}

package gin_test

import (
	"context"
	"math"
	"testing"
	"time"

	"github.com/rdmactor/rdmactor/gin"
	"github.com/stretchr/testify/require"
)

// A Team whose Stride or Rank would overflow the world-rank computation
// into a valid rank is an error at the call, and nothing lands anywhere.
func TestTeamValidated(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()
	comms, err := gin.NewLocal(ctx, 2, gin.Config{Signals: 1})
	require.NoError(t, err)
	defer func() {
		for _, c := range comms {
			c.Close()
		}
	}()
	ws := make([]*gin.Window, 2)
	done := make(chan error, 2)
	for r := range comms {
		go func() {
			var err error
			ws[r], err = comms[r].RegisterWindow(ctx, 4096, 0)
			done <- err
		}()
	}
	require.NoError(t, <-done)
	require.NoError(t, <-done)
	x, err := comms[0].Context(0)
	require.NoError(t, err)
	copy(ws[0].Bytes(), "payload!")
	for _, team := range []gin.Team{
		{Rank: 0, NRanks: 2, Stride: 1 << 62},           // (1-0)*2^62*... wraps
		{Rank: 0, NRanks: 2, Stride: math.MaxInt/2 + 1}, // overflow to negative and back
		{Rank: 0, NRanks: 2, Stride: 0},
		{Rank: 0, NRanks: 2, Stride: -1},
		{Rank: 5, NRanks: 2, Stride: 1},
		{Rank: 0, NRanks: 3, Stride: 1},
	} {
		err := x.Put(team, 1, ws[0], 0, ws[0], 0, 8, gin.SignalInc(0), gin.LocalNone)
		require.ErrorIs(t, err, gin.ErrPeerOutOfRange, "put on %+v", team)
		err = x.Signal(team, 1, gin.SignalInc(0))
		require.ErrorIs(t, err, gin.ErrPeerOutOfRange, "signal on %+v", team)
	}
	require.Equal(t, make([]byte, 8), ws[1].Bytes()[:8], "a put on an invalid team landed at rank 1")
	v, err := x.ReadSignal(0, 64)
	require.NoError(t, err)
	require.Zero(t, v)
}

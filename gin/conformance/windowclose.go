package conformance

import (
	"errors"
	"testing"

	"github.com/rdmactor/rdmactor/gin"
	"github.com/stretchr/testify/require"
)

func testWindowClose(t *testing.T, f Factory) {
	// gin/window.go, Window.Close: "Collective: after a barrier (no rank
	// still puts into it), each rank drops its imports and frees its part.
	// Puts naming the window afterwards fail with ErrClosed."
	// (ncclCommWindowDeregister, NCCL 2.28.)
	e := setup(t, f, 2, gin.Config{Signals: 1})
	ws := e.windows(64, 0)
	keep := e.windows(64, 0)
	e.ranks(func(r int) error { return ws[r].Close(e.ctx) })
	x := e.x(0, 0)
	err := x.Put(e.comms[0].World(), 1, ws[0], 0, keep[0], 0, 8, gin.None, gin.LocalNone)
	require.ErrorIs(t, err, gin.ErrClosed, "put into a closed window")
	err = x.Put(e.comms[0].World(), 1, keep[0], 0, ws[0], 0, 8, gin.None, gin.LocalNone)
	require.ErrorIs(t, err, gin.ErrClosed, "put from a closed window")
	require.ErrorIs(t, ws[0].Close(e.ctx), gin.ErrClosed, "second close")
	// Other windows are unaffected.
	require.NoError(t, x.Put(e.comms[0].World(), 1, keep[0], 0, keep[0], 8, 8, gin.SignalInc(0), gin.LocalNone))
	e.awaitSignal(1, 0, 1)
	if errors.Is(e.comms[1].Err(), gin.ErrPeerLost) {
		t.Fatal("closing a window is not a lost peer")
	}
}

package gin

import (
	"context"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// Goroutine ranks of one process yield quietly by default (QuietYield);
// a lone rank, like a process rank, yields with runtime.Gosched; a
// strategy the caller gives is kept as it is.
func TestIdleDefaultForGoroutineRanks(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	for _, tc := range []struct {
		n     int
		idle  IdleStrategy
		quiet bool
	}{
		{2, IdleStrategy{}, true},
		{1, IdleStrategy{}, false},
		{2, DefaultIdle, false},
	} {
		comms, err := NewLocal(ctx, tc.n, Config{Idle: tc.idle})
		require.NoError(t, err)
		for _, c := range comms {
			assert.Equal(t, tc.quiet, c.cfg.Idle.QuietYield, "%d ranks, Config.Idle %+v", tc.n, tc.idle)
			assert.NoError(t, c.Close())
		}
	}
}

// TestProgressDisarmsTheWait: a wait for the last of a stream of signals
// that has blocked is woken by the first signal of the stream and then
// spins again, disarmed, so the signals after it ring no futex wake each
// (the bell's count stays far below the stream's length). Without that,
// every signal of the stream rang one.
func TestProgressDisarmsTheWait(t *testing.T) {
	const stream = 200
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	// Waits block at once after their spins (no yields); the spins
	// (tens of ms) outlast the settling below and the burst.
	comms, err := NewLocal(ctx, 2, Config{Signals: 1, Idle: IdleStrategy{Spins: 1 << 25, MaxSleep: time.Millisecond}})
	require.NoError(t, err)
	defer func() {
		for _, c := range comms {
			c.Close()
		}
	}()
	if comms[1].kicked == nil {
		t.Skipf("transport %s has no doorbell", comms[1].Transport())
	}
	x0, err := comms[0].Context(0)
	require.NoError(t, err)
	x1, err := comms[1].Context(0)
	require.NoError(t, err)
	done := make(chan error, 1)
	go func() {
		_, err := x1.WaitSignal(ctx, 0, stream+1, 64)
		done <- err
	}()
	signal := func() { require.NoError(t, x0.Signal(comms[0].World(), 1, SignalInc(0))) }
	time.Sleep(400 * time.Millisecond) // the wait spins out and blocks
	signal()                           // wakes it: progress, short of the end
	time.Sleep(20 * time.Millisecond)  // it runs, disarms and spins again
	before := comms[1].kicked.Ticket()
	for range stream {
		signal()
	}
	select {
	case err := <-done:
		require.NoError(t, err)
	case <-ctx.Done():
		t.Fatal("the wait did not end")
	}
	rings := comms[1].kicked.Ticket() - before
	assert.Less(t, rings, uint32(stream/10), "futex wakes for %d signals to a waiter woken by progress", stream)
}

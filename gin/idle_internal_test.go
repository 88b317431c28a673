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

package actor

import (
	"context"
	"errors"
	"sync/atomic"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
)

// RunRanks runs fn on every local rank and names the rank that failed.
func TestRunRanksLocal(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	boom := errors.New("boom")
	var ran atomic.Int32
	var nodes [2]*Node
	err := RunRanks(ctx, 2, Config{}, func(ctx context.Context, n *Node) error {
		nodes[n.Rank()] = n
		ran.Add(1)
		if n.Rank() == 1 {
			return boom
		}
		return nil
	})
	require.ErrorIs(t, err, boom)
	require.ErrorContains(t, err, "rank 1")
	require.NotContains(t, err.Error(), "rank 0")
	require.Equal(t, int32(2), ran.Load())
	for _, n := range nodes {
		require.True(t, n.closed.Load(), "rank %d's Node open after RunRanks", n.Rank())
	}
}

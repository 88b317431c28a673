package main

import (
	"context"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/rdmactor/rdmactor/actor"
)

// A short run with ranks as goroutines, without the anchor (two
// protoactor-go remotes in one process race on grpc's global logger under
// the race detector; see internal/bootstrap/remote.New).
func TestPingPongLocal(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	nodes, err := actor.StartLocal(ctx, 3, actor.Config{})
	require.NoError(t, err)
	o := options{anchor: "none", codec: true, size: 16, n: 200, warmup: 20, idleN: 2, pause: time.Millisecond,
		msgs: 2000, reps: 1, idleWindow: 10 * time.Millisecond}
	errs := make([]error, len(nodes))
	var wg sync.WaitGroup
	for r, n := range nodes {
		wg.Add(1)
		go func() { defer wg.Done(); errs[r] = runRank(ctx, n, o) }()
	}
	wg.Wait()
	for r, err := range errs {
		assert.NoError(t, err, "rank %d", r)
	}
}

func TestPercentiles(t *testing.T) {
	s := []time.Duration{5, 1, 4, 2, 3, 6, 7, 8, 9, 10}
	assert.Equal(t, time.Duration(5), pct(s, 50))
	assert.Equal(t, time.Duration(10), pct(s, 99))
	assert.Equal(t, time.Duration(1), pct(s, 0))
	assert.Equal(t, 2.0, median([]float64{3, 1, 2}))
}

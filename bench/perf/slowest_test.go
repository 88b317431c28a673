package perf_test

import (
	"context"
	"math"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/rdmactor/rdmactor/bench/perf"
	"github.com/rdmactor/rdmactor/gin"
)

// Each column's figure is the median over rounds of the slowest rank.
func TestSlowestMedians(t *testing.T) {
	ms := time.Millisecond
	// rounds[rank][round][column]
	rounds := [][][]time.Duration{
		{{1 * ms, 9 * ms}, {5 * ms, 1 * ms}, {2 * ms, 2 * ms}},
		{{3 * ms, 1 * ms}, {4 * ms, 7 * ms}, {8 * ms, 3 * ms}},
	}
	// Slowest per round: column 0 is 3, 5, 8 ms; column 1 is 9, 7, 3 ms.
	want := []float64{0.005, 0.007}
	got := runSlowest(t, rounds, 2)
	for r := range got {
		require.NoError(t, got[r].err, "rank %d", r)
		assert.InDeltaSlice(t, want, got[r].meds, 1e-12, "rank %d", r)
	}

	none := runSlowest(t, [][][]time.Duration{nil, nil}, 1)
	for r := range none {
		require.NoError(t, none[r].err)
		assert.True(t, math.IsNaN(none[r].meds[0]), "no rounds: NaN")
	}

	uneven := runSlowest(t, [][][]time.Duration{{{ms}}, {{ms}, {ms}}}, 1)
	for r := range uneven {
		assert.Error(t, uneven[r].err, "rank %d: ranks timed different rounds", r)
	}
}

type slowest struct {
	meds []float64
	err  error
}

// runSlowest calls SlowestMedians on goroutine ranks, rank r with rounds[r].
func runSlowest(t *testing.T, rounds [][][]time.Duration, cols int) []slowest {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	out := make([]slowest, len(rounds))
	err := gin.RunRanks(ctx, len(rounds), func(int) gin.Config { return gin.Config{} }, func(ctx context.Context, c *gin.Comm) error {
		m, err := perf.SlowestMedians(ctx, c, cols, rounds[c.Rank()])
		out[c.Rank()] = slowest{m, err}
		return nil
	})
	require.NoError(t, err)
	return out
}

package gin_test

import (
	"context"
	"errors"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/rdmactor/rdmactor/gin"
)

// RunRanks runs every local rank, names the failing one in the joined
// error, and closes each rank's Comm once its fn returned.
func TestRunRanksLocal(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	boom := errors.New("boom")
	var mu sync.Mutex
	comms := map[int]*gin.Comm{}
	err := gin.RunRanks(ctx, 3, func(size int) gin.Config {
		require.Equal(t, 3, size)
		return gin.Config{}
	}, func(ctx context.Context, c *gin.Comm) error {
		mu.Lock()
		comms[c.Rank()] = c
		mu.Unlock()
		if err := c.Barrier(ctx); err != nil {
			return err
		}
		if c.Rank() == 1 {
			return boom
		}
		return nil
	})
	require.ErrorIs(t, err, boom)
	require.ErrorContains(t, err, "rank 1")
	require.NotContains(t, err.Error(), "rank 0")
	require.Len(t, comms, 3)
	for r, c := range comms {
		require.ErrorIs(t, c.Barrier(ctx), gin.ErrClosed, "rank %d's Comm after RunRanks", r)
	}
}

// Without -local and without a launcher's environment there is no job to
// join: RunRanks says so before starting anything.
func TestRunRanksNoJob(t *testing.T) {
	for _, k := range []string{"RDMACTOR_WORLD_SIZE", "WORLD_SIZE", "SLURM_NTASKS", "OMPI_COMM_WORLD_SIZE", "PMIX_RANK"} {
		t.Setenv(k, "")
	}
	err := gin.RunRanks(context.Background(), 0, func(int) gin.Config { return gin.Config{} },
		func(context.Context, *gin.Comm) error { t.Fatal("fn ran without a job"); return nil })
	require.ErrorContains(t, err, "run under cmd/rdmarun or a scheduler, or with -local N")
}

package perf

import (
	"context"
	"errors"
	"fmt"
	"sync"

	"github.com/rdmactor/rdmactor/gin"
)

// RunRanks runs fn as the ranks of a job: with local > 0, as local
// goroutine ranks of this process (gin.NewLocal), else as this process's
// rank of a launcher job (gin.Init: cmd/rdmarun sets the environment).
// config gives the gin.Config for a job of size ranks (signal counts
// depend on it). It returns the ranks' errors joined, each naming its
// rank; every Comm is closed when its fn returns.
func RunRanks(ctx context.Context, local int, config func(size int) gin.Config, fn func(ctx context.Context, c *gin.Comm) error) error {
	if local > 0 {
		comms, err := gin.NewLocal(ctx, local, config(local))
		if err != nil {
			return err
		}
		errs := make([]error, local)
		var wg sync.WaitGroup
		for r, c := range comms {
			wg.Go(func() { errs[r] = rank(ctx, c, fn) })
		}
		wg.Wait()
		return errors.Join(errs...)
	}
	size, err := gin.SizeFromEnv() // rdmarun's, or a scheduler's (mpirun, srun, torchrun)
	if err != nil {
		return fmt.Errorf("%w: run under cmd/rdmarun or a scheduler, or with -local N", err)
	}
	c, err := gin.Init(ctx, config(size))
	if err != nil {
		return err
	}
	return rank(ctx, c, fn)
}

func rank(ctx context.Context, c *gin.Comm, fn func(ctx context.Context, c *gin.Comm) error) error {
	err := fn(ctx, c)
	if cerr := c.Close(); err == nil {
		err = cerr
	}
	if err != nil {
		return fmt.Errorf("rank %d: %w", c.Rank(), err)
	}
	return nil
}

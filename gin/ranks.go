package gin

import (
	"context"
	"errors"
	"fmt"
	"sync"
)

// RunRanks runs fn as the ranks of a job, the one rank runner of the
// examples, benchmarks and tests: with local > 0, as local goroutine ranks
// of this process (NewLocal), concurrently; else as this process's rank of
// a job that cmd/rdmarun or a scheduler (mpirun, srun, torchrun) describes
// in the environment (Init). config gives the Config for a job of size
// ranks (signal counts may depend on it). Every Comm is closed when its fn
// returns. It returns the ranks' errors joined, each naming its rank, or
// the error of starting them.
func RunRanks(ctx context.Context, local int, config func(size int) Config, fn func(ctx context.Context, c *Comm) error) error {
	if local > 0 {
		comms, err := NewLocal(ctx, local, config(local))
		if err != nil {
			return err
		}
		errs := make([]error, local)
		var wg sync.WaitGroup
		for r, c := range comms {
			wg.Go(func() { errs[r] = runRank(ctx, c, fn) })
		}
		wg.Wait()
		return errors.Join(errs...)
	}
	size, err := SizeFromEnv() // rdmarun's, or a scheduler's (mpirun, srun, torchrun)
	if err != nil {
		return fmt.Errorf("%w: run under cmd/rdmarun or a scheduler, or with -local N", err)
	}
	c, err := Init(ctx, config(size))
	if err != nil {
		return err
	}
	return runRank(ctx, c, fn)
}

// runRank runs fn on c, closes c and names the rank in the error.
func runRank(ctx context.Context, c *Comm, fn func(ctx context.Context, c *Comm) error) error {
	err := fn(ctx, c)
	if cerr := c.Close(); err == nil {
		err = cerr
	}
	if err != nil {
		return fmt.Errorf("rank %d: %w", c.Rank(), err)
	}
	return nil
}

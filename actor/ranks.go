package actor

import (
	"context"
	"errors"
	"fmt"
	"sync"
)

// RunRanks runs fn once per rank: with local > 0, on local Nodes that are
// goroutines of this process (StartLocal), concurrently; otherwise on this
// process's Node from the launcher's environment (Init). It returns the
// ranks' errors joined, each naming its rank, or the start error. The
// Nodes stay open: fn closes what it needs to.
func RunRanks(ctx context.Context, local int, cfg Config, fn func(context.Context, *Node) error) error {
	if local <= 0 {
		n, err := Init(ctx, cfg)
		if err != nil {
			return err
		}
		if err := fn(ctx, n); err != nil {
			return fmt.Errorf("rank %d: %w", n.Rank(), err)
		}
		return nil
	}
	nodes, err := StartLocal(ctx, local, cfg)
	if err != nil {
		return err
	}
	errs := make([]error, len(nodes))
	var wg sync.WaitGroup
	for r, n := range nodes {
		wg.Add(1)
		go func() {
			defer wg.Done()
			if err := fn(ctx, n); err != nil {
				errs[r] = fmt.Errorf("rank %d: %w", r, err)
			}
		}()
	}
	wg.Wait()
	return errors.Join(errs...)
}

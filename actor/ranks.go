package actor

import (
	"context"
	"errors"

	"github.com/rdmactor/rdmactor/gin"
)

// RunRanks runs fn once per rank on that rank's Node, as gin.RunRanks
// runs ranks: with local > 0, on goroutine ranks of this process,
// concurrently; otherwise on this process's rank of the job the launcher
// or a scheduler describes (as Init). Each Node is closed, then its Comm,
// when its fn returns. It returns the ranks' errors joined, each naming
// its rank, or the start error.
func RunRanks(ctx context.Context, local int, cfg Config, fn func(context.Context, *Node) error) error {
	return gin.RunRanks(ctx, local, func(size int) gin.Config { return ginConfig(cfg, size) },
		func(ctx context.Context, c *gin.Comm) (err error) {
			n, err := Start(ctx, c, cfg)
			if err != nil {
				return err
			}
			defer func() { err = errors.Join(err, n.Close()) }()
			return fn(ctx, n)
		})
}

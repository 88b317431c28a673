//go:build ofi && cgo && linux

package hybrid_test

import (
	"context"
	"fmt"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/rdmactor/rdmactor/barrier"
	"github.com/rdmactor/rdmactor/gin"
	"github.com/rdmactor/rdmactor/internal/testutils"
	"github.com/rdmactor/rdmactor/transport/rdma/hybrid"
)

// A hierarchical barrier grouped by host (the LSA teams) over ranks on two
// hosts: members reach their leader over shm, the leaders each other over
// ofi tcp. No rank leaves barrier i before every rank entered it, and none
// gets past barrier i+1 while another is still in barrier i.
func TestHierarchicalBarrier(t *testing.T) {
	useTCP(t)
	for _, hosts := range [][]string{{"A", "A", "B", "B"}, {"A", "A", "A", "B", "B", "B"}} {
		t.Run(strings.Join(hosts, ""), func(t *testing.T) {
			n := len(hosts)
			group := n / 2
			ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
			defer cancel()
			comms, err := gin.NewLocalOnHosts(ctx, hosts, gin.Config{Transport: hybrid.Name, Signals: barrier.HierarchicalRequirement(n, group, 1)})
			require.NoError(t, err)
			defer func() {
				for _, c := range comms {
					c.Close()
				}
			}()
			iters := testutils.Scale(500, 50)
			arrived := make([]atomic.Int64, n)
			errs := testutils.GoRanks(n, cancel, func(r int) error {
				c := comms[r]
				if c.LSA().NRanks != group {
					return fmt.Errorf("LSA team of %d ranks, want %d", c.LSA().NRanks, group)
				}
				x, err := c.Context(0)
				if err != nil {
					return err
				}
				s, err := barrier.NewHierarchicalSession(x, c.World(), c.LSA().NRanks, 0, 0)
				if err != nil {
					return err
				}
				if s.Leader() != (r%group == 0) {
					return fmt.Errorf("leader %v", s.Leader())
				}
				for i := 1; i <= iters; i++ {
					arrived[r].Store(int64(i))
					if err := s.Sync(ctx, barrier.FenceNone); err != nil {
						return fmt.Errorf("barrier %d: %w", i, err)
					}
					for q := range arrived {
						if a := arrived[q].Load(); a < int64(i) || a > int64(i)+1 {
							return fmt.Errorf("barrier %d: rank %d is at barrier %d", i, q, a)
						}
					}
				}
				return nil
			})
			for r, err := range errs {
				require.NoError(t, err, "rank %d", r)
			}
		})
	}
}

//go:build ofi && cgo && linux

package hybrid_test

import (
	"context"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/rdmactor/rdmactor/collective"
	"github.com/rdmactor/rdmactor/gin"
	"github.com/rdmactor/rdmactor/internal/testutils"
	"github.com/rdmactor/rdmactor/transport/rdma/hybrid"
)

// A small all-reduce over ranks on two hosts, several on each, goes by
// collective.Hierarchical without being asked (the groups are the LSA
// teams): shm to each host's leader, ofi between the leaders, shm back.
// Every rank gets the exact sums, call after call, in place or not.
func TestHierarchicalAllReduce(t *testing.T) {
	useTCP(t)
	for _, hosts := range [][]string{{"A", "A", "B", "B"}, {"A", "A", "A", "B", "B", "B"}} {
		t.Run(strings.Join(hosts, ""), func(t *testing.T) {
			n := len(hosts)
			ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
			defer cancel()
			comms, err := gin.NewLocalOnHosts(ctx, hosts, gin.Config{Transport: hybrid.Name, Signals: collective.Requirement(n)})
			require.NoError(t, err)
			defer func() {
				for _, c := range comms {
					c.Close()
				}
			}()
			const count, calls = 257, 20
			errs := testutils.GoRanks(n, cancel, func(r int) error {
				c, err := collective.New(ctx, comms[r], collective.Config{})
				if err != nil {
					return err
				}
				if alg := c.Algorithm(collective.AllReduceOp, count, collective.Int64); alg != collective.Hierarchical {
					return fmt.Errorf("algorithm %v, want hierarchical", alg)
				}
				w, err := comms[r].RegisterWindow(ctx, 2*8*count, 0)
				if err != nil {
					return err
				}
				v, err := collective.Elements[int64](w, 0, 2*count)
				if err != nil {
					return err
				}
				for k := range calls {
					dst := 8 * count * (k % 2) // even calls in place
					for i := range count {
						v[i] = int64(1000*r + i + k)
					}
					if err := c.AllReduce(ctx, collective.At(w, dst), collective.At(w, 0), count, collective.Int64, collective.Sum); err != nil {
						return fmt.Errorf("call %d: %w", k, err)
					}
					for i := range count {
						want := int64(1000*n*(n-1)/2 + n*(i+k))
						if got := v[dst/8+i]; got != want {
							return fmt.Errorf("call %d: element %d is %d, want %d", k, i, got, want)
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

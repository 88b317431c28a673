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

// A small all-reduce, all-gather, reduce-scatter or broadcast over ranks
// on two hosts, several on each, goes by collective.Hierarchical without
// being asked (the groups are the LSA teams): shm to each host's leader,
// ofi between the leaders, shm back. Every rank gets the exact sums,
// blocks and broadcast data, call after call, in place or not, from every
// root.
func TestHierarchicalCollectives(t *testing.T) {
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
				for _, k := range []collective.Collective{collective.AllReduceOp, collective.AllGatherOp, collective.ReduceScatterOp, collective.BroadcastOp} {
					if alg := c.Algorithm(k, count, collective.Int64); alg != collective.Hierarchical {
						return fmt.Errorf("%v: algorithm %v, want hierarchical", k, alg)
					}
				}
				w, err := comms[r].RegisterWindow(ctx, (n+2)*8*count, 0)
				if err != nil {
					return err
				}
				v, err := collective.Elements[int64](w, 0, (n+2)*count)
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
					// All-gather of this rank's count elements into
					// [n][count] after the two blocks above; odd calls in
					// place (the source is this rank's block).
					gather, src := 2*count, 0
					if k%2 == 1 {
						src = gather + r*count
					}
					for i := range count {
						v[src+i] = int64(1000*r + i + k)
					}
					if err := c.AllGather(ctx, collective.At(w, 8*gather), collective.At(w, 8*src), count, collective.Int64); err != nil {
						return fmt.Errorf("all-gather %d: %w", k, err)
					}
					for q := range n {
						for i := range count {
							if got, want := v[gather+q*count+i], int64(1000*q+i+k); got != want {
								return fmt.Errorf("all-gather %d: block %d element %d is %d, want %d", k, q, i, got, want)
							}
						}
					}
					// Reduce-scatter of [n][count] (block p of rank q holds
					// 1000q + 10p + i + k) into the first block, or in place
					// into this rank's block on odd calls.
					for p := range n {
						for i := range count {
							v[gather+p*count+i] = int64(1000*r + 10*p + i + k)
						}
					}
					rs := 0
					if k%2 == 1 {
						rs = gather + r*count
					}
					if err := c.ReduceScatter(ctx, collective.At(w, 8*rs), collective.At(w, 8*gather), count, collective.Int64, collective.Sum); err != nil {
						return fmt.Errorf("reduce-scatter %d: %w", k, err)
					}
					for i := range count {
						if got, want := v[rs+i], int64(1000*n*(n-1)/2+n*(10*r+i+k)); got != want {
							return fmt.Errorf("reduce-scatter %d: element %d is %d, want %d", k, i, got, want)
						}
					}
					// Broadcast from each rank in turn (forwarders and
					// members) into the first block.
					root := k % n
					if r == root {
						for i := range count {
							v[i] = int64(7*root + i + k)
						}
					}
					if err := c.Broadcast(ctx, collective.At(w, 0), collective.At(w, 0), count, collective.Int64, root); err != nil {
						return fmt.Errorf("broadcast %d: %w", k, err)
					}
					for i := range count {
						if got, want := v[i], int64(7*root+i+k); got != want {
							return fmt.Errorf("broadcast %d from %d: element %d is %d, want %d", k, root, i, got, want)
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

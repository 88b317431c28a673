package collective_test

import (
	"context"
	"fmt"
	"os"
	"strconv"
	"testing"
	"time"

	"github.com/rdmactor/rdmactor/barrier"
	"github.com/rdmactor/rdmactor/collective"
	"github.com/rdmactor/rdmactor/gin"
	"github.com/rdmactor/rdmactor/internal/testutils"
)

// Ranks in these tests are processes started through the launcher: the
// test binary re-executed with RDMACTOR_TEST_ROLE naming what to run.
func TestMain(m *testing.M) {
	testutils.Role("collectives", roleCollectives)
	testutils.MainWithRoles(m)
}

// envLarge carries the large message size to the ranks.
const envLarge = "COLLECTIVE_TEST_LARGE"

// roleCollectives runs every collective over counts 0, 1, a prime and a
// large message, each checked against the local reference, one call after
// the other on one Comm (waits yield the core: 4 processes share 2 cores).
func roleCollectives() error {
	ctx, cancel := context.WithTimeout(context.Background(), 90*time.Second)
	defer cancel()
	large, _ := strconv.Atoi(os.Getenv(envLarge))
	n, _ := strconv.Atoi(os.Getenv(gin.EnvSize))
	g, err := gin.Init(ctx, gin.Config{Signals: collective.Requirement(n)})
	if err != nil {
		return err
	}
	defer g.Close()
	c, err := collective.New(ctx, g, collective.Config{Pacing: barrier.Pacing{OSYield: true, Spins: 1000}})
	if err != nil {
		return err
	}
	w, err := g.RegisterWindow(ctx, 2*large+64, 0)
	if err != nil {
		return err
	}
	j := &job{comms: []*gin.Comm{g}, colls: []*collective.Comm{c}, ctx: ctx}
	r := g.Rank()
	for k, elems := range []int{0, 1, 1009, large / 8} {
		salt := 100 + k
		// AllReduce, ReduceScatter, AllGather, Broadcast and AllToAll via
		// the reuse test's steps (int64), then float32 sums.
		for s := range 5 {
			count := elems
			if s == 1 { // all-gather: the destination holds n blocks
				count = elems / n
			}
			if err := step(j, w, c, r, n, 5*salt+s, count, collective.At(w, 0), collective.At(w, large)); err != nil {
				return fmt.Errorf("count %d, step %d: %w", elems, s, err)
			}
		}
		cs := reduceCase{dt: collective.Float32, op: collective.Sum, count: 2 * elems}
		if err := fill(w, 0, cs.dt, cs.op, r, 0, cs.count, salt); err != nil {
			return err
		}
		if err := c.AllReduce(ctx, collective.At(w, large), collective.At(w, 0), cs.count, cs.dt, cs.op); err != nil {
			return err
		}
		if err := checkReduced(w, large, cs, n, 0, salt); err != nil {
			return err
		}
		fmt.Printf("rank %d: count %d verified (%v for all-reduce)\n", r, elems, c.Algorithm(collective.AllReduceOp, elems, collective.Int64))
	}
	return g.Barrier(ctx)
}

func TestProcessCollectives(t *testing.T) {
	large := testutils.Scale(16<<20, 1<<20)
	for _, n := range []int{2, 4} {
		t.Run(fmt.Sprintf("n=%d", n), func(t *testing.T) {
			testutils.RunRanks(t, n, "collectives", fmt.Sprintf("%s=%d", envLarge, large))
		})
	}
}

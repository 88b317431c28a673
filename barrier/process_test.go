package barrier_test

import (
	"context"
	"encoding/binary"
	"fmt"
	"testing"
	"time"

	"github.com/rdmactor/rdmactor/barrier"
	"github.com/rdmactor/rdmactor/gin"
	"github.com/rdmactor/rdmactor/internal/testutils"
)

// Ranks in these tests are processes started through the launcher: the
// test binary re-executed with RDMACTOR_TEST_ROLE naming what to run.
func TestMain(m *testing.M) {
	testutils.Role("barriers", roleBarriers)
	testutils.MainWithRoles(m)
}

// roleBarriers: every round, each rank puts the round's number into its
// slot of every rank's window (its own included), passes a flat barrier
// with FencePut and checks that every slot holds that number; then a
// dissemination barrier (odd rounds) or a hierarchical one in groups of 2
// (even rounds) keeps the next round's puts from overtaking a slow rank's
// check (so either barrier letting a rank out early shows as a wrong slot
// too). Waits yield the core (4 processes may share
// 2 cores).
func roleBarriers() error {
	const rounds = 500
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	n := 0
	fmt.Sscan(envOr(gin.EnvSize, "1"), &n)
	flatSigs := barrier.Requirement(n, 1)
	hierSig := gin.Signal(flatSigs + barrier.DisseminationRequirement(n, 1))
	c, err := gin.Init(ctx, gin.Config{Signals: int(hierSig) + barrier.HierarchicalRequirement(n, 2, 1)})
	if err != nil {
		return err
	}
	defer c.Close()
	win, err := c.RegisterWindow(ctx, 8*n, 0)
	if err != nil {
		return err
	}
	x, _ := c.Context(0)
	pace := barrier.WithPacing(barrier.Pacing{OSYield: true, Spins: 1000})
	flat, err := barrier.NewWorldSession(x, 0, 0, pace)
	if err != nil {
		return err
	}
	diss, err := barrier.NewDisseminationSession(x, c.World(), gin.Signal(flatSigs), 0, pace)
	if err != nil {
		return err
	}
	hier, err := barrier.NewHierarchicalSession(x, c.World(), 2, hierSig, 0, pace)
	if err != nil {
		return err
	}
	me := c.Rank()
	for i := 1; i <= rounds; i++ {
		for p := range n {
			if err := x.PutValue(c.World(), p, win, 8*me, uint64(i), 8, gin.None); err != nil {
				return err
			}
		}
		if err := flat.Sync(ctx, barrier.FencePut); err != nil {
			return fmt.Errorf("round %d: %w", i, err)
		}
		for q := range n {
			if v := binary.LittleEndian.Uint64(win.Bytes()[8*q:]); v != uint64(i) {
				return fmt.Errorf("round %d: slot of rank %d holds %d", i, q, v)
			}
		}
		var second barrier.Syncer = diss
		if i%2 == 0 {
			second = hier
		}
		if err := second.Sync(ctx, barrier.FenceNone); err != nil {
			return fmt.Errorf("round %d: second barrier: %w", i, err)
		}
	}
	if flat.Epoch() != rounds || diss.Epoch()+hier.Epoch() != rounds {
		return fmt.Errorf("epochs %d, %d and %d after %d rounds", flat.Epoch(), diss.Epoch(), hier.Epoch(), rounds)
	}
	fmt.Printf("rank %d: %d rounds of flat, dissemination and hierarchical barriers, fence checked\n", me, rounds)
	return c.Barrier(ctx)
}

func TestProcessBarriers(t *testing.T) {
	for _, n := range []int{2, 4} {
		t.Run(fmt.Sprintf("n=%d", n), func(t *testing.T) {
			testutils.RunRanks(t, n, "barriers")
		})
	}
}

package moe_test

import (
	"context"
	"fmt"
	"os"
	"runtime"
	"strconv"
	"testing"
	"time"

	"github.com/rdmactor/rdmactor/barrier"
	"github.com/rdmactor/rdmactor/gin"
	"github.com/rdmactor/rdmactor/internal/testutils"
	"github.com/rdmactor/rdmactor/moe"
)

// Ranks in these tests are processes started through the launcher: the
// test binary re-executed with RDMACTOR_TEST_ROLE naming what to run.
func TestMain(m *testing.M) {
	testutils.Role("moe", roleMoE)
	testutils.MainWithRoles(m)
}

// envTokens carries the tokens per rank to the ranks.
const envTokens = "MOE_TEST_TOKENS"

// roleMoE runs, on one Comm of the launcher's transport, normal and
// low-latency rounds alternating on a bf16 Handle with scaled experts
// (exact), then float32 rounds with linear experts (against the
// reference), each rank checking its own tokens.
func roleMoE() error {
	ctx, cancel := context.WithTimeout(context.Background(), 90*time.Second)
	defer cancel()
	T, _ := strconv.Atoi(os.Getenv(envTokens))
	g, err := gin.Init(ctx, gin.Config{Signals: 1, Contexts: 2})
	if err != nil {
		return err
	}
	defer g.Close()
	n, me := g.Size(), g.Rank()
	pacing := barrier.Pacing{}
	if n > runtime.NumCPU() {
		pacing = barrier.Pacing{OSYield: true, Spins: 100}
	}
	const H, K = 72, 4
	E := 4 * n
	h, err := moe.New[uint16](ctx, g, moe.Config{Sizes: moe.Sizes{Hidden: H, TopK: K, NumExperts: E, MaxTokens: T, MaxLLTokens: T}, Contexts: 2, Pacing: pacing})
	if err != nil {
		return err
	}
	for round, ll := range []bool{false, true, false, false, true, true, false} {
		d := exactData(uint64(round), me, T-(me+round)%3, H, K, E, moe.Skew{Drop: 0.05})
		out := make([]uint16, d.tokens*H)
		if ll {
			err = llRound(ctx, h, d, scaled, out)
		} else {
			_, err = normalRound(ctx, h, d, scaled, out, round%2 == 0)
		}
		if err != nil {
			return fmt.Errorf("bf16 round %d: %w", round, err)
		}
		if err := compare(out, reference[uint16](d, H, K, scaled), H, 0); err != nil {
			return fmt.Errorf("bf16 round %d (low latency %v): %w", round, ll, err)
		}
	}
	if err := h.Close(ctx); err != nil {
		return err
	}
	f32, err := moe.New[float32](ctx, g, moe.Config{Sizes: moe.Sizes{Hidden: 33, TopK: 3, NumExperts: 2 * n, MaxTokens: T, MaxLLTokens: T}, Pacing: pacing})
	if err != nil {
		return err
	}
	f := linear(3, 2*n, 33)
	for round, ll := range []bool{false, true, false} {
		d := randomData(uint64(round+10), me, T, 33, 3, 2*n, moe.Skew{Zipf: 1})
		out := make([]float32, d.tokens*33)
		if ll {
			err = llRound(ctx, f32, d, f, out)
		} else {
			_, err = normalRound(ctx, f32, d, f, out, false)
		}
		if err != nil {
			return fmt.Errorf("float32 round %d: %w", round, err)
		}
		if err := compare(out, reference[float32](d, 33, 3, f), 33, 1e-5); err != nil {
			return fmt.Errorf("float32 round %d (low latency %v): %w", round, ll, err)
		}
	}
	if err := f32.Close(ctx); err != nil {
		return err
	}
	fmt.Printf("rank %d/%d: 10 rounds verified over %s\n", me, n, g.Transport())
	return g.Barrier(ctx)
}

// TestProcesses runs the ranks as processes through the launcher on shm:
// 2, 3 and 4 ranks (more ranks than cores, where cores are few).
func TestProcesses(t *testing.T) {
	for _, n := range []int{2, 3, 4} {
		t.Run(fmt.Sprintf("n=%d", n), func(t *testing.T) {
			testutils.RunRanks(t, n, "moe", fmt.Sprintf("%s=%d", envTokens, testutils.Scale(200, 40)))
		})
	}
}

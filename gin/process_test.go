package gin_test

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"runtime"
	"strconv"
	"testing"
	"time"

	"github.com/rdmactor/rdmactor/gin"
	"github.com/rdmactor/rdmactor/internal/launch"
	"github.com/rdmactor/rdmactor/internal/testutils"
	"github.com/rdmactor/rdmactor/transport/rdma/shm"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// Ranks in these tests are real processes started through the launcher:
// the test binary re-executed with RDMACTOR_TEST_ROLE naming what to run.
func TestMain(m *testing.M) {
	testutils.Role("ring", roleRing)
	testutils.Role("killed", roleKilled)
	testutils.Role("wakes", roleWakes)
	testutils.Role("oversub", roleOversub)
	testutils.MainWithRoles(m)
}

// roleRing: every rank puts rounds blocks to its right neighbour, each with
// SignalInc, and checks each block its left neighbour sent once the signal
// says it is there. Blocks of a round go to their own slot, so the check
// also proves earlier rounds were not overwritten.
func roleRing() error {
	const rounds, block = 200, 4093
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	c, err := gin.Init(ctx, gin.Config{Signals: 2})
	if err != nil {
		return err
	}
	defer c.Close()
	win, err := c.RegisterWindow(ctx, 2*rounds*block, 0)
	if err != nil {
		return err
	}
	x, _ := c.Context(0)
	me, n := c.Rank(), c.Size()
	right, left := (me+1)%n, (me+n-1)%n
	out, in := win.Bytes()[:rounds*block], win.Bytes()[rounds*block:]
	for k := 0; k < rounds; k++ {
		fillBlock(out[k*block:(k+1)*block], me, k)
		if err := x.Put(c.World(), right, win, rounds*block+k*block, win, k*block, block, gin.SignalInc(0), gin.LocalNone); err != nil {
			return fmt.Errorf("round %d: put: %w", k, err)
		}
		if _, err := x.WaitSignal(ctx, 0, uint64(k+1), 64); err != nil {
			return fmt.Errorf("round %d: %w", k, err)
		}
		want := make([]byte, block)
		for j := 0; j <= k; j++ {
			fillBlock(want, left, j)
			if !bytes.Equal(in[j*block:(j+1)*block], want) {
				return fmt.Errorf("round %d: block %d from rank %d is wrong", k, j, left)
			}
		}
	}
	if err := x.Flush(ctx); err != nil {
		return err
	}
	// No leftovers: every region's file was unlinked once all ranks mapped it.
	if left, _ := filepath.Glob(fmt.Sprintf("/dev/shm/rdmactor-%s-*", os.Getenv(gin.EnvJob))); len(left) > 0 {
		return fmt.Errorf("shared-memory files left while running: %v", left)
	}
	return c.Barrier(ctx)
}

func fillBlock(b []byte, rank, round int) {
	for i := range b {
		b[i] = byte(rank*7 + round*13 + i)
	}
}

func TestFourProcessRing(t *testing.T) {
	testutils.RunRanks(t, 4, "ring")
}

// roleKilled: rank 2 dies after the windows exist; the survivors wait for a
// signal nobody will send, with a 30 s deadline, and must be told of the
// loss long before it. A put to the dead rank must fail too.
func roleKilled() error {
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	c, err := gin.Init(ctx, gin.Config{Signals: 1})
	if err != nil {
		return err
	}
	win, err := c.RegisterWindow(ctx, 4096, 0)
	if err != nil {
		return err
	}
	if err := c.Barrier(ctx); err != nil {
		return err
	}
	if c.Rank() == 2 {
		os.Exit(3) // no Close, no goodbye: as if killed
	}
	x, _ := c.Context(0)
	wctx, wcancel := context.WithTimeout(ctx, 30*time.Second)
	defer wcancel()
	start := time.Now()
	_, err = x.WaitSignal(wctx, 0, 1, 64)
	took := time.Since(start)
	if !errors.Is(err, gin.ErrPeerLost) {
		return fmt.Errorf("wait ended with %v after %v, want ErrPeerLost", err, took)
	}
	if took > 10*time.Second {
		return fmt.Errorf("loss noticed only after %v", took)
	}
	fmt.Printf("rank %d: wait ended after %v: %v\n", c.Rank(), took.Round(time.Millisecond), err)
	if err := x.Put(c.World(), 2, win, 0, win, 0, 8, gin.SignalInc(0), gin.LocalNone); !errors.Is(err, gin.ErrPeerLost) {
		return fmt.Errorf("put to the dead rank: %v, want ErrPeerLost", err)
	}
	return c.Close()
}

func TestKilledRankEndsWaits(t *testing.T) {
	res := testutils.RunRanksOpts(t, launch.Options{NP: 4, Cleanup: shm.Cleanup}, "killed")
	require.Len(t, res, 4)
	for _, r := range res {
		want := 0
		if r.Rank == 2 {
			want = 3
		}
		assert.Equal(t, want, r.ExitCode, "rank %d: %v", r.Rank, r.Err)
	}
}

// roleWakes: ranks 0 and 1 play signal round trips in which every wait
// blocks at once (no spin phase), so each one is a futex sleep and wake
// across processes; a lost wake-up is a wait that meets its 5 s deadline.
// RDMACTOR_TEST_WAKES sets the number of round trips (default 20000).
func roleWakes() error {
	rounds := wakeRounds()
	ctx, cancel := context.WithTimeout(context.Background(), wakesTimeout(rounds))
	defer cancel()
	c, err := gin.Init(ctx, gin.Config{Signals: 2, Idle: gin.IdleStrategy{Spins: 1, MinSleep: time.Microsecond, MaxSleep: time.Millisecond}})
	if err != nil {
		return err
	}
	defer c.Close()
	x, _ := c.Context(0)
	me := c.Rank()
	mine, theirs := gin.Signal(me), gin.Signal(1-me)
	start := time.Now()
	for k := 1; k <= rounds; k++ {
		if me == 0 {
			if err := x.Signal(c.World(), 1, gin.SignalInc(theirs)); err != nil {
				return err
			}
		}
		wctx, wcancel := context.WithTimeout(ctx, 5*time.Second)
		_, _, err := x.WaitSignals(wctx, []gin.SignalWait{{Signal: mine, Least: uint64(k)}}, 64)
		wcancel()
		if err != nil {
			return fmt.Errorf("round %d of %d: wake-up lost? %w", k, rounds, err)
		}
		if me == 1 {
			if err := x.Signal(c.World(), 0, gin.SignalInc(theirs)); err != nil {
				return err
			}
		}
	}
	if me == 0 {
		fmt.Printf("%d blocking round trips, %v each\n", rounds, time.Since(start)/time.Duration(rounds))
	}
	return c.Barrier(ctx)
}

func TestNoLostWakeupsAcrossProcesses(t *testing.T) {
	runWakes(t, launch.Options{})
}

// runWakes runs roleWakes on 2 ranks with o's transport, bounded by
// wakesTimeout, and reports each failed rank.
func runWakes(t *testing.T, o launch.Options) {
	o.NP, o.KillOnFailure, o.Timeout = 2, true, wakesTimeout(wakeRounds())
	for _, r := range testutils.RunRanksOpts(t, o, "wakes") {
		if r.ExitCode != 0 {
			t.Errorf("rank %d: exit code %d: %v", r.Rank, r.ExitCode, r.Err)
		}
	}
}

// wakeRounds is the number of round trips of roleWakes:
// RDMACTOR_TEST_WAKES, default 20000.
func wakeRounds() int {
	if v, err := strconv.Atoi(os.Getenv("RDMACTOR_TEST_WAKES")); err == nil && v > 0 {
		return v
	}
	return 20000
}

// wakesTimeout bounds a job of rounds blocking round trips: 1 ms each
// (about 8 times their cost over ofi tcp) and a minute to start, so that
// RDMACTOR_TEST_WAKES=1000000 is not cut off by the launcher's default.
func wakesTimeout(rounds int) time.Duration {
	return time.Minute + time.Duration(rounds)*time.Millisecond
}

// TestOversubscribedFollowsBinding: ranks a launcher binds to processors of
// their own (as mpirun --bind-to core) are not oversubscribed, though each
// sees one processor; ranks bound together to one processor are.
func TestOversubscribedFollowsBinding(t *testing.T) {
	own, err := launch.CoreBlocks(2)
	if errors.Is(err, launch.ErrBindUnsupported) || err != nil && runtime.NumCPU() < 2 {
		t.Skipf("no processor of its own for each of 2 ranks: %v", err)
	}
	require.NoError(t, err)
	one := []int{own[0][0]}
	for _, tc := range []struct {
		name string
		cpus [][]int
		want bool
	}{
		{"a core each", [][]int{own[0][:1], own[1][:1]}, false},
		{"one core for both", [][]int{one, one}, true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			o := launch.Options{NP: 2, KillOnFailure: true, CPUs: tc.cpus,
				Env: []string{"RDMACTOR_TEST_WANT_OVERSUB=" + strconv.FormatBool(tc.want)}}
			for _, r := range testutils.RunRanksOpts(t, o, "oversub") {
				assert.Zero(t, r.ExitCode, "rank %d: %v", r.Rank, r.Err)
			}
		})
	}
}

// roleOversub checks Comm.Oversubscribed against RDMACTOR_TEST_WANT_OVERSUB.
func roleOversub() error {
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	c, err := gin.Init(ctx, gin.Config{})
	if err != nil {
		return err
	}
	defer c.Close()
	want, err := strconv.ParseBool(os.Getenv("RDMACTOR_TEST_WANT_OVERSUB"))
	if err != nil {
		return err
	}
	if got := c.Oversubscribed(); got != want || c.LocalRanks() != 2 {
		return fmt.Errorf("Oversubscribed %v with %d local ranks on %d processors of this rank, want %v with 2", got, c.LocalRanks(), runtime.NumCPU(), want)
	}
	return c.Barrier(ctx)
}

package remote_test

import (
	"context"
	"errors"
	"fmt"
	"os"
	"strconv"
	"syscall"
	"testing"
	"time"

	"github.com/rdmactor/rdmactor/internal/bootstrap"
	"github.com/rdmactor/rdmactor/internal/bootstrap/remote"
	"github.com/rdmactor/rdmactor/internal/launch"
	"github.com/rdmactor/rdmactor/internal/testutils"
	"github.com/rdmactor/rdmactor/transport/rdma"
)

func init() { testutils.Role("closetime", roleCloseTime) }

// envCloseCase names what role "closetime" does after its barrier.
const envCloseCase = "TEST_CLOSE_CASE"

// killedCode is the exit code the launcher reports for a rank killed by
// SIGKILL (128 + 9).
const killedCode = 137

// closeCase is what role "closetime" does after its barrier: the ranks
// gone are killed (SIGKILL, no goodbye) or stopped (SIGSTOP: alive but
// silent, never detected), and the others Close, each within
// remote.CloseLimit, whether the ranks it waits for answer or not.
type closeCase struct {
	gone []int
	stop bool // SIGSTOP instead of SIGKILL; the lowest other rank kills them after its Close
}

var closeCases = map[string]closeCase{
	"together":       {},                              // every rank Closes at once
	"rank0-first":    {},                              // rank 0 Closes; the others check they learnt it left, then Close
	"others-killed":  {gone: []int{2, 3}},             // rank 0 and 1 Close while 2 and 3 are gone, maybe undetected yet
	"rank0-killed":   {gone: []int{0}},                // ranks 1 to 3 Close while rank 0 is gone, maybe undetected yet
	"others-stopped": {gone: []int{2, 3}, stop: true}, // rank 0 waits for acknowledgments that never come
	"rank0-stopped":  {gone: []int{0}, stop: true},    // ranks 1 to 3 wait for acknowledgments that never come
}

// TestRemoteCloseTime: Close returns within remote.CloseLimit at every
// rank, rank 0 included, with the other ranks alive, and with some of
// them (rank 0, or the ranks rank 0 waits for) killed just before.
func TestRemoteCloseTime(t *testing.T) {
	for name, c := range closeCases {
		t.Run(name, func(t *testing.T) {
			res := testutils.RunRanksOpts(t, launch.Options{NP: 4, Env: []string{envCloseCase + "=" + name}}, "closetime")
			for _, r := range res {
				want := 0
				for _, k := range c.gone {
					if r.Rank == k {
						want = killedCode
					}
				}
				if r.ExitCode != want {
					t.Errorf("rank %d: exit code %d (%v), want %d", r.Rank, r.ExitCode, r.Err, want)
				}
			}
		})
	}
}

func roleCloseTime() error {
	name := os.Getenv(envCloseCase)
	c, ok := closeCases[name]
	if !ok {
		return fmt.Errorf("%s=%q: no such case", envCloseCase, name)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	b, err := bootstrap.FromEnv(ctx)
	if err != nil {
		return err
	}
	pids, err := b.AllGather(ctx, []byte(strconv.Itoa(os.Getpid())))
	if err != nil {
		return err
	}
	gone := map[int]bool{}
	for _, g := range c.gone {
		gone[g] = true
	}
	if gone[b.Rank()] {
		if b.Rank() == 0 {
			// Let the coordinator's answers reach the others first.
			time.Sleep(300 * time.Millisecond)
		}
		if c.stop {
			signalSelf(syscall.SIGSTOP)
		}
		signalSelf(syscall.SIGKILL)
	}
	switch {
	case gone[0]:
		time.Sleep(320 * time.Millisecond) // rank 0 signalled itself; its loss may not be detected yet
	case len(gone) > 0:
		time.Sleep(20 * time.Millisecond) // the signals are sent; a loss may not be detected yet
	}
	if name == "rank0-first" && b.Rank() != 0 {
		// Rank 0 has Closed by now (well within its limit): this rank
		// learnt it left, not that it was lost. A collective after its
		// last then fails naming rank 0, reason "closed".
		time.Sleep(remote.CloseLimit + 200*time.Millisecond)
		if err := b.Err(); err != nil {
			return fmt.Errorf("rank 0 Closed first, and this rank saw a loss: %w", err)
		}
		_, err := b.AllGather(ctx, nil)
		var pl *rdma.PeerLostError
		if !errors.As(err, &pl) || pl.Rank != 0 || pl.Reason != bootstrap.ReasonClosed {
			return fmt.Errorf("AllGather after rank 0 Closed: %v, want rank 0 lost (closed)", err)
		}
	}
	start := time.Now()
	if err := b.Close(); err != nil {
		return err
	}
	took := time.Since(start)
	fmt.Printf("rank %d: %s: Close took %v\n", b.Rank(), name, took.Round(time.Microsecond))
	if c.stop && b.Rank() == firstOther(gone) {
		for g := range gone {
			pid, _ := strconv.Atoi(string(pids[g]))
			if err := syscall.Kill(pid, syscall.SIGKILL); err != nil {
				return fmt.Errorf("kill the stopped rank %d (pid %d): %w", g, pid, err)
			}
		}
	}
	if took > remote.CloseLimit {
		return fmt.Errorf("%s: Close took %v, want <= %v", name, took, remote.CloseLimit)
	}
	return nil
}

// firstOther is the lowest rank not in gone.
func firstOther(gone map[int]bool) int {
	r := 0
	for gone[r] {
		r++
	}
	return r
}

// signalSelf sends sig to this process: SIGKILL ends it as kill -9 would
// (no deferred call, no Close, no goodbye on any connection); SIGSTOP
// freezes it until another rank kills it.
func signalSelf(sig syscall.Signal) {
	_ = syscall.Kill(os.Getpid(), sig)
	time.Sleep(time.Minute) // SIGKILL is on its way
}

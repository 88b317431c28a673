package remote_test

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/rdmactor/rdmactor/internal/bootstrap"
	"github.com/rdmactor/rdmactor/internal/bootstrap/remote"
	"github.com/rdmactor/rdmactor/internal/launch"
	"github.com/rdmactor/rdmactor/internal/testutils"
	"github.com/rdmactor/rdmactor/transport/rdma"
)

func init() { testutils.Role("afterzero", roleAfterRankZero) }

// peerLossLimit bounds how long the survivors of rank 0 take to see
// another rank's loss: at once through an established connection, about
// 2 s through one that was still being made (one attempt, then a 2 s
// pause before protoactor-go gives up).
const peerLossLimit = 10 * time.Second

// TestRemoteLossesAfterRankZero: once rank 0 (the coordinator) is killed,
// the survivors still learn of a later loss, and tell a clean Close from
// a loss, by watching each other.
func TestRemoteLossesAfterRankZero(t *testing.T) {
	res := testutils.RunRanksOpts(t, launch.Options{NP: 5}, "afterzero")
	for _, r := range res {
		want := 0
		if r.Rank == 0 || r.Rank == 2 {
			want = killedCode
		}
		if r.ExitCode != want {
			t.Errorf("rank %d: exit code %d (%v), want %d", r.Rank, r.ExitCode, r.Err, want)
		}
	}
}

// roleAfterRankZero: 5 ranks. Rank 0 is killed; once the others know, rank
// 2 is killed, and ranks 1, 3 and 4 must report it lost within lossLimit;
// then rank 4 Closes, and ranks 1 and 3 must not count it lost. Every
// Close stays within remote.CloseLimit.
func roleAfterRankZero() error {
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	b, err := bootstrap.FromEnv(ctx)
	if err != nil {
		return err
	}
	var mu sync.Mutex
	var lost []int
	lostC := make(chan int, 8)
	b.OnLost(func(e *rdma.PeerLostError) {
		mu.Lock()
		lost = append(lost, e.Rank)
		mu.Unlock()
		lostC <- e.Rank
	})
	if err := b.Barrier(ctx); err != nil {
		return err
	}
	if b.Rank() == 0 {
		time.Sleep(300 * time.Millisecond) // the barrier's answers reach the others first
		signalSelf(syscall.SIGKILL)
	}
	wait := func(rank int, limit time.Duration) (time.Duration, error) {
		start := time.Now()
		select {
		case r := <-lostC:
			if r != rank {
				return 0, fmt.Errorf("lost rank %d, want %d", r, rank)
			}
			return time.Since(start), nil
		case <-time.After(limit):
			return 0, fmt.Errorf("rank %d's loss not seen within %v", rank, limit)
		}
	}
	if _, err := wait(0, lossLimit); err != nil {
		return err
	}
	if _, err := b.AllGather(ctx, nil); !errors.Is(err, rdma.ErrPeerLost) {
		return fmt.Errorf("AllGather with rank 0 lost: %v, want ErrPeerLost", err)
	}
	// Every survivor has seen rank 0's loss and most likely connected to
	// the others by now. A connection still being made when rank 2 dies
	// fails instead, 2 s later: hence peerLossLimit.
	time.Sleep(time.Second)
	if b.Rank() == 2 {
		signalSelf(syscall.SIGKILL)
	}
	took, err := wait(2, peerLossLimit)
	if err != nil {
		return err
	}
	fmt.Printf("rank %d: rank 2's loss seen %v after its kill (about), rank 0 gone\n", b.Rank(), took.Round(time.Millisecond))
	time.Sleep(300 * time.Millisecond) // every survivor saw it
	if b.Rank() == 4 {
		return closeWithin(b)
	}
	time.Sleep(remote.CloseLimit + 500*time.Millisecond) // rank 4 has closed
	mu.Lock()
	got := slices.Clone(lost)
	mu.Unlock()
	if !slices.Equal(got, []int{0, 2}) {
		return fmt.Errorf("ranks reported lost: %v, want [0 2] (rank 4 closed cleanly)", got)
	}
	return closeWithin(b)
}

// closeWithin Closes b and fails if that took over remote.CloseLimit.
func closeWithin(b bootstrap.Bootstrap) error {
	start := time.Now()
	if err := b.Close(); err != nil {
		return err
	}
	if took := time.Since(start); took > remote.CloseLimit {
		return fmt.Errorf("Close took %v, want <= %v", took, remote.CloseLimit)
	}
	return nil
}

package remote_test

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"os"
	"strconv"
	"testing"
	"time"

	"github.com/rdmactor/rdmactor/internal/bootstrap"
	"github.com/rdmactor/rdmactor/internal/bootstrap/bootstraptest"
	"github.com/rdmactor/rdmactor/internal/bootstrap/remote"
	"github.com/rdmactor/rdmactor/internal/testutils"
	"github.com/rdmactor/rdmactor/transport/rdma"
)

func TestMain(m *testing.M) {
	testutils.Role("allgather", roleAllGather)
	testutils.Role("die", roleDie)
	testutils.Role("closeearly", roleCloseEarly)
	testutils.MainWithRoles(m)
}

// envCloseOrder orders the Close calls of role "allgather": "up" (rank 0
// first), "down" (rank 0 last), or "" (together).
const envCloseOrder = "TEST_CLOSE_ORDER"

// roleAllGather: 50 AllGathers with rank-specific data, a Barrier, a 3 MiB
// AllGather, a Barrier, then Close in the order envCloseOrder says; no
// rank may see a loss.
func roleAllGather() error {
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	tj := time.Now()
	b, err := bootstrap.FromEnv(ctx)
	if err != nil {
		return err
	}
	if as, ok := b.(remote.ActorSystemer); !ok || as.ActorSystem() == nil || as.Remote() == nil {
		return errors.New("FromEnv's Bootstrap is not an ActorSystemer")
	}
	t0 := time.Now()
	if err := bootstraptest.AllGatherRounds(ctx, b, 50); err != nil {
		return err
	}
	t1 := time.Now()
	big := bytes.Repeat([]byte{byte(b.Rank())}, 3<<20)
	all, err := b.AllGather(ctx, big)
	if err != nil {
		return err
	}
	for r, d := range all {
		if len(d) != len(big) || d[len(d)-1] != byte(r) {
			return fmt.Errorf("3 MiB AllGather: rank %d's data is wrong (%d bytes)", r, len(d))
		}
	}
	t2 := time.Now()
	// Rank 0 has its result first; its Close waits at most CloseLimit for
	// the others, which may still be receiving 12 MiB: a Barrier first.
	if err := b.Barrier(ctx); err != nil {
		return err
	}
	switch os.Getenv(envCloseOrder) {
	case "up":
		time.Sleep(time.Duration(b.Rank()) * 100 * time.Millisecond)
	case "down":
		time.Sleep(time.Duration(b.Size()-1-b.Rank()) * 100 * time.Millisecond)
	}
	if err := b.Err(); err != nil {
		return fmt.Errorf("before Close: %w", err)
	}
	t3 := time.Now()
	if err := b.Close(); err != nil {
		return err
	}
	fmt.Printf("rank %d: join %v, 50 AllGathers+Barrier %v, 3 MiB AllGather %v, Close %v\n",
		b.Rank(), t0.Sub(tj).Round(time.Microsecond), t1.Sub(t0).Round(time.Microsecond),
		t2.Sub(t1).Round(time.Microsecond), time.Since(t3).Round(time.Microsecond))
	return nil
}

// roleCloseEarly: rank 1 Closes while the others wait in an AllGather,
// which must fail with rank 1 lost, reason "closed".
func roleCloseEarly() error {
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	b, err := bootstrap.FromEnv(ctx)
	if err != nil {
		return err
	}
	if b.Rank() == 1 {
		time.Sleep(100 * time.Millisecond)
		return b.Close()
	}
	_, err = b.AllGather(ctx, nil)
	var pl *rdma.PeerLostError
	if !errors.As(err, &pl) || pl.Rank != 1 || pl.Reason != "closed" {
		return fmt.Errorf("AllGather: %v, want rank 1 lost (closed)", err)
	}
	return b.Close()
}

// envDie is the rank that role "die" kills (default 2).
const envDie = "TEST_DIE_RANK"

// lossLimit is how fast the survivors of role "die" must see the loss.
const lossLimit = 10 * time.Second

// roleDie: one AllGather; then rank $TEST_DIE_RANK exits with code 3 (no
// Close) while the others start a second AllGather, which must end with
// that rank lost well before its 30 s deadline (for rank 0, the time
// includes the 300 ms it waits before exiting).
func roleDie() error {
	die := 2
	if s := os.Getenv(envDie); s != "" {
		die, _ = strconv.Atoi(s)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	b, err := bootstrap.FromEnv(ctx)
	if err != nil {
		return err
	}
	if _, err := b.AllGather(ctx, []byte{byte(b.Rank())}); err != nil {
		return err
	}
	if b.Rank() == die {
		if die == 0 {
			// Let the coordinator's answers reach the others first.
			time.Sleep(300 * time.Millisecond)
		}
		os.Exit(3)
	}
	lost := make(chan *rdma.PeerLostError, 1)
	b.OnLost(func(e *rdma.PeerLostError) { lost <- e })
	ctx30, cancel30 := context.WithTimeout(ctx, 30*time.Second)
	defer cancel30()
	start := time.Now()
	_, err = b.AllGather(ctx30, []byte{byte(b.Rank())})
	took := time.Since(start)
	fmt.Printf("rank %d: second AllGather ended after %v: %v\n", b.Rank(), took, err)
	var pl *rdma.PeerLostError
	switch {
	case !errors.Is(err, rdma.ErrPeerLost) || !errors.As(err, &pl):
		return fmt.Errorf("second AllGather: %v, want ErrPeerLost", err)
	case pl.Rank != die:
		return fmt.Errorf("lost rank %d, want %d", pl.Rank, die)
	case took > lossLimit:
		return fmt.Errorf("loss seen after %v, want < %v", took, lossLimit)
	}
	select {
	case e := <-lost:
		if e.Rank != die {
			return fmt.Errorf("OnLost: %v", e)
		}
	case <-time.After(5 * time.Second):
		return errors.New("OnLost not called")
	}
	return b.Close()
}

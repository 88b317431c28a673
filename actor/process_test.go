package actor_test

import (
	"context"
	"errors"
	"fmt"
	"syscall"
	"testing"
	"time"

	"github.com/rdmactor/rdmactor/actor"
	"github.com/rdmactor/rdmactor/internal/launch"
	"github.com/rdmactor/rdmactor/internal/testutils"
	"github.com/rdmactor/rdmactor/transport/rdma/shm"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// Ranks in these tests are processes started through the launcher: the
// test binary re-executed with RDMACTOR_TEST_ROLE naming what to run.
func TestMain(m *testing.M) {
	testutils.Role("reqresp", roleRequestResponse)
	testutils.Role("deathwatch", roleDeathWatch)
	testutils.MainWithRoles(m)
}

// Every rank asks every rank's echo, by RequestFuture and actor to actor.
func TestProcessesRequestResponse(t *testing.T) {
	testutils.RunRanks(t, 3, "reqresp")
}

func roleRequestResponse() error {
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	n, err := actor.Init(ctx, actor.Config{})
	if err != nil {
		return err
	}
	defer n.Close()
	if _, err := n.SpawnNamed(actor.PropsFromFunc(echo), "echo"); err != nil {
		return err
	}
	if err := n.Barrier(ctx); err != nil {
		return err
	}
	for round := range 100 {
		for to := range n.Size() {
			res, err := n.Root().RequestFuture(n.PID(to, "echo"), &ping{N: round}, 10*time.Second).Result()
			if err != nil {
				return fmt.Errorf("round %d: request to rank %d: %w", round, to, err)
			}
			if p := res.(*pong); p.N != round+1 {
				return fmt.Errorf("round %d: rank %d answered %d", round, to, p.N)
			}
		}
	}
	got := make(chan *pong, 1)
	next := (n.Rank() + 1) % n.Size()
	asker := n.Spawn(actor.PropsFromFunc(func(c actor.Context) {
		switch m := c.Message().(type) {
		case *ping:
			c.Request(n.PID(next, "echo"), m)
		case *pong:
			got <- m
		}
	}))
	n.Root().Send(asker, &ping{N: 41})
	select {
	case p := <-got:
		if p.N != 42 || p.From != asker.Address+"/"+asker.Id {
			return fmt.Errorf("actor to actor: got %+v", p)
		}
	case <-ctx.Done():
		return errors.New("actor to actor: no answer")
	}
	fmt.Printf("rank %d: %d requests answered\n", n.Rank(), 100*n.Size()+1)
	return n.Barrier(ctx)
}

// Rank 2 is killed (SIGKILL) while ranks 0 and 1 watch an actor on it:
// both get Terminated with TerminatedAddressTerminated, and later requests
// to it fail at once instead of timing out. The fault tests
// (fault_test.go) kill a rank in the middle of traffic.
func TestProcessesDeathWatchKilledRank(t *testing.T) {
	res := testutils.RunRanksOpts(t, launch.Options{NP: 3, Cleanup: shm.Cleanup}, "deathwatch")
	require.Len(t, res, 3)
	for _, r := range res {
		want := 0
		if r.Rank == 2 {
			want = killedExit
		}
		assert.Equal(t, want, r.ExitCode, "rank %d: %v", r.Rank, r.Err)
	}
}

func roleDeathWatch() error {
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	n, terminated, victim, err := watchRankTwo(ctx, 1)
	if err != nil {
		return err
	}
	if n.Rank() != 2 {
		// The Watch is in the ring ahead of this request.
		if _, err := n.Root().RequestFuture(victim, &ping{}, 10*time.Second).Result(); err != nil {
			return err
		}
	}
	if err := n.Barrier(ctx); err != nil {
		return err
	}
	if n.Rank() == 2 {
		signalSelf(syscall.SIGKILL)
	}
	start := time.Now()
	select {
	case tm := <-terminated:
		if tm.Why != actor.TerminatedAddressTerminated || !tm.Who.Equal(victim) {
			return fmt.Errorf("got %v", tm)
		}
		fmt.Printf("rank %d: Terminated after %v: %v\n", n.Rank(), time.Since(start).Round(time.Millisecond), n.Gone(2))
	case <-time.After(20 * time.Second):
		return errors.New("no Terminated within 20 s of the kill")
	}
	start = time.Now()
	_, err = n.Root().RequestFuture(victim, &ping{}, 10*time.Second).Result()
	if !errors.Is(err, actor.ErrDeadLetter) || time.Since(start) > time.Second {
		return fmt.Errorf("request to the dead rank: %v after %v, want ErrDeadLetter at once", err, time.Since(start))
	}
	return n.Close()
}

// watchRankTwo joins the job with an echo actor on every rank and, once
// every rank has spawned it, on the ranks other than 2, a watcher of rank 2's echo whose Terminated notices
// go to the returned channel (of capacity depth).
func watchRankTwo(ctx context.Context, depth int) (*actor.Node, chan *actor.Terminated, *actor.PID, error) {
	n, err := actor.Init(ctx, actor.Config{})
	if err != nil {
		return nil, nil, nil, err
	}
	if _, err := n.SpawnNamed(actor.PropsFromFunc(echo), "echo"); err != nil {
		return nil, nil, nil, err
	}
	// Rank 2's echo exists before anyone watches it: a watch that came
	// first would be answered Terminated{NotFound}.
	if err := n.Barrier(ctx); err != nil {
		return nil, nil, nil, err
	}
	terminated := make(chan *actor.Terminated, depth)
	watcher := spawnWatcher(n, func(m *actor.Terminated) { terminated <- m })
	victim := n.PID(2, "echo")
	if n.Rank() != 2 {
		if _, err := n.Root().RequestFuture(watcher, victim, 10*time.Second).Result(); err != nil {
			return nil, nil, nil, err
		}
	}
	return n, terminated, victim, nil
}

// spawnWatcher spawns an actor that watches each PID it is asked to
// (answering true once the watch is sent) and hands every Terminated it
// gets to terminated, in its own goroutine.
func spawnWatcher(n *actor.Node, terminated func(*actor.Terminated)) *actor.PID {
	return n.Spawn(actor.PropsFromFunc(func(c actor.Context) {
		switch m := c.Message().(type) {
		case *actor.PID:
			c.Watch(m)
			c.Respond(true)
		case *actor.Terminated:
			terminated(m)
		}
	}))
}

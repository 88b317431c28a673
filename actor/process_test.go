package actor_test

import (
	"context"
	"errors"
	"fmt"
	"os"
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
	testutils.Role("survivors", roleSurvivors)
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

// Rank 2 is killed while ranks 0 and 1 watch an actor on it: both get
// Terminated with TerminatedAddressTerminated, and later requests to it
// fail at once instead of timing out.
func TestProcessesDeathWatchKilledRank(t *testing.T) {
	res := testutils.RunRanksOpts(t, launch.Options{NP: 3, Cleanup: shm.Cleanup}, "deathwatch")
	require.Len(t, res, 3)
	for _, r := range res {
		want := 0
		if r.Rank == 2 {
			want = 3
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
		os.Exit(3) // no Close, no goodbye: as if killed
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

// Rank 2 of 4 dies mid-traffic. Its actors are gone for the others (one
// Terminated per watch, requests to it fail at once), and ranks 0, 1 and 3
// go on asking each other for 2 s with no error: a rank's failure is its
// own (gin.FailPeer).
func TestProcessesSurviveKilledRank(t *testing.T) {
	res := testutils.RunRanksOpts(t, launch.Options{NP: 4, Cleanup: shm.Cleanup}, "survivors")
	require.Len(t, res, 4)
	for _, r := range res {
		want := 0
		if r.Rank == 2 {
			want = 3
		}
		assert.Equal(t, want, r.ExitCode, "rank %d: %v", r.Rank, r.Err)
	}
}

func roleSurvivors() error {
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	n, terminated, victim, err := watchRankTwo(ctx, 4)
	if err != nil {
		return err
	}
	if n.Rank() == 2 {
		if _, err := n.SpawnNamed(actor.PropsFromFunc(func(actor.Context) {}), "silent"); err != nil {
			return err // an actor that never answers
		}
	}
	if err := n.Barrier(ctx); err != nil {
		return err
	}
	type ended struct {
		at  time.Time
		err error
	}
	pendingEnd := make(chan ended, 1)
	if n.Rank() != 2 {
		// A request that only the loss can end before its 30 s timeout.
		f := n.Root().RequestFuture(n.PID(2, "silent"), &ping{}, 30*time.Second)
		go func() {
			_, err := f.Result()
			pendingEnd <- ended{time.Now(), err}
		}()
	}
	if n.Rank() == 2 {
		time.Sleep(50 * time.Millisecond) // mid-traffic
		os.Exit(3)                        // no Close, no goodbye: as if killed
	}
	survivors := []int{0, 1, 3}
	ask := func(to, round int) error {
		res, err := n.Root().RequestFuture(n.PID(to, "echo"), &ping{N: round}, 10*time.Second).Result()
		if err != nil {
			return fmt.Errorf("round %d: request to rank %d: %w", round, to, err)
		}
		if p := res.(*pong); p.N != round+1 {
			return fmt.Errorf("round %d: rank %d answered %d", round, to, p.N)
		}
		return nil
	}
	// Traffic until the loss is known, then 2 s more among the survivors.
	round, after := 0, 0
	var lostAt time.Time
	for lostAt.IsZero() || time.Since(lostAt) < 2*time.Second {
		if lostAt.IsZero() {
			if n.Gone(2) != nil {
				lostAt = time.Now()
			} else if ctx.Err() != nil {
				return errors.New("rank 2's loss never noticed")
			}
		} else {
			after++
		}
		for _, to := range survivors {
			if err := ask(to, round); err != nil {
				return err
			}
		}
		round++
	}
	select {
	case tm := <-terminated:
		if tm.Why != actor.TerminatedAddressTerminated || !tm.Who.Equal(victim) {
			return fmt.Errorf("got %v", tm)
		}
	case <-time.After(5 * time.Second):
		return errors.New("no Terminated for rank 2's actor")
	}
	select {
	case tm := <-terminated:
		return fmt.Errorf("a second Terminated: %v", tm)
	case <-time.After(100 * time.Millisecond):
	}
	select {
	case e := <-pendingEnd:
		if !errors.Is(e.err, actor.ErrDeadLetter) {
			return fmt.Errorf("the pending request to the lost rank ended with %v, want ErrDeadLetter", e.err)
		}
		if late := e.at.Sub(lostAt); late > 100*time.Millisecond {
			return fmt.Errorf("the pending request to the lost rank failed %v after the loss was known", late)
		}
	case <-time.After(5 * time.Second):
		return errors.New("the pending request to the lost rank still waits")
	}
	start := time.Now()
	if _, err := n.Root().RequestFuture(victim, &ping{}, 10*time.Second).Result(); err == nil || time.Since(start) > time.Second {
		return fmt.Errorf("request to the dead rank: %v after %v, want an error at once", err, time.Since(start))
	}
	fmt.Printf("rank %d: %d rounds, %d of them after the loss was known, no error\n", n.Rank(), round, after)
	time.Sleep(time.Second) // the other survivors may still ask this one
	return n.Close()
}

// watchRankTwo joins the job with an echo actor on every rank and, on the
// ranks other than 2, a watcher of rank 2's echo whose Terminated notices
// go to the returned channel (of capacity depth).
func watchRankTwo(ctx context.Context, depth int) (*actor.Node, chan *actor.Terminated, *actor.PID, error) {
	n, err := actor.Init(ctx, actor.Config{})
	if err != nil {
		return nil, nil, nil, err
	}
	if _, err := n.SpawnNamed(actor.PropsFromFunc(echo), "echo"); err != nil {
		return nil, nil, nil, err
	}
	terminated := make(chan *actor.Terminated, depth)
	watcher := n.Spawn(actor.PropsFromFunc(func(c actor.Context) {
		switch m := c.Message().(type) {
		case *actor.PID:
			c.Watch(m)
			c.Respond(true)
		case *actor.Terminated:
			terminated <- m
		}
	}))
	victim := n.PID(2, "echo")
	if n.Rank() != 2 {
		if _, err := n.Root().RequestFuture(watcher, victim, 10*time.Second).Result(); err != nil {
			return nil, nil, nil, err
		}
	}
	return n, terminated, victim, nil
}

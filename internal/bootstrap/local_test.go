package bootstrap_test

import (
	"context"
	"errors"
	"fmt"
	"sync"
	"testing"
	"time"

	"github.com/rdmactor/rdmactor/internal/bootstrap"
	"github.com/rdmactor/rdmactor/internal/bootstrap/bootstraptest"
	"github.com/rdmactor/rdmactor/transport/rdma"
)

// eachRank runs f for every rank in its own goroutine and returns the errors by rank.
func eachRank(bs []bootstrap.Bootstrap, f func(b bootstrap.Bootstrap) error) []error {
	errs := make([]error, len(bs))
	var wg sync.WaitGroup
	for i, b := range bs {
		wg.Go(func() { errs[i] = f(b) })
	}
	wg.Wait()
	return errs
}

func TestLocalAllGather(t *testing.T) {
	bs := bootstrap.NewLocal("t1", 4)
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	for r, err := range eachRank(bs, func(b bootstrap.Bootstrap) error {
		if b.Job() != "t1" || b.Size() != 4 {
			return fmt.Errorf("job %q size %d", b.Job(), b.Size())
		}
		return bootstraptest.AllGatherRounds(ctx, b, 100)
	}) {
		if err != nil {
			t.Errorf("rank %d: %v", r, err)
		}
	}
	for r, err := range eachRank(bs, func(b bootstrap.Bootstrap) error { return b.Close() }) {
		if err != nil || bs[r].Err() != nil {
			t.Errorf("rank %d: Close: %v, Err: %v", r, err, bs[r].Err())
		}
	}
	if _, err := bs[0].AllGather(ctx, nil); !errors.Is(err, rdma.ErrClosed) {
		t.Errorf("AllGather after Close: %v, want ErrClosed", err)
	}
}

func TestLocalBarrier(t *testing.T) {
	bs := bootstrap.NewLocal("t2", 4)
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	var mu sync.Mutex
	entered := 0
	for r, err := range eachRank(bs, func(b bootstrap.Bootstrap) error {
		time.Sleep(time.Duration(b.Rank()) * 20 * time.Millisecond)
		mu.Lock()
		entered++
		mu.Unlock()
		if err := b.Barrier(ctx); err != nil {
			return err
		}
		mu.Lock()
		defer mu.Unlock()
		if entered != 4 {
			return fmt.Errorf("left the barrier when %d ranks had entered", entered)
		}
		return nil
	}) {
		if err != nil {
			t.Errorf("rank %d: %v", r, err)
		}
	}
}

func TestLocalDeadline(t *testing.T) {
	bs := bootstrap.NewLocal("t3", 4)
	ctx, cancel := context.WithTimeout(context.Background(), 100*time.Millisecond)
	defer cancel()
	start := time.Now()
	// Rank 3 never joins.
	for r, err := range eachRank(bs[:3], func(b bootstrap.Bootstrap) error {
		_, err := b.AllGather(ctx, []byte{1})
		return err
	}) {
		if !errors.Is(err, context.DeadlineExceeded) {
			t.Errorf("rank %d: %v, want DeadlineExceeded", r, err)
		}
	}
	if el := time.Since(start); el > 5*time.Second {
		t.Errorf("took %v", el)
	}
	// The ranks stay usable: rank 3 completes round 1, then all do round 2.
	ctx2, cancel2 := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel2()
	if all, err := bs[3].AllGather(ctx2, []byte{3}); err != nil || string(all[0]) != "\x01" {
		t.Fatalf("late rank: %v %v", all, err)
	}
	for r, err := range eachRank(bs, func(b bootstrap.Bootstrap) error { return b.Barrier(ctx2) }) {
		if err != nil {
			t.Errorf("rank %d: %v", r, err)
		}
	}
}

func TestLocalCloseEarly(t *testing.T) {
	bs := bootstrap.NewLocal("t4", 4)
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	for r, err := range eachRank(bs, func(b bootstrap.Bootstrap) error { return b.Barrier(ctx) }) {
		if err != nil {
			t.Fatalf("rank %d: %v", r, err)
		}
	}
	lost := make(chan *rdma.PeerLostError, 10)
	bs[1].OnLost(func(e *rdma.PeerLostError) { lost <- e })
	// Ranks 0, 1, 3 enter a collective; rank 2 closes instead.
	errs := make(chan error, 3)
	for _, r := range []int{0, 1, 3} {
		go func() { _, err := bs[r].AllGather(ctx, nil); errs <- err }()
	}
	time.Sleep(20 * time.Millisecond)
	if err := bs[2].Close(); err != nil {
		t.Fatal(err)
	}
	for range 3 {
		err := <-errs
		var pl *rdma.PeerLostError
		if !errors.Is(err, rdma.ErrPeerLost) || !errors.As(err, &pl) || pl.Rank != 2 || pl.Reason != "closed" {
			t.Errorf("got %v, want rank 2 lost (closed)", err)
		}
	}
	select {
	case e := <-lost:
		if e.Rank != 2 {
			t.Errorf("OnLost: %v", e)
		}
	case <-time.After(5 * time.Second):
		t.Error("OnLost not called")
	}
	// Registered after the loss: called right away.
	late := make(chan *rdma.PeerLostError, 1)
	bs[3].OnLost(func(e *rdma.PeerLostError) { late <- e })
	select {
	case <-late:
	case <-time.After(5 * time.Second):
		t.Error("late OnLost not called")
	}
	if err := bs[0].Barrier(ctx); !errors.Is(err, rdma.ErrPeerLost) {
		t.Errorf("later collective: %v, want ErrPeerLost", err)
	}
}

func TestLocalCloseAtEnd(t *testing.T) {
	// Ranks that close one after the other after their last collective report nothing.
	bs := bootstrap.NewLocal("t5", 3)
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	eachRank(bs, func(b bootstrap.Bootstrap) error { return b.Barrier(ctx) })
	called := make(chan struct{}, 3)
	for _, b := range bs {
		b.OnLost(func(*rdma.PeerLostError) { called <- struct{}{} })
	}
	for _, b := range bs {
		b.Close()
		time.Sleep(10 * time.Millisecond)
	}
	time.Sleep(50 * time.Millisecond)
	for _, b := range bs {
		if b.Err() != nil {
			t.Errorf("rank %d: %v", b.Rank(), b.Err())
		}
	}
	if len(called) != 0 {
		t.Errorf("OnLost called %d times", len(called))
	}
}

package bootstrap_test

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"testing"
	"time"

	"github.com/rdmactor/rdmactor/internal/bootstrap"
	"github.com/rdmactor/rdmactor/internal/bootstrap/bootstraptest"
	"github.com/rdmactor/rdmactor/transport/rdma"
)

// shrinkAll runs Shrink on every Bootstrap of bs, bs[i] with lost[i] as
// what it knows, and returns the new Bootstraps and errors by index.
func shrinkAll(ctx context.Context, bs []bootstrap.Bootstrap, lost [][]int) ([]bootstrap.Bootstrap, []error) {
	out := make([]bootstrap.Bootstrap, len(bs))
	errs := eachRank(bs, func(b bootstrap.Bootstrap) (err error) {
		i := slices.Index(bs, b)
		out[i], err = b.(bootstrap.Shrinker).Shrink(ctx, lost[i])
		return err
	})
	return out, errs
}

// The agreed set is the union of what the ranks know: a rank that only
// one survivor counts lost is excluded, and learns it (ErrExcluded).
// The shrunk Bootstraps gather and barrier among themselves.
func TestLocalShrinkUnion(t *testing.T) {
	bs := bootstrap.NewLocal("shrink-union", 5)
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	subs, errs := shrinkAll(ctx, bs, [][]int{{3}, nil, {3}, nil, {}})
	for r, err := range errs {
		if r == 3 {
			if !errors.Is(err, bootstrap.ErrExcluded) {
				t.Errorf("rank 3: %v, want ErrExcluded", err)
			}
			continue
		}
		if err != nil {
			t.Fatalf("rank %d: %v", r, err)
		}
		s := subs[r]
		want := []int{0, 1, 2, 4}
		if got := s.(bootstrap.Shrunk).ParentRanks(); !slices.Equal(got, want) || s.Size() != 4 || want[s.Rank()] != r {
			t.Errorf("rank %d: rank %d of %d, parents %v", r, s.Rank(), s.Size(), got)
		}
		if s.Job() == bs[r].Job() {
			t.Errorf("rank %d: shrunk job named as the old one, %q", r, s.Job())
		}
	}
	live := slices.DeleteFunc(slices.Clone(subs), func(b bootstrap.Bootstrap) bool { return b == nil })
	for r, err := range eachRank(live, func(b bootstrap.Bootstrap) error { return bootstraptest.AllGatherRounds(ctx, b, 20) }) {
		if err != nil {
			t.Errorf("shrunk rank %d: %v", r, err)
		}
	}
	for _, b := range append(live, bs...) {
		b.Close()
	}
}

// A rank lost while the others wait in Shrink is left out without
// waiting for it; the survivors' shrunk Bootstraps see later losses.
func TestLocalShrinkLostDuringAgreement(t *testing.T) {
	bs := bootstrap.NewLocal("shrink-late", 4)
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	survivors := bs[:3]
	go func() {
		time.Sleep(50 * time.Millisecond)
		bootstrap.KillLocal(bs[3])
	}()
	subs, errs := shrinkAll(ctx, survivors, make([][]int, 3))
	for r, err := range errs {
		if err != nil {
			t.Fatalf("rank %d: %v", r, err)
		}
		if subs[r].Size() != 3 {
			t.Fatalf("rank %d: shrunk to %d ranks, want 3", r, subs[r].Size())
		}
	}
	// Rank 1 dies now: the shrunk Bootstraps of 0 and 2 report it, as rank 1 there.
	bootstrap.KillLocal(bs[1])
	for _, r := range []int{0, 2} {
		err := subs[r].Barrier(ctx)
		var pl *rdma.PeerLostError
		if !errors.As(err, &pl) || pl.Rank != 1 {
			t.Errorf("rank %d: barrier after a loss: %v, want rank 1 lost", r, err)
		}
	}
	if _, err := subs[1].(bootstrap.Shrinker).Shrink(ctx, nil); !errors.Is(err, rdma.ErrClosed) {
		t.Errorf("killed rank's shrink: %v, want ErrClosed", err)
	}
	// The shrunk ones shrink again.
	again, errs := shrinkAll(ctx, []bootstrap.Bootstrap{subs[0], subs[2]}, [][]int{{1}, {1}})
	for r, err := range errs {
		if err != nil {
			t.Fatalf("second shrink, rank %d: %v", r, err)
		}
	}
	for r, err := range eachRank(again, func(b bootstrap.Bootstrap) error {
		if b.Size() != 2 {
			return fmt.Errorf("size %d", b.Size())
		}
		return bootstraptest.AllGatherRounds(ctx, b, 5)
	}) {
		if err != nil {
			t.Errorf("twice shrunk rank %d: %v", r, err)
		}
	}
	for _, b := range append(append(again, subs...), bs...) {
		b.Close()
	}
}

// Closing a shrunk Bootstrap is a clean leave there: a collective the
// closed rank never joins fails with reason "closed".
func TestLocalShrinkClose(t *testing.T) {
	bs := bootstrap.NewLocal("shrink-close", 3)
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	bootstrap.KillLocal(bs[2])
	subs, errs := shrinkAll(ctx, bs[:2], [][]int{{2}, {2}})
	for r, err := range errs {
		if err != nil {
			t.Fatalf("rank %d: %v", r, err)
		}
	}
	subs[1].Close()
	var pl *rdma.PeerLostError
	if err := subs[0].Barrier(ctx); !errors.As(err, &pl) || pl.Reason != bootstrap.ReasonClosed {
		t.Errorf("barrier after the other closed: %v, want a closed leave", err)
	}
	for _, b := range append(subs, bs...) {
		b.Close()
	}
}

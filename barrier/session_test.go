package barrier_test

import (
	"context"
	"errors"
	"fmt"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/rdmactor/rdmactor/barrier"
	"github.com/rdmactor/rdmactor/gin"
	"github.com/rdmactor/rdmactor/internal/testutils"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// kind is a barrier algorithm under test.
type kind struct {
	name string
	req  func(nRanks, count int) int
	make func(x *gin.Context, team gin.Team, signal0 gin.Signal, index uint32, opts ...barrier.Option) (barrier.Syncer, error)
}

var kinds = []kind{
	{"flat", barrier.Requirement, func(x *gin.Context, t gin.Team, s gin.Signal, i uint32, o ...barrier.Option) (barrier.Syncer, error) {
		return barrier.NewSession(x, t, s, i, o...)
	}},
	{"dissemination", barrier.DisseminationRequirement, func(x *gin.Context, t gin.Team, s gin.Signal, i uint32, o ...barrier.Option) (barrier.Syncer, error) {
		return barrier.NewDisseminationSession(x, t, s, i, o...)
	}},
	// Groups of 2: on 3 ranks a group of one, on 8 four leaders.
	{"hierarchical", func(n, count int) int { return barrier.HierarchicalRequirement(n, 2, count) }, func(x *gin.Context, t gin.Team, s gin.Signal, i uint32, o ...barrier.Option) (barrier.Syncer, error) {
		return barrier.NewHierarchicalSession(x, t, 2, s, i, o...)
	}},
}

// signals is a Config.Signals for count barriers of kind k on n ranks
// (at least 1: 0 would mean gin's default).
func (k kind) signals(n, count int) int { return max(1, k.req(n, count)) }

// checkArrivals is the barrier property after barrier i (1-based) as seen
// by one rank: every rank has arrived at barrier i, and none is past
// barrier i+1.
func checkArrivals(arrived []atomic.Int64, i int) error {
	for q := range arrived {
		switch a := arrived[q].Load(); {
		case a < int64(i):
			return fmt.Errorf("barrier %d: left before rank %d arrived (it is at %d)", i, q, a)
		case a > int64(i)+1:
			return fmt.Errorf("barrier %d: rank %d is already at barrier %d", i, q, a)
		}
	}
	return nil
}

// syncLoop runs iters barriers of s, storing this rank's arrivals and
// checking everyone's after each.
func syncLoop(ctx context.Context, s barrier.Syncer, arrived []atomic.Int64, r, iters int, fence barrier.Fence) error {
	for i := 1; i <= iters; i++ {
		arrived[r].Store(int64(i))
		if err := s.Sync(ctx, fence); err != nil {
			return fmt.Errorf("barrier %d: %w", i, err)
		}
		if err := checkArrivals(arrived, i); err != nil {
			return err
		}
	}
	return nil
}

// No rank leaves a barrier before every rank arrived: per-rank counters
// across 10^4 barriers (fewer under -race, -short and for 8 goroutine
// ranks on a small host).
func TestNoEarlyLeave(t *testing.T) {
	for _, k := range kinds {
		for _, n := range []int{1, 2, 3, 4, 8} {
			t.Run(fmt.Sprintf("%s/n=%d", k.name, n), func(t *testing.T) {
				iters := testutils.Scale(10000, 300)
				if n > 4 {
					iters = testutils.Scale(2000, 100)
				}
				j := newJob(t, n, gin.Config{Signals: k.signals(n, 1)})
				arrived := make([]atomic.Int64, n)
				j.ranks(func(r int) error {
					s, err := k.make(j.x(r), j.comms[r].World(), 0, 0)
					if err != nil {
						return err
					}
					if err := syncLoop(j.ctx, s, arrived, r, iters, barrier.FenceNone); err != nil {
						return err
					}
					if s.Epoch() != uint64(iters) {
						return fmt.Errorf("epoch %d after %d barriers", s.Epoch(), iters)
					}
					return nil
				})
			})
		}
	}
}

// The same with waits that poll and yield (Pacing) instead of gin's.
func TestNoEarlyLeavePacing(t *testing.T) {
	pacings := map[string]barrier.Pacing{
		"gosched":       {Gosched: true, Spins: 64},
		"gosched+yield": {Gosched: true, OSYield: true},
	}
	for _, k := range kinds {
		for name, p := range pacings {
			t.Run(k.name+"/"+name, func(t *testing.T) {
				const n = 4
				iters := testutils.Scale(3000, 200)
				j := newJob(t, n, gin.Config{Signals: k.signals(n, 1)})
				arrived := make([]atomic.Int64, n)
				j.ranks(func(r int) error {
					s, err := k.make(j.x(r), j.comms[r].World(), 0, 0, barrier.WithPacing(p))
					if err != nil {
						return err
					}
					return syncLoop(j.ctx, s, arrived, r, iters, barrier.FenceFlush)
				})
			})
		}
	}
}

// Epochs survive the 32-bit wraparound of the slots: WithEpoch starts
// them 37 short of 2^32 and the barriers run across it.
func TestEpochWraparound(t *testing.T) {
	const start = 1<<32 - 37
	for _, k := range kinds {
		for _, n := range []int{2, 3} {
			t.Run(fmt.Sprintf("%s/n=%d", k.name, n), func(t *testing.T) {
				const iters = 100
				j := newJob(t, n, gin.Config{Signals: k.signals(n, 1)})
				arrived := make([]atomic.Int64, n)
				j.ranks(func(r int) error {
					x := j.x(r)
					s, err := k.make(x, j.comms[r].World(), 0, 0, barrier.WithEpoch(start))
					if err != nil {
						return err
					}
					if s.Epoch() != start {
						return fmt.Errorf("epoch %d after WithEpoch(%d)", s.Epoch(), uint64(start))
					}
					if err := syncLoop(j.ctx, s, arrived, r, iters, barrier.FenceNone); err != nil {
						return err
					}
					if s.Epoch() != start+iters {
						return fmt.Errorf("epoch %d, want %d", s.Epoch(), uint64(start+iters))
					}
					// A slot this rank waits on (the next rank's for flat,
					// round 0's for dissemination; for hierarchical the
					// release slot, or a leader's arrival slot of its
					// member, or its first round's) went past 2^32: its
					// low 32 bits are small again.
					slot := gin.Signal(0)
					switch {
					case k.name == "flat":
						slot = gin.Signal((r + 1) % n)
					case k.name == "hierarchical" && r%2 == 0 && r+1 < n:
						slot = 1
					case k.name == "hierarchical" && r%2 == 0:
						slot = 2
					}
					v, err := x.ReadSignal(slot, 64)
					if err != nil {
						return err
					}
					if v != start+iters || v&(1<<32-1) != iters-37 {
						return fmt.Errorf("slot %d holds %#x, want %#x", slot, v, uint64(start+iters))
					}
					return nil
				})
			})
		}
	}
}

// A rank that never arrives makes the others' Sync end with a
// TimeoutError naming it, not hang; the session is broken afterwards.
func TestTimeout(t *testing.T) {
	for _, k := range kinds {
		t.Run(k.name, func(t *testing.T) {
			const n, absent = 3, 2
			j := newJob(t, n, gin.Config{Signals: k.signals(n, 1)})
			j.ranks(func(r int) error {
				s, err := k.make(j.x(r), j.comms[r].World(), 0, 0)
				if err != nil || r == absent {
					return err
				}
				ctx, cancel := context.WithTimeout(j.ctx, 300*time.Millisecond)
				defer cancel()
				start := time.Now()
				err = s.Sync(ctx, barrier.FenceNone)
				if took := time.Since(start); took > 10*time.Second {
					return fmt.Errorf("timeout noticed after %v", took)
				}
				var te *barrier.TimeoutError
				if !errors.As(err, &te) || !errors.Is(err, barrier.ErrTimeout) || !errors.Is(err, context.DeadlineExceeded) {
					return fmt.Errorf("sync: %v, want a TimeoutError with DeadlineExceeded", err)
				}
				if te.Epoch != 1 || len(te.Missing) != 1 || (k.name == "flat" && te.Missing[0] != absent) {
					return fmt.Errorf("timeout error %+v: want epoch 1 and rank %d missing", te, absent)
				}
				if err := s.Sync(j.ctx, barrier.FenceNone); !errors.Is(err, barrier.ErrBroken) {
					return fmt.Errorf("sync after a timeout: %v, want ErrBroken", err)
				}
				return nil
			})
		})
	}
}

// SyncTimeout bounds the wait by itself.
func TestSyncTimeout(t *testing.T) {
	j := newJob(t, 2, gin.Config{Signals: barrier.Requirement(2, 1)})
	s, err := barrier.NewWorldSession(j.x(0), 0, 0)
	require.NoError(t, err)
	err = s.SyncTimeout(j.ctx, barrier.FenceNone, 50*time.Millisecond)
	require.ErrorIs(t, err, barrier.ErrTimeout)
	var te *barrier.TimeoutError
	require.ErrorAs(t, err, &te)
	assert.Equal(t, []int{1}, te.Missing)
	assert.Contains(t, err.Error(), "ranks [1] of the team did not arrive")
}

// Several barrier indices in flight at once: each rank runs one goroutine
// per index, all on one context, each with its own arrival counters.
func TestIndicesInFlight(t *testing.T) {
	for _, k := range kinds {
		t.Run(k.name, func(t *testing.T) {
			const n, indices = 4, 4
			iters := testutils.Scale(2000, 100)
			j := newJob(t, n, gin.Config{Signals: k.signals(n, indices)})
			arrived := make([][]atomic.Int64, indices)
			for i := range arrived {
				arrived[i] = make([]atomic.Int64, n)
			}
			j.ranks(func(r int) error {
				errs := make([]error, indices)
				var wg sync.WaitGroup
				for idx := range indices {
					wg.Go(func() {
						s, err := k.make(j.x(r), j.comms[r].World(), 0, uint32(idx))
						if err == nil {
							err = syncLoop(j.ctx, s, arrived[idx], r, iters, barrier.FenceNone)
						}
						if err != nil {
							errs[idx] = fmt.Errorf("index %d: %w", idx, err)
						}
					})
				}
				wg.Wait()
				return errors.Join(errs...)
			})
		})
	}
}

// FencePut: puts issued before the barrier, to peers and to the rank
// itself, are visible after it.
func TestFencePut(t *testing.T) {
	const n = 3
	fencePutRounds(t, newJob(t, n, gin.Config{Signals: barrier.Requirement(n, 1), Require: gin.Requirements{StrongSignals: true}}), testutils.Scale(500, 50))
}

// FenceGet: gets issued before the barrier have landed when it returns,
// on both barrier kinds, alone and with FencePut. On shm a get completes
// when it is issued; the ofi twin (ofi_test.go) is where one is in flight.
func TestFenceGet(t *testing.T) {
	for _, k := range kinds {
		t.Run(k.name, func(t *testing.T) {
			const n = 3
			fenceGetRounds(t, newJob(t, n, gin.Config{Signals: k.signals(n, 1)}), k, testutils.Scale(200, 20))
		})
	}
}

func le64(b []byte) uint64 {
	return uint64(b[0]) | uint64(b[1])<<8 | uint64(b[2])<<16 | uint64(b[3])<<24 |
		uint64(b[4])<<32 | uint64(b[5])<<40 | uint64(b[6])<<48 | uint64(b[7])<<56
}

// A new session on slots an old one used resumes its epochs.
func TestResume(t *testing.T) {
	for _, k := range kinds {
		t.Run(k.name, func(t *testing.T) {
			const n = 3
			j := newJob(t, n, gin.Config{Signals: k.signals(n, 1)})
			arrived := make([]atomic.Int64, n)
			j.ranks(func(r int) error {
				for round := range 2 {
					s, err := k.make(j.x(r), j.comms[r].World(), 0, 0)
					if err != nil {
						return err
					}
					if s.Epoch() != uint64(5*round) {
						return fmt.Errorf("new session starts at epoch %d, want %d", s.Epoch(), 5*round)
					}
					for i := 1; i <= 5; i++ {
						arrived[r].Store(int64(5*round + i))
						if err := s.Sync(j.ctx, barrier.FenceNone); err != nil {
							return err
						}
						if err := checkArrivals(arrived, 5*round+i); err != nil {
							return err
						}
					}
				}
				return nil
			})
		})
	}
}

// Rail sessions: 4 ranks in LSA teams of 2 form two rails {0,2} and {1,3}
// on the same signals; each rail's barrier involves only its members.
func TestRailSession(t *testing.T) {
	const n = 4
	iters := testutils.Scale(2000, 100)
	j := newJob(t, n, gin.Config{Signals: barrier.Requirement(2, 1), LSASize: 2})
	arrived := [2][]atomic.Int64{make([]atomic.Int64, 2), make([]atomic.Int64, 2)}
	j.ranks(func(r int) error {
		s, err := barrier.NewRailSession(j.x(r), 0, 0)
		if err != nil {
			return err
		}
		if got, want := s.Team(), (gin.Team{Rank: r / 2, NRanks: 2, Stride: 2}); got != want {
			return fmt.Errorf("rail team %+v, want %+v", got, want)
		}
		return syncLoop(j.ctx, s, arrived[r%2], r/2, iters, barrier.FenceNone)
	})
}

func TestSessionErrors(t *testing.T) {
	j := newJob(t, 2, gin.Config{Signals: 3})
	x := j.x(0)
	world := j.comms[0].World()
	tests := []struct {
		name string
		make func() error
		want error
	}{
		{"signals missing", func() error { _, err := barrier.NewSession(x, world, 0, 1); return err }, gin.ErrUnknownSignal},
		{"signal0 past the end", func() error { _, err := barrier.NewWorldSession(x, 2, 0); return err }, gin.ErrUnknownSignal},
		{"dissemination signals missing", func() error {
			_, err := barrier.NewDisseminationSession(x, world, 0, 3)
			return err
		}, gin.ErrUnknownSignal},
		{"rank outside team", func() error {
			_, err := barrier.NewSession(x, gin.Team{Rank: 2, NRanks: 2, Stride: 1}, 0, 0)
			return err
		}, gin.ErrBadArgument},
		{"empty team", func() error { _, err := barrier.NewSession(x, gin.Team{}, 0, 0); return err }, gin.ErrBadArgument},
		{"nil context", func() error { _, err := barrier.NewWorldSession(nil, 0, 0); return err }, gin.ErrBadArgument},
		{"nil context rail", func() error { _, err := barrier.NewRailSession(nil, 0, 0); return err }, gin.ErrBadArgument},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			assert.ErrorIs(t, tt.make(), tt.want)
		})
	}
	assert.Equal(t, 0, barrier.Requirement(0, 3))
	assert.Equal(t, 12, barrier.Requirement(4, 3))
	for n, want := range map[int]int{1: 0, 2: 1, 3: 2, 4: 2, 5: 3, 8: 3, 9: 4, 64: 6} {
		assert.Equal(t, want, barrier.DisseminationRequirement(n, 1), "n=%d", n)
	}
	// A release slot, an arrival slot per member after the leader, the
	// leaders' rounds; groups clamped to 1..n.
	for _, c := range []struct{ n, g, count, want int }{
		{1, 2, 1, 1}, {2, 2, 1, 2}, {3, 2, 1, 3}, {4, 2, 1, 3}, {8, 2, 1, 4},
		{4, 4, 2, 8}, {4, 0, 1, 3}, {4, 9, 1, 4}, {0, 2, 1, 0}, {4, 2, 0, 0},
	} {
		assert.Equal(t, c.want, barrier.HierarchicalRequirement(c.n, c.g, c.count), "n=%d g=%d count=%d", c.n, c.g, c.count)
	}
}

// WithEpoch needs fresh slots; FencePut is refused by the dissemination
// and hierarchical barriers without breaking them.
func TestEpochAndFenceErrors(t *testing.T) {
	const n = 2
	j := newJob(t, n, gin.Config{Signals: barrier.Requirement(n, 1) + barrier.DisseminationRequirement(n, 1) + barrier.HierarchicalRequirement(n, 1, 1)})
	j.ranks(func(r int) error {
		x, team := j.x(r), j.comms[r].World()
		s, err := barrier.NewSession(x, team, 0, 0)
		if err != nil {
			return err
		}
		if err := s.Sync(j.ctx, barrier.FenceNone); err != nil {
			return err
		}
		if _, err := barrier.NewSession(x, team, 0, 0, barrier.WithEpoch(7)); !errors.Is(err, gin.ErrBadArgument) {
			return fmt.Errorf("WithEpoch on used slots: %v, want ErrBadArgument", err)
		}
		d, err := barrier.NewDisseminationSession(x, team, gin.Signal(barrier.Requirement(n, 1)), 0)
		if err != nil {
			return err
		}
		if err := d.Sync(j.ctx, barrier.FencePut); !errors.Is(err, barrier.ErrFence) {
			return fmt.Errorf("dissemination FencePut: %v, want ErrFence", err)
		}
		if err := d.Sync(j.ctx, barrier.FenceFlush); err != nil {
			return err
		}
		h, err := barrier.NewHierarchicalSession(x, team, 1, gin.Signal(barrier.Requirement(n, 1)+barrier.DisseminationRequirement(n, 1)), 0)
		if err != nil {
			return err
		}
		if err := h.Sync(j.ctx, barrier.FencePut); !errors.Is(err, barrier.ErrFence) {
			return fmt.Errorf("hierarchical FencePut: %v, want ErrFence", err)
		}
		if err := h.Sync(j.ctx, barrier.FenceNone); err != nil {
			return err
		}
		_, err = barrier.NewHierarchicalSession(x, team, 1, gin.Signal(barrier.Requirement(n, 1)+barrier.DisseminationRequirement(n, 1)), 0, barrier.WithEpoch(3))
		if !errors.Is(err, gin.ErrBadArgument) {
			return fmt.Errorf("hierarchical WithEpoch on used slots: %v, want ErrBadArgument", err)
		}
		return nil
	})
}

// A slot updated with SignalInc by someone else is an error at the post
// (gin's Inc/Add rule), not a silent miscount.
func TestMixedSignalOps(t *testing.T) {
	j := newJob(t, 2, gin.Config{Signals: barrier.Requirement(2, 1)})
	x0, x1 := j.x(0), j.x(1)
	// Rank 1's slot at rank 0 is signal 1: put it in Inc mode.
	require.NoError(t, x1.Signal(j.comms[1].World(), 0, gin.SignalInc(1)))
	s, err := barrier.NewWorldSession(x1, 0, 0)
	require.NoError(t, err)
	ctx, cancel := context.WithTimeout(j.ctx, 5*time.Second)
	defer cancel()
	assert.ErrorIs(t, s.Sync(ctx, barrier.FenceNone), gin.ErrMixedSignalOps)
	_ = x0
}

package barrier

import (
	"context"
	"fmt"
	"time"

	"github.com/rdmactor/rdmactor/gin"
)

// DisseminationSession is a dissemination barrier (Hensgen, Finkel and
// Manber, "Two algorithms for barrier synchronization", 1988; Open MPI's
// ompi_coll_base_barrier_intra_bruck): in round k = 0..ceil(log2 n)-1 a
// member signals member rank+2^k and waits for member rank-2^k. It costs
// ceil(log2 n) signals and as many latencies per barrier, where Session
// costs n-1 signals and one latency: see the package doc for when each
// wins.
//
// Slot k of barrier index is signal signal0 + index*rounds + k, with
// rounds = ceil(log2 NRanks) (DisseminationRequirement); only member
// rank-2^k adds to it. Epochs live in the slots' shadows, compared over 32
// bits in rolling order, as in Session. Not safe for concurrent use.
type DisseminationSession struct {
	x      *gin.Context
	team   gin.Team
	index  uint32
	base   gin.Signal // slot of round k: base+k
	rounds int
	pacing Pacing
	epoch  uint64
	wide   bool
	broken broken
}

var _ Syncer = (*DisseminationSession)(nil)

// NewDisseminationSession makes dissemination barrier index of team on x,
// over signals signal0 + index*rounds ... + rounds-1. Collective and
// resumable as NewSession; same errors.
func NewDisseminationSession(x *gin.Context, team gin.Team, signal0 gin.Signal, index uint32, opts ...Option) (*DisseminationSession, error) {
	r := rounds(team.NRanks)
	base, err := slots(x, team, signal0, index, r)
	if err != nil {
		return nil, err
	}
	o := collect(opts)
	s := &DisseminationSession{x: x, team: team, index: index, base: base, rounds: r, pacing: o.pacing}
	if r > 0 {
		if s.epoch, err = x.ReadSignalShadow(base); err != nil {
			return nil, err
		}
	}
	if o.hasEpoch {
		if err := s.start(o.epoch); err != nil {
			return nil, err
		}
	}
	return s, nil
}

// Team is the session's team.
func (s *DisseminationSession) Team() gin.Team { return s.team }

// Epoch is the number of barriers completed on the session's slots.
func (s *DisseminationSession) Epoch() uint64 { return s.epoch }

// partners are the members this rank signals and waits for in round k.
func (s *DisseminationSession) partners(k int) (to, from int) {
	n, d := s.team.NRanks, 1<<k
	return (s.team.Rank + d) % n, (s.team.Rank - d%n + n) % n
}

func (s *DisseminationSession) start(e uint64) error {
	for k := range s.rounds {
		if v, err := s.x.ReadSignalShadow(s.base + gin.Signal(k)); err != nil || v != 0 {
			return fmt.Errorf("barrier %d: WithEpoch on slots in use (shadow of round %d is %d, %v): %w", s.index, k, v, err, gin.ErrBadArgument)
		}
	}
	if e == 0 {
		return nil
	}
	for k := range s.rounds {
		to, _ := s.partners(k)
		if err := s.x.Signal(s.team, to, gin.SignalAdd(s.base+gin.Signal(k), e)); err != nil {
			return fmt.Errorf("barrier %d: WithEpoch: %w", s.index, err)
		}
		if _, err := s.x.IncreaseSignalShadow(s.base+gin.Signal(k), e); err != nil {
			return err
		}
	}
	s.epoch, s.wide = e, s.rounds > 0
	return nil
}

// Sync is Session.Sync over ceil(log2 n) rounds. FencePut is refused with
// ErrFence before anything is posted (it does not break the session): a
// member does not signal every other, so its arrival cannot imply its
// puts. FenceFlush and FenceGet are supported: both concern this rank's
// own operations only. A *TimeoutError names the one member the
// stalled round waited for.
func (s *DisseminationSession) Sync(ctx context.Context, fence Fence) error {
	return s.broken.runArrivalOnly(s.index, "dissemination", fence, func() error { return s.sync(ctx, fence) })
}

// SyncTimeout is Sync with a wait of at most d.
func (s *DisseminationSession) SyncTimeout(ctx context.Context, fence Fence, d time.Duration) error {
	return syncTimeout(ctx, s, fence, d)
}

func (s *DisseminationSession) sync(ctx context.Context, fence Fence) error {
	gets, err := enter(ctx, s.x, s.index, fence)
	if err != nil {
		return err
	}
	s.epoch++
	bits := compareBits(s.wide)
	for k := range s.rounds {
		sig := s.base + gin.Signal(k)
		to, from := s.partners(k)
		if err := s.x.Signal(s.team, to, gin.SignalAdd(sig, 1)); err != nil {
			return fmt.Errorf("barrier %d: round %d: arrive at team rank %d: %w", s.index, k, to, err)
		}
		want, err := s.x.IncreaseSignalShadow(sig, 1)
		if err != nil {
			return err
		}
		if _, err := s.pacing.Wait(ctx, s.x, sig, want, bits); err != nil {
			if ctxEnded(err) {
				return &TimeoutError{Index: s.index, Epoch: s.epoch, Missing: []int{from}, Err: ctx.Err()}
			}
			return fmt.Errorf("barrier %d: round %d: %w", s.index, k, err)
		}
	}
	s.wide = false
	return gets.wait(ctx, s.index)
}

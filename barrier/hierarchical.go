package barrier

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/rdmactor/rdmactor/gin"
)

// HierarchicalSession is a barrier over groups of consecutive team members,
// one group per host (the LSA team, for the world team): each member
// signals its group's leader (the group's first member), the leaders pass
// a dissemination barrier among themselves, and each leader then signals
// its members. MPICH's MPIR_Barrier_intra_smp (MPICH 4.2) and Open MPI's
// coll/han barrier take the same shape. Only the leaders' signals leave a
// host, one per round of ceil(log2 groups) rounds, plus a hop into and
// one out of each group; Session and DisseminationSession signal across
// hosts from every member.
//
// Per barrier index it uses HierarchicalRequirement(n, groupRanks, 1)
// slots from signal0 + index times that: the release slot (0), which the
// leader adds to at each member; one arrival slot per member after the
// leader (1..groupRanks-1), which that member adds to at its leader; and
// the leaders' dissemination rounds after those. Epochs live in the slots'
// shadows, compared over 32 bits in rolling order, as in Session. Not safe
// for concurrent use.
type HierarchicalSession struct {
	x       *gin.Context
	team    gin.Team
	index   uint32
	base    gin.Signal
	group   int // members per group (the last may have fewer)
	first   int // team rank of this rank's group's leader
	members int // members of this rank's group
	leaders *DisseminationSession
	pacing  Pacing
	epoch   uint64
	wide    bool
	broken  broken
}

var _ Syncer = (*HierarchicalSession)(nil)

// HierarchicalRequirement is the number of signals count
// HierarchicalSessions on a team of nRanks members in groups of
// groupRanks need: groupRanks slots (a release slot and groupRanks-1
// arrival slots) plus DisseminationRequirement(groups, 1) per barrier
// index. groupRanks is clamped to 1..nRanks.
func HierarchicalRequirement(nRanks, groupRanks, count int) int {
	if nRanks <= 0 || count <= 0 {
		return 0
	}
	g := min(max(groupRanks, 1), nRanks)
	return (g + rounds((nRanks+g-1)/g)) * count
}

// NewHierarchicalSession makes hierarchical barrier index of team on x, in
// groups of groupRanks consecutive team members (clamped to 1..NRanks; the
// last group takes what is left), over signals signal0 + index*k ...
// + k-1 with k = HierarchicalRequirement(team.NRanks, groupRanks, 1).
// Every member passes the same groupRanks, signal0, index and options.
// Collective and resumable as NewSession; same errors.
func NewHierarchicalSession(x *gin.Context, team gin.Team, groupRanks int, signal0 gin.Signal, index uint32, opts ...Option) (*HierarchicalSession, error) {
	g := min(max(groupRanks, 1), max(team.NRanks, 1))
	base, err := slots(x, team, signal0, index, HierarchicalRequirement(team.NRanks, g, 1))
	if err != nil {
		return nil, err
	}
	o := collect(opts)
	s := &HierarchicalSession{x: x, team: team, index: index, base: base, group: g, pacing: o.pacing}
	s.first = team.Rank / g * g
	s.members = min(g, team.NRanks-s.first)
	if groups := (team.NRanks + g - 1) / g; team.Rank == s.first && groups > 1 {
		lt := gin.Team{Rank: team.Rank / g, NRanks: groups, Stride: g * team.Stride}
		// Its options but the epoch: start sets every slot's epoch at once.
		if s.leaders, err = NewDisseminationSession(x, lt, base+gin.Signal(g), 0, WithPacing(o.pacing)); err != nil {
			return nil, err
		}
	}
	switch {
	case team.Rank != s.first:
		s.epoch, err = x.ReadSignalShadow(s.base)
	case s.members > 1:
		s.epoch, err = x.ReadSignalShadow(s.arrival(s.first + 1))
	case s.leaders != nil:
		s.epoch = s.leaders.epoch
	}
	if err != nil {
		return nil, err
	}
	if o.hasEpoch {
		if err := s.start(o.epoch); err != nil {
			return nil, err
		}
	}
	return s, nil
}

// Team is the session's team.
func (s *HierarchicalSession) Team() gin.Team { return s.team }

// Epoch is the number of barriers completed on the session's slots.
func (s *HierarchicalSession) Epoch() uint64 { return s.epoch }

// Leader reports whether this rank leads its group (and so takes part in
// the barrier between groups).
func (s *HierarchicalSession) Leader() bool { return s.team.Rank == s.first }

// arrival is the slot at the leader that team rank m adds to.
func (s *HierarchicalSession) arrival(m int) gin.Signal {
	return s.base + gin.Signal(m-s.first)
}

// start is WithEpoch: every slot this rank signals gets e, and every slot
// it waits on e in its shadow.
func (s *HierarchicalSession) start(e uint64) error {
	if v, err := s.x.ReadSignalShadow(s.base); err != nil || v != 0 || s.epoch != 0 {
		return errors.Join(err, fmt.Errorf("barrier %d: WithEpoch on slots in use (epoch %d): %w", s.index, max(v, s.epoch), gin.ErrBadArgument))
	}
	if s.leaders != nil {
		if err := s.leaders.start(e); err != nil {
			return err
		}
	}
	if e == 0 {
		return nil
	}
	if s.team.Rank != s.first {
		if err := s.x.Signal(s.team, s.first, gin.SignalAdd(s.arrival(s.team.Rank), e)); err != nil {
			return fmt.Errorf("barrier %d: WithEpoch: %w", s.index, err)
		}
		if _, err := s.x.IncreaseSignalShadow(s.base, e); err != nil {
			return err
		}
	}
	for m := s.first + 1; s.Leader() && m < s.first+s.members; m++ {
		if err := s.x.Signal(s.team, m, gin.SignalAdd(s.base, e)); err != nil {
			return fmt.Errorf("barrier %d: WithEpoch: %w", s.index, err)
		}
		if _, err := s.x.IncreaseSignalShadow(s.arrival(m), e); err != nil {
			return err
		}
	}
	s.epoch, s.wide = e, true
	return nil
}

// Sync is Session.Sync in three steps (arrive at the leader, the leaders'
// barrier, release). FencePut is refused with ErrFence before anything is
// posted (it does not break the session), as by DisseminationSession: a
// member does not signal every other, so its arrival cannot imply its
// puts. FenceFlush and FenceGet are supported. A *TimeoutError names the
// members a leader waited for, the leader a member waited for, or the
// leader of the stalled round between groups.
func (s *HierarchicalSession) Sync(ctx context.Context, fence Fence) error {
	return s.broken.runArrivalOnly(s.index, "hierarchical", fence, func() error { return s.sync(ctx, fence) })
}

// SyncTimeout is Sync with a wait of at most d.
func (s *HierarchicalSession) SyncTimeout(ctx context.Context, fence Fence, d time.Duration) error {
	return syncTimeout(ctx, s, fence, d)
}

func (s *HierarchicalSession) sync(ctx context.Context, fence Fence) error {
	gets, err := enter(ctx, s.x, s.index, fence)
	if err != nil {
		return err
	}
	s.epoch++
	bits := compareBits(s.wide)
	if s.team.Rank != s.first {
		if err := s.x.Signal(s.team, s.first, gin.SignalAdd(s.arrival(s.team.Rank), 1)); err != nil {
			return fmt.Errorf("barrier %d: arrive at leader %d: %w", s.index, s.first, err)
		}
		if err := s.wait(ctx, s.base, bits, s.first); err != nil {
			return err
		}
	} else {
		for m := s.first + 1; m < s.first+s.members; m++ {
			if err := s.wait(ctx, s.arrival(m), bits, m); err != nil {
				return err
			}
		}
		if err := s.between(ctx); err != nil {
			return err
		}
		for m := s.first + 1; m < s.first+s.members; m++ {
			if err := s.x.Signal(s.team, m, gin.SignalAdd(s.base, 1)); err != nil {
				return fmt.Errorf("barrier %d: release team rank %d: %w", s.index, m, err)
			}
		}
	}
	s.wide = false
	return gets.wait(ctx, s.index)
}

// wait bumps slot sig's shadow and waits for the slot to reach it; from is
// the team rank that adds to it, named in a timeout.
func (s *HierarchicalSession) wait(ctx context.Context, sig gin.Signal, bits, from int) error {
	want, err := s.x.IncreaseSignalShadow(sig, 1)
	if err != nil {
		return err
	}
	if _, err := s.pacing.Wait(ctx, s.x, sig, want, bits); err != nil {
		if ctxEnded(err) {
			return &TimeoutError{Index: s.index, Epoch: s.epoch, Missing: []int{from}, Err: ctx.Err()}
		}
		return fmt.Errorf("barrier %d: waiting for team rank %d: %w", s.index, from, err)
	}
	return nil
}

// between is the leaders' barrier, its timeout naming team ranks.
func (s *HierarchicalSession) between(ctx context.Context) error {
	if s.leaders == nil {
		return nil
	}
	err := s.leaders.sync(ctx, FenceNone)
	var te *TimeoutError
	if errors.As(err, &te) {
		missing := make([]int, len(te.Missing))
		for i, l := range te.Missing {
			missing[i] = l * s.group
		}
		return &TimeoutError{Index: s.index, Epoch: s.epoch, Missing: missing, Err: te.Err}
	}
	return err
}

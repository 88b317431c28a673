package barrier

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/rdmactor/rdmactor/gin"
)

// Syncer is a barrier over a team: Session and DisseminationSession.
type Syncer interface {
	// Sync returns once every member of the team has called Sync as
	// often as this rank (see Session.Sync).
	Sync(ctx context.Context, fence Fence) error
	// Epoch is the number of barriers completed on the session's slots.
	Epoch() uint64
}

// Session is one barrier (an index) over a team, where every member
// signals every other: NCCL's ncclGinBarrierSession
// (nccl_device/impl/gin_barrier__funcs.h, NCCL 2.29). Member p of the
// team owns slot signal0 + index*NRanks + p at every member; Sync adds 1 to
// the caller's slot at every peer, in rotated order (peer rank+1+i), then
// waits until each peer's slot here reaches the epoch kept in that slot's
// gin signal shadow, comparing the low 32 bits in rolling order.
//
// One arrival per peer per barrier, so a barrier costs NRanks-1 signals
// and the latency of one: see DisseminationSession for large teams.
//
// A Session is not safe for concurrent use: give each goroutine its own
// index (as NCCL gives each CTA its own). Sessions of different indices
// may run at once on one Context.
type Session struct {
	x      *gin.Context
	team   gin.Team
	index  uint32
	base   gin.Signal // slot of team rank p: base+p
	pacing Pacing
	epoch  uint64
	wide   bool // the next Sync compares 64 bits (after WithEpoch)
	broken broken
}

var _ Syncer = (*Session)(nil)

// NewSession makes barrier index of team on context x, over signals
// signal0 + index*team.NRanks ... + team.NRanks-1, which the Comm must have
// (Requirement). Every member of the team makes the session with equal
// signal0 and index (and options). A session resumes the epochs its slots'
// shadows hold, so a new Session on slots an old one used continues where
// it stopped.
//
// Errors: gin.ErrUnknownSignal when the Comm lacks the slots;
// gin.ErrBadArgument for a malformed team, or WithEpoch on slots in use;
// gin.ErrNotPeer for a team with a member outside gin.Config.Peers (or
// gin.ErrPeerOutOfRange for one past the world); gin's errors from posting
// WithEpoch's offset.
func NewSession(x *gin.Context, team gin.Team, signal0 gin.Signal, index uint32, opts ...Option) (*Session, error) {
	base, err := slots(x, team, signal0, index, team.NRanks)
	if err != nil {
		return nil, err
	}
	o := collect(opts)
	s := &Session{x: x, team: team, index: index, base: base, pacing: o.pacing}
	if team.NRanks > 1 {
		if s.epoch, err = x.ReadSignalShadow(s.slot(s.peer(1))); err != nil {
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

// NewRailSession is NewSession on the Comm's rail team (ranks with this
// rank's LSA index, one per LSA team): NCCL's ncclGinBarrierSession(coop,
// gin, ncclTeamTagRail{}, index).
func NewRailSession(x *gin.Context, signal0 gin.Signal, index uint32, opts ...Option) (*Session, error) {
	if x == nil {
		return nil, fmt.Errorf("barrier: nil context: %w", gin.ErrBadArgument)
	}
	return NewSession(x, x.Comm().Rail(), signal0, index, opts...)
}

// NewWorldSession is NewSession on the team of every rank.
func NewWorldSession(x *gin.Context, signal0 gin.Signal, index uint32, opts ...Option) (*Session, error) {
	if x == nil {
		return nil, fmt.Errorf("barrier: nil context: %w", gin.ErrBadArgument)
	}
	return NewSession(x, x.Comm().World(), signal0, index, opts...)
}

// Team is the session's team.
func (s *Session) Team() gin.Team { return s.team }

// Epoch is the number of barriers completed on the session's slots
// (including those before the session was made, and WithEpoch's start).
func (s *Session) Epoch() uint64 { return s.epoch }

// peer is the team rank i places after this rank, wrapping.
func (s *Session) peer(i int) int {
	p := s.team.Rank + i
	if p >= s.team.NRanks {
		p -= s.team.NRanks
	}
	return p
}

func (s *Session) slot(p int) gin.Signal { return s.base + gin.Signal(p) }

// start is WithEpoch: add e to this rank's slot at every member (itself
// included) and to every slot's shadow here.
func (s *Session) start(e uint64) error {
	for p := range s.team.NRanks {
		if v, err := s.x.ReadSignalShadow(s.slot(p)); err != nil || v != 0 {
			return errors.Join(err, fmt.Errorf("barrier %d: WithEpoch on slots in use (shadow of team rank %d's slot is %d): %w", s.index, p, v, gin.ErrBadArgument))
		}
	}
	if e == 0 {
		return nil
	}
	mine := gin.SignalAdd(s.slot(s.team.Rank), e)
	for i := 1; i <= s.team.NRanks; i++ {
		if err := s.x.Signal(s.team, s.peer(i), mine); err != nil {
			return fmt.Errorf("barrier %d: WithEpoch: %w", s.index, err)
		}
		if _, err := s.x.IncreaseSignalShadow(s.slot(s.peer(i)), e); err != nil {
			return err
		}
	}
	s.epoch, s.wide = e, true
	return nil
}

// Sync returns once every member of the team has called Sync as often as
// this rank has: no member returns from its k-th Sync before every member
// entered its k-th. fence adds ordering (see Fence). Each wait ends when
// ctx does.
//
// Errors: a *TimeoutError (ErrTimeout, and ctx's error) naming the members
// not seen when ctx ended; gin's errors (gin.ErrPeerLost, gin.ErrClosed)
// from posting or waiting. Any error breaks the session: later calls
// return ErrBroken.
func (s *Session) Sync(ctx context.Context, fence Fence) error {
	return s.broken.run(s.index, func() error { return s.sync(ctx, fence) })
}

// SyncTimeout is Sync with a wait of at most d (besides ctx's own end):
// the timeout variant, for callers that must not hang on a member that
// never arrives.
func (s *Session) SyncTimeout(ctx context.Context, fence Fence, d time.Duration) error {
	return syncTimeout(ctx, s, fence, d)
}

func (s *Session) sync(ctx context.Context, fence Fence) error {
	gets, err := enter(ctx, s.x, s.index, fence)
	if err != nil {
		return err
	}
	last := s.team.NRanks - 1 // peers to signal and wait for, in rotated order
	if fence&FencePut != 0 {
		last++ // this rank's own slot, after every peer
	}
	arrive := gin.SignalAdd(s.slot(s.team.Rank), 1)
	for i := 1; i <= last; i++ {
		p := s.peer(i)
		if err := s.x.Signal(s.team, p, arrive); err != nil {
			return fmt.Errorf("barrier %d: arrive at team rank %d: %w", s.index, p, err)
		}
		// Bumping the expected epoch is covered by the signal's latency.
		if _, err := s.x.IncreaseSignalShadow(s.slot(p), 1); err != nil {
			return err
		}
	}
	s.epoch++
	bits := compareBits(s.wide)
	for i := 1; i <= last; i++ {
		sig := s.slot(s.peer(i))
		want, err := s.x.ReadSignalShadow(sig)
		if err != nil {
			return err
		}
		if _, err := s.pacing.Wait(ctx, s.x, sig, want, bits); err != nil {
			if ctxEnded(err) {
				return s.timeout(ctx, last, bits)
			}
			return fmt.Errorf("barrier %d: %w", s.index, err)
		}
	}
	s.wide = false
	return gets.wait(ctx, s.index)
}

// timeout builds the TimeoutError of the current epoch: the members whose
// slot here is behind its shadow.
func (s *Session) timeout(ctx context.Context, last, bits int) error {
	e := &TimeoutError{Index: s.index, Epoch: s.epoch, Err: ctx.Err()}
	m := mask(bits)
	for i := 1; i <= last; i++ {
		p := s.peer(i)
		want, err1 := s.x.ReadSignalShadow(s.slot(p))
		v, err2 := s.x.ReadSignal(s.slot(p), bits)
		if err1 != nil || err2 != nil || !gin.RollingLE(want&m, v, m) {
			e.Missing = append(e.Missing, p)
		}
	}
	return e
}

// ctxEnded reports whether err is a context's end.
func ctxEnded(err error) bool {
	return errors.Is(err, context.DeadlineExceeded) || errors.Is(err, context.Canceled)
}

package gin

import "fmt"

// Team is a set of ranks addressed by a team-relative peer index, as
// ncclTeam (nccl_device/core.h, NCCL 2.28): member p of the team is world
// rank base + p*Stride, where base is the caller's rank - Rank*Stride.
type Team struct {
	Rank   int // the caller's index in the team
	NRanks int // members
	Stride int // world-rank distance between consecutive members
}

// worldRank maps team peer p to a world rank of a world of size ranks, for
// a caller of world rank me. Stride and Rank are bounded first, so that the
// product cannot overflow into a valid rank (a Team of huge Stride would
// otherwise reach another rank).
func (t Team) worldRank(me, size, p int) (int, error) {
	if t.Stride <= 0 || t.Stride > size || t.Rank < 0 || t.Rank >= t.NRanks || t.NRanks > size {
		return 0, fmt.Errorf("team {rank %d, nranks %d, stride %d} in a world of %d: invalid: %w", t.Rank, t.NRanks, t.Stride, size, ErrPeerOutOfRange)
	}
	if p < 0 || p >= t.NRanks {
		return 0, fmt.Errorf("peer %d of team {rank %d, nranks %d, stride %d}: %w", p, t.Rank, t.NRanks, t.Stride, ErrPeerOutOfRange)
	}
	w := me + (p-t.Rank)*t.Stride
	if w < 0 || w >= size {
		return 0, fmt.Errorf("peer %d of team {rank %d, nranks %d, stride %d} is world rank %d of %d: %w", p, t.Rank, t.NRanks, t.Stride, w, size, ErrPeerOutOfRange)
	}
	return w, nil
}

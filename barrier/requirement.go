package barrier

import (
	"fmt"
	"math/bits"

	"github.com/rdmactor/rdmactor/gin"
)

// Requirement is the number of signals count Sessions (barrier indices
// 0..count-1) on a team of nRanks members need: one slot per sender per
// barrier, nRanks*count (ncclGinBarrierCreateRequirement,
// nccl_device/gin_barrier.h, NCCL 2.29). gin fixes the signal count when
// the Comm is created, so add it to gin.Config.Signals then and pass the
// first of those signals as signal0 to NewSession:
//
//	sig0 := gin.Signal(cfg.Signals)                  // after the signals already planned
//	cfg.Signals += barrier.Requirement(size, 4)      // 4 barrier indices on the world team
//	comm, _ := gin.Init(ctx, cfg)
//	s, _ := barrier.NewWorldSession(x, sig0, 2)      // index 2 of the 4
func Requirement(nRanks, count int) int {
	if nRanks <= 0 || count <= 0 {
		return 0
	}
	return nRanks * count
}

// DisseminationRequirement is the number of signals count
// DisseminationSessions on a team of nRanks members need: one slot per
// round, ceil(log2 nRanks) per barrier index.
func DisseminationRequirement(nRanks, count int) int {
	if nRanks <= 0 || count <= 0 {
		return 0
	}
	return rounds(nRanks) * count
}

// rounds is ceil(log2 n), the rounds of a dissemination barrier of n ranks.
func rounds(n int) int {
	if n <= 1 {
		return 0
	}
	return bits.Len(uint(n - 1))
}

// slots checks that signals [base, base+n) exist on x's Comm, that the
// team is well formed and that its members are peers of this rank
// (gin.Comm.CheckTeam).
func slots(x *gin.Context, team gin.Team, signal0 gin.Signal, index uint32, perIndex int) (gin.Signal, error) {
	if x == nil {
		return 0, fmt.Errorf("barrier: nil context: %w", gin.ErrBadArgument)
	}
	if team.NRanks < 1 || team.Rank < 0 || team.Rank >= team.NRanks {
		return 0, fmt.Errorf("barrier: team {rank %d, nranks %d}: %w", team.Rank, team.NRanks, gin.ErrBadArgument)
	}
	if err := x.Comm().CheckTeam(team); err != nil {
		return 0, fmt.Errorf("barrier: %w", err)
	}
	first := uint64(signal0) + uint64(index)*uint64(perIndex)
	if have := uint64(x.Comm().Signals()); first+uint64(perIndex) > have {
		return 0, fmt.Errorf("barrier: index %d needs signals %d..%d, the comm has %d (add Requirement to gin.Config.Signals): %w",
			index, first, first+uint64(perIndex)-1, have, gin.ErrUnknownSignal)
	}
	return gin.Signal(first), nil
}

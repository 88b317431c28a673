package perf

import (
	"context"
	"encoding/binary"
	"fmt"
	"math"
	"slices"
	"time"

	"github.com/rdmactor/rdmactor/gin"
)

// SlowestMedians gathers every rank's timed rounds over g's bootstrap
// (gin.Comm.AllGather: collective, after the timing) and returns, for each
// of the cols columns, the median over rounds of the slowest rank's time
// in seconds: a round lasts until its slowest rank is done, as in Timer.
// rounds[i][k] is column k of round i; every rank passes the same number
// of rounds and cols. With no rounds every median is NaN. It returns
// AllGather's error, or one for a rank whose rounds do not match.
func SlowestMedians(ctx context.Context, g *gin.Comm, cols int, rounds [][]time.Duration) ([]float64, error) {
	mine := make([]byte, 0, 8*cols*len(rounds))
	for _, r := range rounds {
		if len(r) != cols {
			return nil, fmt.Errorf("perf: a round of %d columns, want %d", len(r), cols)
		}
		for _, v := range r {
			mine = binary.LittleEndian.AppendUint64(mine, uint64(v))
		}
	}
	all, err := g.AllGather(ctx, mine)
	if err != nil {
		return nil, err
	}
	for r, b := range all {
		if len(b) != len(mine) {
			return nil, fmt.Errorf("perf: rank %d timed %d bytes of rounds, this rank %d", r, len(b), len(mine))
		}
	}
	meds := make([]float64, cols)
	per := make([]float64, len(rounds))
	for k := range cols {
		for i := range rounds {
			worst := 0.0
			for _, b := range all {
				worst = max(worst, time.Duration(binary.LittleEndian.Uint64(b[8*(cols*i+k):])).Seconds())
			}
			per[i] = worst
		}
		meds[k] = median(per)
	}
	return meds, nil
}

// median sorts v and returns its middle element (the upper one of an even
// count), NaN for none.
func median(v []float64) float64 {
	if len(v) == 0 {
		return math.NaN()
	}
	slices.Sort(v)
	return v[len(v)/2]
}

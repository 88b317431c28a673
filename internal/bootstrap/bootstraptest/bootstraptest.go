// Package bootstraptest holds the checks that the tests of every Bootstrap
// implementation share, so that the local and the remote one are held to
// the same results.
package bootstraptest

import (
	"context"
	"fmt"

	"github.com/rdmactor/rdmactor/internal/bootstrap"
)

// RankData is rank r's data in round i: sizes vary with r and i, some are
// empty.
func RankData(r, i int) []byte {
	if (r+i)%5 == 0 {
		return nil
	}
	b := make([]byte, (r*7+i*13)%300+1)
	for k := range b {
		b[k] = byte(r*31 + i + k)
	}
	return b
}

// checkGathered checks AllGather's result of round i against RankData.
func checkGathered(all [][]byte, n, i int) error {
	if len(all) != n {
		return fmt.Errorf("round %d: %d entries, want %d", i, len(all), n)
	}
	for r, got := range all {
		if want := RankData(r, i); string(got) != string(want) {
			return fmt.Errorf("round %d: rank %d's data is %d bytes %x..., want %d bytes", i, r, len(got), got[:min(len(got), 4)], len(want))
		}
	}
	return nil
}

// AllGatherRounds runs rounds AllGathers of RankData and a Barrier on b,
// checking every result and that results are the caller's own to modify.
// It returns the first error, b's or a wrong result's.
func AllGatherRounds(ctx context.Context, b bootstrap.Bootstrap, rounds int) error {
	for i := range rounds {
		all, err := b.AllGather(ctx, RankData(b.Rank(), i))
		if err != nil {
			return err
		}
		if err := checkGathered(all, b.Size(), i); err != nil {
			return err
		}
		all[b.Rank()] = []byte("scribble") // results are the caller's own
	}
	return b.Barrier(ctx)
}

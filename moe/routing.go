package moe

import (
	"fmt"
	"math"
	"math/rand/v2"
)

// Skew shapes RandomRouting's choice of experts.
type Skew struct {
	// Zipf is the exponent s of a Zipf popularity: the expert of
	// popularity rank i (a permutation of the experts fixed by the seed,
	// equal on every rank) is chosen with weight 1/(i+1)^s. 0 is uniform;
	// around 1 a few experts get most tokens, as routers do early in
	// training.
	Zipf float64
	// Drop is the probability that a slot is dropped (-1), as capacity
	// limits and masked tokens do.
	Drop float64
}

// RandomRouting is a router's output for rank's numTokens tokens: topkIdx
// [numTokens][topk] holds distinct expert ids of [0, numExperts) (-1 for
// dropped slots) and topkWeights [numTokens][topk] positive weights that
// sum to 1 over each token's kept slots (0 for dropped ones), as a
// softmax over the top-k gives. It is a function of its arguments: the
// same seed gives the same routing on every run and every machine.
func RandomRouting(seed uint64, rank, numTokens, topk, numExperts int, skew Skew) ([]int32, []float32, error) {
	if numTokens < 0 || topk <= 0 || topk > numExperts || skew.Zipf < 0 || skew.Drop < 0 || skew.Drop > 1 {
		return nil, nil, fmt.Errorf("random routing: %d tokens, top-%d of %d experts, zipf %g, drop %g: %w",
			numTokens, topk, numExperts, skew.Zipf, skew.Drop, ErrBadArgument)
	}
	// Popularity: one permutation for the job, so every rank favours the
	// same experts.
	pop := rand.New(rand.NewPCG(seed, 0x9e3779b97f4a7c15))
	order := pop.Perm(numExperts)
	weight := make([]float64, numExperts) // by expert
	for i, e := range order {
		weight[e] = math.Pow(float64(i+1), -skew.Zipf)
	}
	rng := rand.New(rand.NewPCG(seed, uint64(rank)+1))
	idx := make([]int32, numTokens*topk)
	wts := make([]float32, numTokens*topk)
	perm := make([]int32, numExperts)
	keys := make([]float64, numExperts)
	for i := range perm {
		perm[i] = int32(i)
	}
	for t := range numTokens {
		row := idx[t*topk : (t+1)*topk]
		if skew.Zipf == 0 {
			// Partial Fisher-Yates: the first topk of a random permutation.
			for k := range topk {
				j := k + rng.IntN(numExperts-k)
				perm[k], perm[j] = perm[j], perm[k]
				row[k] = perm[k]
			}
		} else {
			// Weighted sampling without replacement (Efraimidis and
			// Spirakis, 2006): the topk largest u^(1/w).
			for e := range keys {
				keys[e] = math.Log(1-rng.Float64()) / weight[e]
			}
			for k := range topk {
				best := -1
				for e, v := range keys {
					if best < 0 || v > keys[best] {
						best = e
					}
				}
				row[k] = int32(best)
				keys[best] = math.Inf(-1)
			}
		}
		w := wts[t*topk : (t+1)*topk]
		sum := float32(0)
		for k := range topk {
			if skew.Drop > 0 && rng.Float64() < skew.Drop {
				row[k] = -1
				continue
			}
			w[k] = float32(0.05 + rng.Float64())
			sum += w[k]
		}
		for k := range w {
			if row[k] >= 0 {
				w[k] /= sum
			}
		}
	}
	return idx, wts, nil
}

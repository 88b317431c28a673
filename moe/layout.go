package moe

import "fmt"

// This file is the algorithm of dispatch and combine without the data
// movement: counts, masks, prefix sums, offsets and slots, as plain
// functions over flat slices. The GPU version mirrors each function with a
// kernel; shapes are given as [rows][cols] of a row-major flat slice.

// Layout is what GetDispatchLayout computes from a rank's routing, as
// DeepEP's Buffer.get_dispatch_layout (deep_ep/buffer.py, layout.cu)
// returns it for one node.
type Layout struct {
	// NumTokensPerRank is [ranks]: how many of this rank's tokens go to
	// each rank (a token counts once per rank however many of its experts
	// live there).
	NumTokensPerRank []int
	// NumTokensPerExpert is [numExperts]: how many tokens chose each
	// expert (dropped slots, -1, count nowhere).
	NumTokensPerExpert []int
	// IsTokenInRank is [numTokens][ranks]: whether token t has at least
	// one expert on rank r.
	IsTokenInRank []bool
}

// ExpertsPerRank is the number of experts each rank holds: numExperts /
// ranks; expert e lives on rank e / ExpertsPerRank and is local expert
// e % ExpertsPerRank there.
func ExpertsPerRank(numExperts, ranks int) int { return numExperts / ranks }

// CheckRouting checks that topkIdx is [numTokens][topk] and holds only -1
// (dropped) or expert ids in [0, numExperts). It returns ErrBadArgument
// naming the first bad entry.
func CheckRouting(topkIdx []int32, numTokens, topk, numExperts int) error {
	if numTokens < 0 || topk <= 0 || len(topkIdx) != numTokens*topk {
		return fmt.Errorf("routing: %d expert ids for %d tokens x top-%d: %w", len(topkIdx), numTokens, topk, ErrBadArgument)
	}
	for i, e := range topkIdx {
		if e < -1 || int(e) >= numExperts {
			return fmt.Errorf("routing: token %d slot %d: expert %d of %d: %w", i/topk, i%topk, e, numExperts, ErrBadArgument)
		}
	}
	return nil
}

// GetDispatchLayout computes the Layout of topkIdx, [numTokens][topk]
// expert ids (-1: dropped), for numExperts experts spread evenly over
// ranks ranks. numExperts must be a multiple of ranks.
func GetDispatchLayout(topkIdx []int32, numTokens, topk, numExperts, ranks int) (Layout, error) {
	var l Layout
	err := l.Compute(topkIdx, numTokens, topk, numExperts, ranks)
	return l, err
}

// Compute is GetDispatchLayout into l, reusing its slices when large
// enough (no allocation in steady state).
func (l *Layout) Compute(topkIdx []int32, numTokens, topk, numExperts, ranks int) error {
	if ranks <= 0 || numExperts <= 0 || numExperts%ranks != 0 {
		return fmt.Errorf("layout: %d experts over %d ranks: %w", numExperts, ranks, ErrBadArgument)
	}
	if err := CheckRouting(topkIdx, numTokens, topk, numExperts); err != nil {
		return err
	}
	l.NumTokensPerRank = zeroed(l.NumTokensPerRank, ranks)
	l.NumTokensPerExpert = zeroed(l.NumTokensPerExpert, numExperts)
	l.IsTokenInRank = zeroed(l.IsTokenInRank, numTokens*ranks)
	per := numExperts / ranks
	for t := range numTokens {
		in := l.IsTokenInRank[t*ranks : (t+1)*ranks]
		for _, e := range topkIdx[t*topk : (t+1)*topk] {
			if e < 0 {
				continue
			}
			l.NumTokensPerExpert[e]++
			in[int(e)/per] = true
		}
		for r, ok := range in {
			if ok {
				l.NumTokensPerRank[r]++
			}
		}
	}
	return nil
}

// SendPositions fills pos, [numTokens][ranks], with each token's row index
// inside the block this rank sends to rank r (tokens keep their order), or
// -1 where the token does not go to r. It is the sender's half of DeepEP's
// send_head: the same index tells combine where the token's row comes
// back.
func SendPositions(pos []int32, isTokenInRank []bool, numTokens, ranks int) {
	var next [maxRanksOnStack]int32
	var cnt []int32
	if ranks <= maxRanksOnStack {
		cnt = next[:ranks]
	} else {
		cnt = make([]int32, ranks)
	}
	for t := range numTokens {
		for r := range ranks {
			i := t*ranks + r
			if isTokenInRank[i] {
				pos[i] = cnt[r]
				cnt[r]++
			} else {
				pos[i] = -1
			}
		}
	}
}

const maxRanksOnStack = 64

// CountMatrix is the [ranks][ranks] matrix of rows in flight:
// C[s*ranks+r] is how many tokens rank s sends to rank r
// (Layout.NumTokensPerRank of rank s). Every rank knows the whole matrix
// after the count exchange.
type CountMatrix struct {
	Ranks int
	C     []int
}

// At is C[s][r]: rows from rank s to rank r.
func (m CountMatrix) At(s, r int) int { return m.C[s*m.Ranks+r] }

// RecvOffset is where rank s's rows start in rank r's receive buffer, in
// rows: the rows of lower ranks come first (DeepEP's rank_prefix_matrix,
// exclusive: sum over s' < s of C[s'][r]).
func (m CountMatrix) RecvOffset(s, r int) int {
	off := 0
	for q := range s {
		off += m.At(q, r)
	}
	return off
}

// RecvTotal is the number of rows rank r receives: sum over s of C[s][r].
func (m CountMatrix) RecvTotal(r int) int { return m.RecvOffset(m.Ranks, r) }

// CombineOffset is where rank r's returned rows start in rank s's combine
// buffer, in rows: sum over r' < r of C[s][r']. Rank s gets back exactly
// the rows it sent, grouped by the rank that held them.
func (m CountMatrix) CombineOffset(s, r int) int {
	off := 0
	for q := range r {
		off += m.At(s, q)
	}
	return off
}

// Run is a run of consecutive tokens that all go to one rank: tokens
// [Token, Token+N) land at rows [Pos, Pos+N) of that rank's block, so one
// put carries them all.
type Run struct {
	Token, Pos, N int
}

// Runs appends to runs the runs of tokens going to rank r, in token order,
// and returns it. With perRow every run is one token long (one put per
// row, as a GPU kernel would issue them). isTokenInRank is
// [numTokens][ranks].
func Runs(runs []Run, isTokenInRank []bool, numTokens, ranks, r int, perRow bool) []Run {
	pos := 0
	for t := 0; t < numTokens; {
		if !isTokenInRank[t*ranks+r] {
			t++
			continue
		}
		n := 1
		for !perRow && t+n < numTokens && isTokenInRank[(t+n)*ranks+r] {
			n++
		}
		runs = append(runs, Run{Token: t, Pos: pos, N: n})
		t, pos = t+n, pos+n
	}
	return runs
}

// ExpertGroups lists, for each local expert, the received rows that chose
// it, with the weight and top-k slot: a CSR matrix by expert, which is
// what a grouped GEMM over the received rows iterates (DeepEP leaves this
// permutation to the caller; num_recv_tokens_per_expert_list is its row
// counts).
type ExpertGroups struct {
	// Offsets is [numLocal+1]: expert e's entries are
	// [Offsets[e], Offsets[e+1]).
	Offsets []int
	// Rows is the received row index of each entry.
	Rows []int32
	// Weights is the routing weight of each entry.
	Weights []float32
}

// Count is the number of rows that chose local expert e.
func (g *ExpertGroups) Count(e int) int { return g.Offsets[e+1] - g.Offsets[e] }

// GroupByExpert builds the ExpertGroups of received rows from recvTopkIdx
// and recvTopkWeights, both [numRecv][topk] with local expert indices (-1:
// not on this rank), for numLocal local experts. It reuses g's slices.
func GroupByExpert(g *ExpertGroups, recvTopkIdx []int32, recvTopkWeights []float32, topk, numLocal int) {
	g.Offsets = zeroed(g.Offsets, numLocal+1)
	for _, e := range recvTopkIdx {
		if e >= 0 {
			g.Offsets[e+1]++
		}
	}
	for e := range numLocal {
		g.Offsets[e+1] += g.Offsets[e]
	}
	n := g.Offsets[numLocal]
	g.Rows = resize(g.Rows, n)
	g.Weights = resize(g.Weights, n)
	var fillBuf [256]int
	var fill []int
	if numLocal <= len(fillBuf) {
		fill = fillBuf[:numLocal]
	} else {
		fill = make([]int, numLocal)
	}
	copy(fill, g.Offsets[:numLocal])
	for i, e := range recvTopkIdx {
		if e < 0 {
			continue
		}
		j := fill[e]
		fill[e]++
		g.Rows[j] = int32(i / topk)
		g.Weights[j] = recvTopkWeights[i]
	}
}

// LLSlots computes the low-latency slots of a rank's routing: for each
// (token, k) with an expert, slot[t*topk+k] is the token's index among
// this rank's tokens for that expert (its row in the receiver's
// [localExpert][sourceRank][maxTokens] buffer), -1 for dropped slots; and
// count[e] is the number of this rank's tokens for expert e. Tokens keep
// their order per expert, as DeepEP's low-latency dispatch numbers them.
// count is [numExperts]; it is zeroed first.
func LLSlots(slot []int32, count []int, topkIdx []int32) {
	clear(count)
	for i, e := range topkIdx {
		if e < 0 {
			slot[i] = -1
			continue
		}
		slot[i] = int32(count[e])
		count[e]++
	}
}

// zeroed returns s resized to n with every element zero.
func zeroed[E any](s []E, n int) []E {
	s = resize(s, n)
	clear(s)
	return s
}

// resize returns s with length n, reusing its array when large enough.
func resize[E any](s []E, n int) []E {
	if cap(s) >= n {
		return s[:n]
	}
	return make([]E, n)
}

package moe

import (
	"context"
	"fmt"

	"github.com/rdmactor/rdmactor/gin"
	"github.com/rdmactor/rdmactor/internal/unsafeview"
)

// Combine is the reverse of the last Dispatch: each received row goes back
// to the rank it came from, and there the rows of each token are summed in
// float32 and rounded once to T:
//
//	out[t] = sum over ranks r that token t went to of y_r[t's row at r]
//
// y is [NumRecv][Hidden], the expert outputs for the rows of the last
// Recv, each already summed over the row's local experts with their
// weights (ExpertOutput): y[i] = sum over k with TopkIdx[i][k] >= 0 of
// TopkWeights[i][k] * expert_TopkIdx[i][k](X[i]). So out[t] is the sum of
// weight * expert output over token t's top-k, the local part of it summed
// where the experts are (DeepEP's normal-mode combine sums what the ranks
// return). y may be Recv.X itself, overwritten in place (no copy); else it
// is copied there first. out is [numTokens][Hidden] for the tokens of the
// last Dispatch; a token whose slots were all dropped gets zeros.
// Collective.
//
// Each rank puts the rows of each other source back in one put (they are
// contiguous at both ends: prefix sums over ranks give their place, see
// CountMatrix.CombineOffset), carrying VASignalAdd(combine word of this
// rank, rows); its own rows it sums straight from the receive buffer. A
// failure breaks the Handle.
func (h *Handle[T]) Combine(ctx context.Context, y []T, out []T) error {
	const name = "combine"
	ctx, cancel, err := h.begin(ctx, name, dispatched)
	if err != nil {
		return err
	}
	defer h.mu.Unlock()
	defer cancel()
	H := h.cfg.Hidden
	recv := &h.recvOut
	if len(y) != len(recv.X) || len(out) != h.numTokens*H {
		return fmt.Errorf("moe: %s: y has %d elements (want %d), out %d (want %d): %w",
			name, len(y), len(recv.X), len(out), h.numTokens*H, ErrBadArgument)
	}
	if !unsafeview.SameStart(y, recv.X) {
		copy(recv.X, y)
	}
	h.state = idle
	if err := h.returnRows(); err != nil {
		return h.fail(name, err)
	}
	if err := h.awaitReturned(ctx); err != nil {
		return h.fail(name, err)
	}
	h.reduce(out)
	if err := h.flush(ctx); err != nil {
		return h.fail(name, err)
	}
	return nil
}

// returnRows puts the rows received from each other rank s back to s, at
// s's combine offset for this rank. This rank's own rows stay where they
// are: reduce reads them from the receive buffer.
func (h *Handle[T]) returnRows() error {
	return h.spread(func(x *gin.Context, s int) error {
		k := h.counts.At(s, h.me)
		if k == 0 || s == h.me {
			return nil
		}
		src := h.lay.recvX + h.recvOut.RankOffsets[s]*h.rowB
		dst := h.counts.CombineOffset(s, h.me) * h.rowB
		return h.put(x, s, h.comb, dst, h.recv, src, k, gin.VASignalAdd(h.sig, h.lay.sigComb+h.me*line, uint64(k)))
	})
}

// awaitReturned waits until every other rank this rank sent rows to has
// returned them.
func (h *Handle[T]) awaitReturned(ctx context.Context) error {
	for i := 1; i < h.n; i++ {
		r := (h.me + h.n - i) % h.n
		k := h.counts.At(h.me, r)
		if k == 0 {
			continue
		}
		h.combX[r] += uint64(k)
		if err := h.wait(ctx, h.lay.sigComb+r*line, h.combX[r], fmt.Sprintf("%d rows back from rank %d", k, r)); err != nil {
			return err
		}
	}
	return nil
}

// reduce sums each token's returned rows into out ([numTokens][Hidden]).
func (h *Handle[T]) reduce(out []T) {
	H, n := h.cfg.Hidden, h.n
	comb := unsafeview.As[T](h.comb.Bytes()[:h.lay.combSize])
	h.blocks = resize(h.blocks, n)
	for r := range n {
		k := h.counts.At(h.me, r)
		if r == h.me {
			at := h.recvOut.RankOffsets[r] * H
			h.blocks[r] = h.recvOut.X[at : at+k*H]
		} else {
			at := h.counts.CombineOffset(h.me, r) * H
			h.blocks[r] = comb[at : at+k*H]
		}
	}
	h.split(h.numTokens, func(lo, hi int, acc []float32) {
		ReduceCombined(out[lo*H:hi*H], h.blocks, h.pos[lo*n:hi*n], acc, hi-lo, n, H)
	})
}

// ReduceCombined is the source side of a normal-mode combine: for each
// token t < numTokens, out[t] ([numTokens][hidden]) is the float32 sum,
// rounded once to T, of the rows blocks[r][pos[t][r]] over the ranks r
// with pos[t][r] >= 0; a token with none gets zeros. blocks[r] is
// [rows sent to r][hidden], the rows rank r returned in the order it got
// them; pos is [numTokens][ranks], as SendPositions fills it. acc is
// scratch of hidden float32s.
func ReduceCombined[T Elem](out []T, blocks [][]T, pos []int32, acc []float32, numTokens, ranks, hidden int) {
	var rowBuf [maxSumRows][]T
	var rows [][]T
	if ranks <= maxSumRows {
		rows = rowBuf[:0]
	}
	ones := onesOf(ranks)
	for t := range numTokens {
		rows = rows[:0]
		for r := range ranks {
			if p := int(pos[t*ranks+r]); p >= 0 {
				rows = append(rows, blocks[r][p*hidden:(p+1)*hidden])
			}
		}
		SumRows(out[t*hidden:(t+1)*hidden], rows, ones, acc)
	}
}

var ones [maxSumRows]float32

func init() {
	for i := range ones {
		ones[i] = 1
	}
}

// onesOf is n weights of 1.
func onesOf(n int) []float32 {
	if n <= len(ones) {
		return ones[:n]
	}
	w := make([]float32, n)
	for i := range w {
		w[i] = 1
	}
	return w
}

// ExpertOutput sets y, one row of Hidden, to the weighted sum over local
// experts that Combine expects for received row i of recv, computing each
// expert's output with expert(e, x, acc), which must set acc (Hidden
// float32s) to local expert e's output for row x. scratch holds 2*Hidden
// float32s. A helper for callers whose experts work row by row; grouped
// experts iterate Recv.Experts instead and sum with AXPY.
func ExpertOutput[T Elem](y []T, recv *Recv[T], i int, topk int, scratch []float32, expert func(e int, x []T, acc []float32)) {
	hidden := len(y)
	sum, acc := scratch[:hidden], scratch[hidden:2*hidden]
	clear(sum)
	x := recv.X[i*hidden : (i+1)*hidden]
	for k := range topk {
		e := recv.TopkIdx[i*topk+k]
		if e < 0 {
			continue
		}
		expert(int(e), x, acc)
		axpyF32(sum, recv.TopkWeights[i*topk+k], acc)
	}
	Store(y, sum)
}

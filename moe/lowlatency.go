package moe

import (
	"context"
	"encoding/binary"
	"fmt"

	"github.com/rdmactor/rdmactor/gin"
	"github.com/rdmactor/rdmactor/internal/unsafeview"
)

// RecvLL is what DispatchLL delivers to this rank: for each local expert
// and source rank, the rows that source sent to that expert, in fixed
// slots (DeepEP's low-latency packed_recv_x, packed_recv_count and
// packed_recv_src_info, without the packing across sources: rows stay in
// the slots they were put in).
//
// Everything in a RecvLL belongs to the Handle and is valid until the next
// DispatchLL; X is a view of the Handle's low-latency window.
type RecvLL[T Elem] struct {
	// X is [LocalExperts][ranks][MaxLLTokens][Hidden]: slot j of local
	// expert e from rank s holds a row for j < Count[e*ranks+s]; the other
	// slots hold stale data. Expert outputs may be written over the rows
	// in place and passed to CombineLL.
	X []T
	// Count is [LocalExperts][ranks]: rows per (local expert, source).
	Count []int
	// SrcIndex is [LocalExperts][ranks][MaxLLTokens]: each row's token
	// index at its source rank.
	SrcIndex []int32
	// TokensPerExpert is [LocalExperts]: rows per local expert, all
	// sources.
	TokensPerExpert []int

	ranks, maxTokens, hidden int
}

// Rows is the Count rows of local expert e from rank s,
// [Count(e, s)][Hidden], a view of X.
func (r *RecvLL[T]) Rows(e, s int) []T {
	at := (e*r.ranks + s) * r.maxTokens * r.hidden
	return r.X[at : at+r.Count[e*r.ranks+s]*r.hidden]
}

// Sources is SrcIndex of local expert e from rank s, [Count(e, s)].
func (r *RecvLL[T]) Sources(e, s int) []int32 {
	at := (e*r.ranks + s) * r.maxTokens
	return r.SrcIndex[at : at+r.Count[e*r.ranks+s]]
}

// DispatchLL is the low-latency dispatch for small batches (DeepEP's
// low_latency_dispatch): no count exchange first. Each (token, expert)
// pair is put straight into a fixed slot of the expert's rank,
// [localExpert][thisRank][j] with j the token's index among this rank's
// tokens for that expert (LLSlots); then, per expert, one small put of
// the list of (token, k) of its rows, carrying VASignalAdd(that expert's
// word, 1), from every rank to every expert whether it has rows or not.
// An expert's word thus counts rounds times ranks, and its rows are there
// once it reaches that. x is [numTokens][Hidden], topkIdx
// [numTokens][TopK]; numTokens <= MaxLLTokens. Collective.
//
// A token is put once per expert (not once per rank), as DeepEP's
// low-latency kernels do: more bytes than Dispatch for fewer steps.
// Buffers are reused without a count exchange because CombineLL ends with
// a signal from every rank to every rank: a rank in round k+1 has heard
// from everyone that they finished reading round k. Argument errors are
// returned before anything moves (and leave the other ranks waiting until
// their deadline: there is no count exchange to tell them); any later
// failure breaks the Handle.
func (h *Handle[T]) DispatchLL(ctx context.Context, x []T, topkIdx []int32) (*RecvLL[T], error) {
	const name = "low-latency dispatch"
	ctx, cancel, err := h.begin(ctx, name, idle)
	if err != nil {
		return nil, err
	}
	defer h.mu.Unlock()
	defer cancel()
	K, H, E := h.cfg.TopK, h.cfg.Hidden, h.cfg.NumExperts
	t := len(topkIdx) / K
	switch {
	case h.cfg.MaxLLTokens == 0:
		return nil, fmt.Errorf("moe: %s: the handle has no low-latency buffers (Config.MaxLLTokens): %w", name, ErrBadArgument)
	case len(topkIdx)%K != 0 || t > h.cfg.MaxLLTokens || len(x) != t*H:
		return nil, fmt.Errorf("moe: %s: %d expert ids, %d elements for top-%d, hidden %d, at most %d tokens: %w",
			name, len(topkIdx), len(x), K, H, h.cfg.MaxLLTokens, ErrBadArgument)
	}
	if err := CheckRouting(topkIdx, t, K, E); err != nil {
		return nil, fmt.Errorf("moe: %s: %w", name, err)
	}
	if in := h.Input(); !unsafeview.SameStart(x, in) {
		copy(in, x)
	}
	h.llTokens = t
	h.llTopk = append(h.llTopk[:0], topkIdx...)
	h.llSlot = resize(h.llSlot, len(topkIdx))
	h.llCount = resize(h.llCount, E)
	LLSlots(h.llSlot, h.llCount, topkIdx)
	for e, c := range h.llCount {
		if c > h.cfg.MaxLLTokens { // an expert twice in a token's top-k
			return nil, fmt.Errorf("moe: %s: %d slots for expert %d, room for %d (an expert repeated in a token's top-k?): %w",
				name, c, e, h.cfg.MaxLLTokens, ErrBadArgument)
		}
	}
	h.stageLL()
	h.llRnd++
	if err := h.sendLL(); err != nil {
		return nil, h.fail(name, err)
	}
	if err := h.awaitLL(ctx); err != nil {
		return nil, h.fail(name, err)
	}
	h.buildRecvLL()
	if err := h.flush(ctx); err != nil {
		return nil, h.fail(name, err)
	}
	h.state = dispatchedLL
	return &h.llOut, nil
}

// stageLL writes, for every expert, its block into the staging area: the
// count, then the entries t*K+k of this rank's tokens for it in slot order.
func (h *Handle[T]) stageLL() {
	in := h.in.Bytes()
	for e := range h.cfg.NumExperts {
		off := h.lay.llStage + e*h.lay.llBlock
		binary.LittleEndian.PutUint64(in[off:], uint64(h.llCount[e]))
	}
	for i, e := range h.llTopk {
		if e < 0 {
			continue
		}
		off := h.lay.llStage + int(e)*h.lay.llBlock + 8 + 4*int(h.llSlot[i])
		binary.LittleEndian.PutUint32(in[off:], uint32(i))
	}
}

// sendLL puts every (token, expert) row into its slot at the expert's
// rank, then each expert's block with its signal.
func (h *Handle[T]) sendLL() error {
	L, K, maxL := h.nl, h.cfg.TopK, h.cfg.MaxLLTokens
	in := h.in.Bytes()
	return h.spread(func(x *gin.Context, r int) error {
		for le := range L {
			e := r*L + le
			blk := h.lay.llStage + e*h.lay.llBlock
			cnt := h.llCount[e]
			slots := (le*h.n + h.me) * maxL
			for j := range cnt {
				t := int(binary.LittleEndian.Uint32(in[blk+8+4*j:])) / K
				dst := h.lay.llX + (slots+j)*h.rowB
				err := x.Put(h.team, r, h.ll, dst, h.in, h.lay.input+t*h.rowB, h.rowB, gin.None, gin.LocalNone, gin.Aggregate)
				if err != nil {
					return fmt.Errorf("put a row to expert %d at rank %d: %w", e, r, err)
				}
			}
			meta := h.lay.llMeta + (le*h.n+h.me)*h.lay.llBlock
			err := x.Put(h.team, r, h.ll, meta, h.in, blk, 8+4*cnt, gin.VASignalAdd(h.sig, h.lay.sigLL+le*line, 1), gin.LocalNone)
			if err != nil {
				return fmt.Errorf("put the rows of expert %d to rank %d: %w", e, r, err)
			}
		}
		return nil
	})
}

// awaitLL waits until every rank signalled every local expert this round.
func (h *Handle[T]) awaitLL(ctx context.Context) error {
	want := h.llRnd * uint64(h.n)
	for le := range h.nl {
		if err := h.wait(ctx, h.lay.sigLL+le*line, want, fmt.Sprintf("local expert %d", le)); err != nil {
			return err
		}
	}
	return nil
}

// buildRecvLL fills h.llOut from the blocks of this round.
func (h *Handle[T]) buildRecvLL() {
	L, n, maxL, H, K := h.nl, h.n, h.cfg.MaxLLTokens, h.cfg.Hidden, h.cfg.TopK
	out := &h.llOut
	out.ranks, out.maxTokens, out.hidden = n, maxL, H
	out.X = unsafeview.As[T](h.ll.Bytes()[h.lay.llX:h.lay.llMeta])[: L*n*maxL*H : L*n*maxL*H]
	out.Count = resize(out.Count, L*n)
	out.SrcIndex = resize(out.SrcIndex, L*n*maxL)
	out.TokensPerExpert = zeroed(out.TokensPerExpert, L)
	b := h.ll.Bytes()
	for le := range L {
		for s := range n {
			off := h.lay.llMeta + (le*n+s)*h.lay.llBlock
			c := int(binary.LittleEndian.Uint64(b[off:]))
			out.Count[le*n+s] = c
			out.TokensPerExpert[le] += c
			src := out.SrcIndex[(le*n+s)*maxL:]
			for j := range c {
				src[j] = int32(binary.LittleEndian.Uint32(b[off+8+4*j:])) / int32(K)
			}
		}
	}
}

// CombineLL is the low-latency combine (DeepEP's low_latency_combine):
// each expert output row goes back to its source rank into the fixed slot
// of its (token, k), [token][k], and the source sums, in float32,
//
//	out[t] = sum over k with topkIdx[t][k] >= 0 of topkWeights[t][k] * row[t][k]
//
// rounded once to T. y is [LocalExperts][ranks][MaxLLTokens][Hidden], the
// expert outputs in the slots of the last RecvLL (unweighted: the source
// applies the weights); it may be RecvLL.X itself, overwritten in place
// (no copy); else its valid rows are copied there first. topkWeights is
// [numTokens][TopK] for the tokens of the last DispatchLL (whose topkIdx
// the Handle kept); out is [numTokens][Hidden]. After its rows, each rank
// signals every rank once (VASignalAdd(low-latency combine word of this
// rank, 1)), rows or not: these words count rounds. Collective; a failure
// breaks the Handle.
func (h *Handle[T]) CombineLL(ctx context.Context, y []T, topkWeights []float32, out []T) error {
	const name = "low-latency combine"
	ctx, cancel, err := h.begin(ctx, name, dispatchedLL)
	if err != nil {
		return err
	}
	defer h.mu.Unlock()
	defer cancel()
	H, K := h.cfg.Hidden, h.cfg.TopK
	rl := &h.llOut
	if len(y) != len(rl.X) || len(topkWeights) != h.llTokens*K || len(out) != h.llTokens*H {
		return fmt.Errorf("moe: %s: y %d elements (want %d), %d weights (want %d), out %d (want %d): %w",
			name, len(y), len(rl.X), len(topkWeights), h.llTokens*K, len(out), h.llTokens*H, ErrBadArgument)
	}
	if !unsafeview.SameStart(y, rl.X) {
		for le := range h.nl {
			for s := range h.n {
				at := (le*h.n + s) * h.cfg.MaxLLTokens * H
				n := rl.Count[le*h.n+s] * H
				copy(rl.X[at:at+n], y[at:at+n])
			}
		}
	}
	h.state = idle
	if err := h.returnLL(); err != nil {
		return h.fail(name, err)
	}
	for i := 1; i < h.n; i++ {
		r := (h.me + h.n - i) % h.n
		if err := h.wait(ctx, h.lay.sigLLComb+r*line, h.llRnd, fmt.Sprintf("low-latency rows back from rank %d", r)); err != nil {
			return h.fail(name, err)
		}
	}
	comb := unsafeview.As[T](h.ll.Bytes()[h.lay.llComb:h.lay.llSize])
	row := h.llRow(comb)
	h.split(h.llTokens, func(lo, hi int, acc []float32) {
		ReduceLL(out[lo*H:hi*H], func(t, k int) []T { return row(lo+t, k) },
			h.llTopk[lo*K:hi*K], topkWeights[lo*K:hi*K], acc, hi-lo, K, H)
	})
	if err := h.flush(ctx); err != nil {
		return h.fail(name, err)
	}
	return nil
}

// returnLL puts each row received from another rank back to its
// source's [t][k] slot, then signals every other rank. Rows of this
// rank's own tokens stay in their slots: llRow reads them there.
func (h *Handle[T]) returnLL() error {
	L, n, maxL := h.nl, h.n, h.cfg.MaxLLTokens
	b := h.ll.Bytes()
	return h.spread(func(x *gin.Context, s int) error {
		if s == h.me {
			return nil
		}
		for le := range L {
			c := h.llOut.Count[le*n+s]
			meta := h.lay.llMeta + (le*n+s)*h.lay.llBlock + 8
			for j := range c {
				v := int(binary.LittleEndian.Uint32(b[meta+4*j:])) // t*K+k at s
				src := h.lay.llX + ((le*n+s)*maxL+j)*h.rowB
				err := x.Put(h.team, s, h.ll, h.lay.llComb+v*h.rowB, h.ll, src, h.rowB, gin.None, gin.LocalNone, gin.Aggregate)
				if err != nil {
					return fmt.Errorf("put a row back to rank %d: %w", s, err)
				}
			}
		}
		if err := x.Signal(h.team, s, gin.VASignalAdd(h.sig, h.lay.sigLLComb+h.me*line, 1)); err != nil {
			return fmt.Errorf("signal rank %d: %w", s, err)
		}
		return nil
	})
}

// llRow returns the row accessor of ReduceLL for this round: the [t][k]
// slot of comb for experts on other ranks, the expert's own slot for
// experts on this rank.
func (h *Handle[T]) llRow(comb []T) func(t, k int) []T {
	H, K, L, n, maxL := h.cfg.Hidden, h.cfg.TopK, h.nl, h.n, h.cfg.MaxLLTokens
	x := h.llOut.X
	return func(t, k int) []T {
		i := t*K + k
		if e := int(h.llTopk[i]); e/L == h.me {
			at := (((e%L)*n+h.me)*maxL + int(h.llSlot[i])) * H
			return x[at : at+H]
		}
		return comb[i*H : (i+1)*H]
	}
}

// ReduceLL is the source side of a low-latency combine: for each token
// t < numTokens, out[t] ([numTokens][hidden]) is the float32 sum, rounded
// once to T, of topkWeights[t][k] * row(t, k) over the k with
// topkIdx[t][k] >= 0; zeros for a token with none. row(t, k) is the
// expert output of token t's slot k, hidden elements (the [t][k] slot the
// expert's rank put it in). acc is scratch of hidden float32s.
func ReduceLL[T Elem](out []T, row func(t, k int) []T, topkIdx []int32, topkWeights []float32, acc []float32, numTokens, topk, hidden int) {
	var rowBuf [maxSumRows][]T
	var wBuf [maxSumRows]float32
	var rows [][]T
	var w []float32
	if topk <= maxSumRows {
		rows, w = rowBuf[:0], wBuf[:0]
	}
	for t := range numTokens {
		rows, w = rows[:0], w[:0]
		for k := range topk {
			if topkIdx[t*topk+k] >= 0 {
				rows = append(rows, row(t, k))
				w = append(w, topkWeights[t*topk+k])
			}
		}
		SumRows(out[t*hidden:(t+1)*hidden], rows, w, acc)
	}
}

package moe

import (
	"context"
	"encoding/binary"
	"fmt"

	"github.com/rdmactor/rdmactor/gin"
	"github.com/rdmactor/rdmactor/internal/unsafeview"
)

// Recv is what Dispatch delivers to this rank: the rows sent to it,
// grouped by source rank (rank 0's first), each source's rows in its token
// order, with their routing restricted to this rank's experts (DeepEP's
// recv_x, recv_topk_idx, recv_topk_weights, recv_src_idx and
// num_recv_tokens_per_expert_list).
//
// Everything in a Recv belongs to the Handle and is valid until the next
// Dispatch; X is a view of the Handle's receive window.
type Recv[T Elem] struct {
	// X is [NumRecv][Hidden]: the received rows. The expert outputs may be
	// written over it in place and passed to Combine as they are.
	X []T
	// NumRecv is the number of rows received.
	NumRecv int
	// RankOffsets is [ranks+1]: rows from rank s are
	// [RankOffsets[s], RankOffsets[s+1]).
	RankOffsets []int
	// SrcIndex is [NumRecv]: each row's token index at its source rank.
	SrcIndex []int32
	// TopkIdx is [NumRecv][TopK]: the row's experts as local indices
	// (0..LocalExperts-1), -1 where the expert is not on this rank or the
	// slot was dropped.
	TopkIdx []int32
	// TopkWeights is [NumRecv][TopK]: the routing weights, 0 where TopkIdx
	// is -1.
	TopkWeights []float32
	// TokensPerExpert is [LocalExperts]: how many rows chose each local
	// expert.
	TokensPerExpert []int
	// Experts groups the rows by local expert (GroupByExpert).
	Experts ExpertGroups
	// Counts is the exchanged count matrix: Counts.At(s, r) rows went from
	// rank s to rank r in this round.
	Counts CountMatrix
}

// Dispatch sends each of this rank's tokens to the ranks that hold its
// experts, once per rank (not once per expert), and returns the rows this
// rank received. x is [numTokens][Hidden], topkIdx [numTokens][TopK]
// expert ids (-1: dropped), topkWeights [numTokens][TopK];
// numTokens <= MaxTokens, and may differ between ranks and rounds.
// Collective.
//
// It runs in two phases. Counts: each rank puts to every rank one block
// with its NumTokensPerRank and the routing of the rows it will send there,
// with VASignalAdd(count word of the sender, 1); the count words so count
// rounds. Rows: once every rank's counts are here, each rank knows every
// block's offset in every receiver's window (prefix sums over lower
// ranks) and puts its rows there straight from Input(), runs of
// consecutive tokens as one put, the last put to each rank carrying
// VASignalAdd(data word of the sender, rows sent); the data words so count
// rows. A rank's counts of round k+1 also tell its peers it is done with
// the rows of round k: nobody writes into a receive buffer before its
// owner has moved on.
//
// A rank's bad arguments (ErrBadArgument) fail the call on every rank
// alike, after the counts and before any row moves; the Handle stays
// usable. A failure after that (a deadline, a lost peer) breaks it
// (ErrBroken afterwards).
func (h *Handle[T]) Dispatch(ctx context.Context, x []T, topkIdx []int32, topkWeights []float32) (*Recv[T], error) {
	const name = "dispatch"
	ctx, cancel, err := h.begin(ctx, name, idle)
	if err != nil {
		return nil, err
	}
	defer h.mu.Unlock()
	defer cancel()
	local := h.checkDispatch(x, topkIdx, topkWeights)
	if local == nil {
		h.numTokens = len(topkIdx) / h.cfg.TopK
		local = h.layout.Compute(topkIdx, h.numTokens, h.cfg.TopK, h.cfg.NumExperts, h.n)
	}
	if local == nil {
		if in := h.Input(); !unsafeview.SameStart(x, in) {
			copy(in, x)
		}
		h.pos = resize(h.pos, h.numTokens*h.n)
		SendPositions(h.pos, h.layout.IsTokenInRank, h.numTokens, h.n)
	}
	parity := int(h.rounds & 1)
	h.rounds++
	if err := h.sendCounts(ctx, parity, topkIdx, topkWeights, local != nil); err != nil {
		return nil, h.fail(name, err)
	}
	bad, err := h.readCounts(ctx, parity)
	if err != nil {
		return nil, h.fail(name, err)
	}
	if local != nil || bad >= 0 {
		// Nothing but counts moved and every rank agrees: the Handle
		// stays usable once the count puts are complete.
		if err := h.flush(ctx); err != nil {
			return nil, h.fail(name, err)
		}
		if local == nil {
			local = fmt.Errorf("rank %d has bad arguments: %w", bad, ErrBadArgument)
		}
		return nil, fmt.Errorf("moe: %s: %w", name, local)
	}
	if err := h.sendRows(); err != nil {
		return nil, h.fail(name, err)
	}
	if err := h.awaitRows(ctx); err != nil {
		return nil, h.fail(name, err)
	}
	h.buildRecv(parity)
	if err := h.flush(ctx); err != nil {
		return nil, h.fail(name, err)
	}
	h.state = dispatched
	return &h.recvOut, nil
}

// checkDispatch checks the shapes of Dispatch's arguments.
func (h *Handle[T]) checkDispatch(x []T, topkIdx []int32, topkWeights []float32) error {
	K, H := h.cfg.TopK, h.cfg.Hidden
	if len(topkIdx)%K != 0 || len(topkWeights) != len(topkIdx) {
		return fmt.Errorf("%d expert ids and %d weights for top-%d: %w", len(topkIdx), len(topkWeights), K, ErrBadArgument)
	}
	t := len(topkIdx) / K
	if t > h.cfg.MaxTokens {
		return fmt.Errorf("%d tokens, the handle holds %d (Config.MaxTokens): %w", t, h.cfg.MaxTokens, ErrBadArgument)
	}
	if len(x) != t*H {
		return fmt.Errorf("x has %d elements, want %d tokens x %d: %w", len(x), t, H, ErrBadArgument)
	}
	return nil
}

// entryWords is the size of a normal block's routing entry in uint32 words.
func (h *Handle[T]) entryWords() int { return EntryWords(h.cfg.TopK) }

// sendCounts builds, for every rank r, the block of this round in the
// staging area (this rank's counts, then the routing of each row going to
// r, restricted to r's experts) and puts it into r's meta region of this
// parity, signalling the count word of this rank at r. A bad caller sends
// counts of -1.
func (h *Handle[T]) sendCounts(ctx context.Context, parity int, topkIdx []int32, topkWeights []float32, bad bool) error {
	K, L, ew := h.cfg.TopK, h.nl, h.entryWords()
	hdr := align(8 * h.n)
	return h.spread(func(x *gin.Context, r int) error {
		off := h.lay.stage + r*h.lay.block
		blk := h.in.Bytes()[off : off+h.lay.block]
		rows := 0
		for q := range h.n {
			v := int64(-1)
			if !bad {
				v = int64(h.layout.NumTokensPerRank[q])
			}
			binary.LittleEndian.PutUint64(blk[8*q:], uint64(v))
		}
		if !bad {
			rows = h.layout.NumTokensPerRank[r]
			ent := unsafeview.As[uint32](blk[hdr : hdr+4*ew*rows])
			i := 0
			for t := range h.numTokens {
				if !h.layout.IsTokenInRank[t*h.n+r] {
					continue
				}
				PutEntry(ent[i*ew:(i+1)*ew], t, topkIdx[t*K:(t+1)*K], topkWeights[t*K:(t+1)*K], L, r)
				i++
			}
		}
		dst := h.lay.meta + (parity*h.n+h.me)*h.lay.block
		err := x.Put(h.team, r, h.recv, dst, h.in, off, hdr+4*ew*rows,
			gin.VASignalAdd(h.sig, h.lay.sigCnt+h.me*line, 1), gin.LocalNone)
		if err != nil {
			return fmt.Errorf("put counts to rank %d: %w", r, err)
		}
		return nil
	})
}

// readCounts waits for every rank's block of this round and fills
// h.counts; it returns the lowest rank that sent counts of -1, or -1.
func (h *Handle[T]) readCounts(ctx context.Context, parity int) (int, error) {
	h.counts.Ranks = h.n
	h.counts.C = resize(h.counts.C, h.n*h.n)
	bad := -1
	for i := range h.n {
		s := (h.me + h.n - i) % h.n // left neighbours first: they wrote first
		if err := h.wait(ctx, h.lay.sigCnt+s*line, h.rounds, fmt.Sprintf("counts of rank %d", s)); err != nil {
			return -1, err
		}
	}
	meta := h.recv.Bytes()
	for s := range h.n {
		off := h.lay.meta + (parity*h.n+s)*h.lay.block
		for r := range h.n {
			v := int64(binary.LittleEndian.Uint64(meta[off+8*r:]))
			if v < 0 {
				if bad < 0 {
					bad = s
				}
				v = 0
			}
			h.counts.C[s*h.n+r] = int(v)
		}
	}
	return bad, nil
}

// sendRows puts this rank's rows: to each rank r, the tokens that go there,
// at r's offset for this rank, in runs, the last put carrying
// VASignalAdd(data word of this rank, rows).
func (h *Handle[T]) sendRows() error {
	return h.spread(func(x *gin.Context, r int) error {
		rows := h.counts.At(h.me, r)
		if rows == 0 {
			return nil
		}
		base := h.lay.recvX + h.counts.RecvOffset(h.me, r)*h.rowB
		var runs []Run
		if len(h.xs) == 1 {
			runs = Runs(h.runs[:0], h.layout.IsTokenInRank, h.numTokens, h.n, r, h.cfg.PerRow)
			h.runs = runs
		} else {
			runs = Runs(nil, h.layout.IsTokenInRank, h.numTokens, h.n, r, h.cfg.PerRow)
		}
		sig := gin.VASignalAdd(h.sig, h.lay.sigData+h.me*line, uint64(rows))
		for i, run := range runs {
			act := gin.None
			if i == len(runs)-1 {
				act = sig
			}
			if err := h.put(x, r, h.recv, base+run.Pos*h.rowB, h.in, h.lay.input+run.Token*h.rowB, run.N, act); err != nil {
				return err
			}
		}
		return nil
	})
}

// awaitRows waits until every rank's rows for this rank are here.
func (h *Handle[T]) awaitRows(ctx context.Context) error {
	for i := range h.n {
		s := (h.me + h.n - i) % h.n
		k := h.counts.At(s, h.me)
		if k == 0 {
			continue
		}
		h.dataX[s] += uint64(k)
		if err := h.wait(ctx, h.lay.sigData+s*line, h.dataX[s], fmt.Sprintf("%d rows from rank %d", k, s)); err != nil {
			return err
		}
	}
	return nil
}

// buildRecv fills h.recvOut from the counts and the blocks of this round.
func (h *Handle[T]) buildRecv(parity int) {
	K, ew, H := h.cfg.TopK, h.entryWords(), h.cfg.Hidden
	out := &h.recvOut
	total := h.counts.RecvTotal(h.me)
	out.NumRecv = total
	out.X = unsafeview.As[T](h.rowBytes(h.recv, h.lay.recvX, 0, total))[: total*H : total*H]
	out.Counts = h.counts
	out.RankOffsets = resize(out.RankOffsets, h.n+1)
	out.SrcIndex = resize(out.SrcIndex, total)
	out.TopkIdx = resize(out.TopkIdx, total*K)
	out.TopkWeights = resize(out.TopkWeights, total*K)
	out.TokensPerExpert = zeroed(out.TokensPerExpert, h.nl)
	hdr := align(8 * h.n)
	row := 0
	for s := range h.n {
		out.RankOffsets[s] = row
		k := h.counts.At(s, h.me)
		off := h.lay.meta + (parity*h.n+s)*h.lay.block + hdr
		ent := unsafeview.As[uint32](h.recv.Bytes()[off : off+4*ew*k])
		for j := range k {
			out.SrcIndex[row] = ReadEntry(ent[j*ew:(j+1)*ew], out.TopkIdx[row*K:(row+1)*K], out.TopkWeights[row*K:(row+1)*K], out.TokensPerExpert)
			row++
		}
	}
	out.RankOffsets[h.n] = row
	GroupByExpert(&out.Experts, out.TopkIdx, out.TopkWeights, K, h.nl)
}

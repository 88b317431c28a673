// Package twosided is the baseline that package moe's dispatch and
// combine are measured against: the same data movement done the
// two-sided way, with collective.AllToAllV (MPI_Alltoallv's model: the
// sender packs what goes to each rank contiguously, the counts travel
// first, then one bulk exchange), as MoE layers do over NCCL's all-to-all
// or MPI.
//
// A Handle takes the same moe.Config and inputs and returns the same
// moe.Recv, so one expert loop serves both, and results are checked to be
// equal. Per round:
//
//   - Dispatch: moe.GetDispatchLayout; pack the rows (in runs of
//     consecutive tokens, as moe puts them) and their routing into send
//     buffers grouped by destination; AllToAllV of the rows; AllToAllV of
//     the routing (uint32 entries, the layout of moe's count blocks).
//   - Combine: AllToAllV of the expert outputs back (they are already
//     grouped by source); moe.ReduceCombined at the source.
//
// What moe saves: the pack (one copy of every row that leaves the rank),
// one round of count exchange (moe sends the routing with its counts), and
// in combine the copy of the rank's own block (moe sums it where it is;
// AllToAllV has no displacements, so the block in the middle of the
// source buffer cannot be left out of the exchange).
package twosided

import (
	"context"
	"fmt"

	"github.com/rdmactor/rdmactor/collective"
	"github.com/rdmactor/rdmactor/gin"
	"github.com/rdmactor/rdmactor/moe"
)

// Handle is one rank's two-sided dispatch/combine over a collective.Comm,
// with buffers registered once. Build one per rank with New; calls are
// collective and alternate Dispatch, Combine as with moe.Handle.
type Handle[T moe.Elem] struct {
	c              *collective.Comm
	cfg            moe.Config
	n              int
	me             int
	nl             int
	ew             int // uint32 words per routing entry
	dt             collective.DataType
	send           *gin.Window // rows [n*MaxTokens][H] | routing [n*MaxTokens][ew]
	recv           *gin.Window // same layout
	comb           *gin.Window // rows [n*MaxTokens][H]
	rowsB, metaOff int

	layout     moe.Layout
	pos        []int32
	numTokens  int
	sendCounts []int
	recvCounts []int
	runs       []moe.Run
	out        moe.Recv[T]
	acc        []float32
	blocks     [][]T
	pending    bool
}

// New builds this rank's Handle over c, registering its three windows on
// c's gin.Comm. Collective. cfg.MaxTokens sizes the buffers;
// cfg.MaxLLTokens, Contexts, PerRow and Pacing are not used (the
// collective.Comm has its own context and pacing).
func New[T moe.Elem](ctx context.Context, c *collective.Comm, cfg moe.Config) (*Handle[T], error) {
	n := c.Size()
	if cfg.Hidden <= 0 || cfg.TopK <= 0 || cfg.NumExperts <= 0 || cfg.NumExperts%n != 0 || cfg.MaxTokens <= 0 {
		return nil, fmt.Errorf("twosided: config %+v: %w", cfg, moe.ErrBadArgument)
	}
	h := &Handle[T]{c: c, cfg: cfg, n: n, me: c.Rank(), nl: cfg.NumExperts / n, ew: moe.EntryWords(cfg.TopK),
		dt: collective.TypeOf[T](), sendCounts: make([]int, n), recvCounts: make([]int, n),
		acc: make([]float32, cfg.Hidden), blocks: make([][]T, n)}
	rows := n * cfg.MaxTokens
	h.rowsB = rows * cfg.Hidden * h.dt.Size()
	h.metaOff = (h.rowsB + 63) &^ 63
	size := h.metaOff + rows*h.ew*4
	g := c.Gin()
	var err error
	for _, w := range []struct {
		w    **gin.Window
		size int
	}{{&h.send, size}, {&h.recv, size}, {&h.comb, h.rowsB}} {
		if *w.w, err = g.RegisterWindow(ctx, w.size, 0); err != nil {
			return nil, fmt.Errorf("twosided: %w", err)
		}
	}
	return h, nil
}

// Close deregisters the Handle's windows. Collective.
func (h *Handle[T]) Close(ctx context.Context) error {
	for _, w := range []*gin.Window{h.send, h.recv, h.comb} {
		if err := w.Close(ctx); err != nil {
			return err
		}
	}
	return nil
}

// Dispatch is moe.Handle.Dispatch done two-sided (see the package doc).
// The returned Recv's Counts has only this rank's row and column filled.
// Valid until the next Dispatch.
func (h *Handle[T]) Dispatch(ctx context.Context, x []T, topkIdx []int32, topkWeights []float32) (*moe.Recv[T], error) {
	H, K, n := h.cfg.Hidden, h.cfg.TopK, h.n
	if h.pending {
		return nil, fmt.Errorf("twosided: dispatch before the last combine: %w", moe.ErrOrder)
	}
	t := len(topkIdx) / K
	if len(topkIdx)%K != 0 || len(topkWeights) != len(topkIdx) || t > h.cfg.MaxTokens || len(x) != t*H {
		return nil, fmt.Errorf("twosided: dispatch: %d tokens of %d elements, %d ids, %d weights: %w", t, len(x), len(topkIdx), len(topkWeights), moe.ErrBadArgument)
	}
	if err := h.layout.Compute(topkIdx, t, K, h.cfg.NumExperts, n); err != nil {
		return nil, fmt.Errorf("twosided: %w", err)
	}
	h.numTokens = t
	h.pos = resizeInt32(h.pos, t*n)
	moe.SendPositions(h.pos, h.layout.IsTokenInRank, t, n)
	if err := h.pack(x, topkIdx, topkWeights); err != nil {
		return nil, err
	}
	rows := n * h.cfg.MaxTokens
	for r := range n {
		h.sendCounts[r] = h.layout.NumTokensPerRank[r] * H
	}
	if err := h.c.AllToAllV(ctx, collective.At(h.recv, 0), rows*H, collective.At(h.send, 0), h.sendCounts, h.recvCounts, h.dt); err != nil {
		return nil, fmt.Errorf("twosided: rows: %w", err)
	}
	for r := range n {
		h.sendCounts[r] = h.layout.NumTokensPerRank[r] * h.ew
	}
	if err := h.c.AllToAllV(ctx, collective.At(h.recv, h.metaOff), rows*h.ew, collective.At(h.send, h.metaOff), h.sendCounts, h.recvCounts, collective.Uint32); err != nil {
		return nil, fmt.Errorf("twosided: routing: %w", err)
	}
	if err := h.build(); err != nil {
		return nil, err
	}
	h.pending = true
	return &h.out, nil
}

// pack copies the rows going to each rank, in token order, to that rank's
// block of the send buffer, and their routing (restricted to that rank's
// experts) to its block of the routing buffer.
func (h *Handle[T]) pack(x []T, topkIdx []int32, topkWeights []float32) error {
	H, K, n, L, ew := h.cfg.Hidden, h.cfg.TopK, h.n, h.nl, h.ew
	send, err := collective.Elements[T](h.send, 0, n*h.cfg.MaxTokens*H)
	if err != nil {
		return err
	}
	meta, err := collective.Elements[uint32](h.send, h.metaOff, n*h.cfg.MaxTokens*ew)
	if err != nil {
		return err
	}
	at := 0 // rows before rank r's block
	for r := range n {
		h.runs = moe.Runs(h.runs[:0], h.layout.IsTokenInRank, h.numTokens, n, r, false)
		for _, run := range h.runs {
			copy(send[(at+run.Pos)*H:(at+run.Pos+run.N)*H], x[run.Token*H:(run.Token+run.N)*H])
			for i := range run.N {
				t := run.Token + i
				moe.PutEntry(meta[(at+run.Pos+i)*ew:(at+run.Pos+i+1)*ew], t, topkIdx[t*K:(t+1)*K], topkWeights[t*K:(t+1)*K], L, r)
			}
		}
		at += h.layout.NumTokensPerRank[r]
	}
	return nil
}

// build fills h.out from the received rows and routing.
func (h *Handle[T]) build() error {
	H, K, n, ew := h.cfg.Hidden, h.cfg.TopK, h.n, h.ew
	out := &h.out
	total := 0
	out.RankOffsets = resizeInt(out.RankOffsets, n+1)
	out.Counts = moe.CountMatrix{Ranks: n, C: resizeInt(out.Counts.C, n*n)}
	clear(out.Counts.C)
	for s := range n {
		out.RankOffsets[s] = total
		k := h.recvCounts[s] / ew
		out.Counts.C[s*n+h.me] = k
		out.Counts.C[h.me*n+s] = h.layout.NumTokensPerRank[s]
		total += k
	}
	out.RankOffsets[n] = total
	out.NumRecv = total
	var err error
	if out.X, err = collective.Elements[T](h.recv, 0, total*H); err != nil {
		return err
	}
	meta, err := collective.Elements[uint32](h.recv, h.metaOff, total*ew)
	if err != nil {
		return err
	}
	out.SrcIndex = resizeInt32(out.SrcIndex, total)
	out.TopkIdx = resizeInt32(out.TopkIdx, total*K)
	out.TopkWeights = resizeF32(out.TopkWeights, total*K)
	out.TokensPerExpert = resizeInt(out.TokensPerExpert, h.nl)
	clear(out.TokensPerExpert)
	for i := range total {
		out.SrcIndex[i] = moe.ReadEntry(meta[i*ew:(i+1)*ew], out.TopkIdx[i*K:(i+1)*K], out.TopkWeights[i*K:(i+1)*K], out.TokensPerExpert)
	}
	moe.GroupByExpert(&out.Experts, out.TopkIdx, out.TopkWeights, K, h.nl)
	return nil
}

// Combine is moe.Handle.Combine done two-sided: y ([NumRecv][Hidden], or
// Recv.X in place) goes back with one AllToAllV and each source sums its
// tokens' rows into out ([numTokens][Hidden]).
func (h *Handle[T]) Combine(ctx context.Context, y []T, out []T) error {
	H, n := h.cfg.Hidden, h.n
	if !h.pending {
		return fmt.Errorf("twosided: combine without dispatch: %w", moe.ErrOrder)
	}
	if len(y) != len(h.out.X) || len(out) != h.numTokens*H {
		return fmt.Errorf("twosided: combine: y %d, out %d elements: %w", len(y), len(out), moe.ErrBadArgument)
	}
	h.pending = false
	if len(y) > 0 && &y[0] != &h.out.X[0] {
		copy(h.out.X, y)
	}
	// The exchange carries this rank's own block too (collective copies
	// it locally): AllToAllV packs source blocks in rank order without
	// displacements, so the block in the middle cannot be left out
	// without repacking the others. (moe sums its own rows in place.)
	for s := range n {
		h.sendCounts[s] = h.out.Counts.At(s, h.me) * H
	}
	if err := h.c.AllToAllV(ctx, collective.At(h.comb, 0), n*h.cfg.MaxTokens*H, collective.At(h.recv, 0), h.sendCounts, h.recvCounts, h.dt); err != nil {
		return fmt.Errorf("twosided: combine: %w", err)
	}
	comb, err := collective.Elements[T](h.comb, 0, n*h.cfg.MaxTokens*H)
	if err != nil {
		return err
	}
	at := 0
	for r := range n {
		k := h.layout.NumTokensPerRank[r] * H
		h.blocks[r] = comb[at : at+k]
		at += k
	}
	moe.ReduceCombined(out, h.blocks, h.pos, h.acc, h.numTokens, n, H)
	return nil
}

func resizeInt(s []int, n int) []int {
	if cap(s) >= n {
		return s[:n]
	}
	return make([]int, n)
}

func resizeInt32(s []int32, n int) []int32 {
	if cap(s) >= n {
		return s[:n]
	}
	return make([]int32, n)
}

func resizeF32(s []float32, n int) []float32 {
	if cap(s) >= n {
		return s[:n]
	}
	return make([]float32, n)
}

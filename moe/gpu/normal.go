package gpumoe

import (
	"encoding/binary"
	"fmt"
	"math"

	"github.com/rdmactor/rdmactor/moe"
	"github.com/rdmactor/rdmactor/transport/gpu/cuda"
)

// Recv is what Dispatch delivers to this rank, in device memory: the rows
// sent to it grouped by source rank (rank 0's first), each source's rows in
// its token order, with their routing restricted to this rank's experts —
// the layout of package moe's Recv (DeepEP's recv_x, recv_topk_idx,
// recv_topk_weights, recv_src_idx), which Read copies to the host. The
// number of rows is known on the device only (no host round trip); the
// buffers hold up to Size*MaxTokens rows.
//
// Valid until the next Dispatch.
type Recv struct {
	h     *Handle
	round uint64
	// X is [Size*MaxTokens] rows of Hidden bf16, RowStride bytes apart;
	// expert outputs are written over them in place and Combine sends
	// them back.
	X cuda.DevicePtr
	// Entries is [Size*MaxTokens][EntryWords] uint32, one per row: source
	// token index, TopK local expert ids (-1: not on this rank), TopK
	// float32 weights (0 there), zero padding.
	Entries cuda.DevicePtr
	// EntryWords is the size of an entry in uint32 words.
	EntryWords int
	// TokensPerExpert is [LocalExperts] int32: rows per local expert.
	TokensPerExpert cuda.DevicePtr
}

// Dispatch queues the normal-mode dispatch of numTokens tokens (at most
// MaxTokens; may differ between ranks and rounds): x is [numTokens][Hidden]
// contiguous bf16 in device memory, read in place by the dispatch kernel
// (keep it until Sync), or Input (or 0: the rows are already there, every
// RowStride bytes); topkIdx is [numTokens][TopK]
// int32 expert ids (-1: dropped) and topkWeights [numTokens][TopK] float32,
// both device memory, read by the kernels (keep them until Sync).
// Collective.
//
// One kernel, moe_dispatch: its blocks first compute the layout (the
// token -> rank masks and counts, a warp per 32 tokens) and the last of
// them puts this rank's count header to every rank, signalling cnt[me]
// (with Trace, a kernel of its own, moe_layout, does); every block waits
// for every rank's header, counts the send positions of its token range,
// then streams that range to one destination (most blocks to
// the other ranks over NVLink, a few copy this rank's own rows): each run
// of rows and its routing entries straight to their place at the receiver
// (prefix sums over lower ranks), with the whole block; once every block is
// done, data[me] is signalled once per destination. It returns when every
// rank's rows are here. Expert ids
// outside [-1, NumExperts) make the rank send counts of -1: every rank then
// moves no rows this round, Combine returns zeros, and Sync reports a
// *KernelError matching moe.ErrBadArgument; the Handle stays usable.
func (h *Handle) Dispatch(x, topkIdx, topkWeights cuda.DevicePtr, numTokens int) (*Recv, error) {
	const name = "dispatch"
	if err := h.begin(name, idle); err != nil {
		return nil, err
	}
	defer h.mu.Unlock()
	switch {
	case h.p.maxT == 0:
		return nil, fmt.Errorf("gpumoe: %s: the handle has no normal-mode buffers (Config.MaxTokens): %w", name, moe.ErrBadArgument)
	case numTokens < 0 || numTokens > h.p.maxT:
		return nil, fmt.Errorf("gpumoe: %s: %d tokens, the handle holds %d: %w", name, numTokens, h.p.maxT, moe.ErrBadArgument)
	case numTokens > 0 && (topkIdx == 0 || topkWeights == 0):
		return nil, fmt.Errorf("gpumoe: %s: null routing: %w", name, moe.ErrBadArgument)
	}
	h.round++
	fused := int32(1)
	if h.trace != nil { // the layout as a kernel of its own, the event after it
		if err := h.launch(kLayout, 1, h.p.layoutShared(), h.g.DevComm(), h.args, topkIdx, int32(numTokens), h.round); err != nil {
			return nil, err
		}
		if err := h.trace.Record(h.g.Stream()); err != nil {
			return nil, fmt.Errorf("gpumoe: %s: %w", name, err)
		}
		fused = 0
	}
	src, stride := h.source(x)
	if err := h.launchOverlappedBlocks(kDispatch, dispatchPerSM*h.blocks, dispatchThreads, h.p.countsShared(),
		h.g.DevComm(), h.args, src, stride, topkIdx, topkWeights, int32(numTokens), h.round, fused); err != nil {
		return nil, err
	}
	h.tokens = numTokens
	h.st = dispatched
	w := h.win.Ptr()
	h.recv = &Recv{h: h, round: h.round, X: w + cuda.DevicePtr(h.p.recvX), Entries: w + cuda.DevicePtr(h.p.recvMeta),
		EntryWords: h.p.ew, TokensPerExpert: h.state + cuda.DevicePtr(h.p.recvTokPerExpert)}
	return h.recv, nil
}

// Combine queues the normal-mode combine of the last Dispatch: each
// received row (Recv.X, overwritten in place by the expert outputs, each
// already the weighted sum over the row's local experts) is summed by its
// source, per token in float32, rounded once:
//
//	out[t] = bf16(sum over ranks r that token t went to of y_r[t's row at r])
//
// out is [numTokens][Hidden] contiguous bf16 device memory for the tokens of
// the last Dispatch; a token with every slot dropped gets zeros.
// Collective. Each rank signals comb[me] to every other rank (its outputs
// are ready) and waits for theirs; then the sources pull the rows from
// where they are (other ranks' Recv.X through the LSA mapping), so the
// rows cross NVLink once and are not staged.
func (h *Handle) Combine(out cuda.DevicePtr) error {
	const name = "combine"
	if err := h.begin(name, dispatched); err != nil {
		return err
	}
	defer h.mu.Unlock()
	if out == 0 && h.tokens > 0 {
		return fmt.Errorf("gpumoe: %s: null output: %w", name, moe.ErrBadArgument)
	}
	h.st = idle
	return h.launchOverlappedBlocks(kCombine, combinePerSM*h.blocks, combineThreads, h.p.combineShared(), h.g.DevComm(),
		h.args, int32(h.tokens), h.round, out)
}

// Expert is a stand-in for the experts' grouped GEMM in tests and
// examples: expert e multiplies its input by a constant.
type Expert int32

const (
	// Identity experts return their input.
	Identity Expert = 0
	// Scaled experts multiply by 1 + e%4 (examples/moe's "scaled"), so a
	// row at the wrong expert shows.
	Scaled Expert = 1
)

// Scale is expert e's factor.
func (x Expert) Scale(e int) float32 {
	if x == Identity {
		return 1
	}
	return float32(1 + e%4)
}

// RunExperts queues the stand-in experts over the rows of r, in place:
// y = bf16(sum over the row's local experts k of w_k * f_k * x), what
// Combine expects.
func (h *Handle) RunExperts(r *Recv, x Expert) error {
	h.mu.Lock()
	defer h.mu.Unlock()
	if h.recv != r || h.st != dispatched {
		return fmt.Errorf("gpumoe: experts: not the current dispatch: %w", ErrOrder)
	}
	return h.launch(kExpert, h.blocks, h.p.countsShared(), h.args, r.round, int32(x))
}

// Read copies r to the host after Sync, in package moe's layout: X packed
// [NumRecv][Hidden] bf16 bits, the count matrix, offsets, routing and rows
// per expert.
func (r *Recv) Read() (*moe.Recv[uint16], error) {
	h := r.h
	h.mu.Lock()
	defer h.mu.Unlock()
	if h.recv != r {
		return nil, ErrStale
	}
	p := &h.p
	n, K := p.n, p.k
	hdr := make([]byte, n*p.hdrB)
	if err := h.win.Read(p.cnt+int(r.round&1)*n*p.hdrB, hdr); err != nil {
		return nil, err
	}
	out := &moe.Recv[uint16]{Counts: moe.CountMatrix{Ranks: n, C: make([]int, n*n)}}
	bad := false
	for s := range n {
		for q := range n {
			v := int64(binary.LittleEndian.Uint64(hdr[s*p.hdrB+8*q:]))
			bad = bad || v < 0
			out.Counts.C[s*n+q] = int(v)
		}
	}
	if bad {
		clear(out.Counts.C)
	}
	total := out.Counts.RecvTotal(p.me)
	out.NumRecv = total
	out.RankOffsets = make([]int, n+1)
	for s := range n + 1 {
		out.RankOffsets[s] = out.Counts.RecvOffset(s, p.me)
	}
	ent := make([]byte, total*p.ew*4)
	if err := h.win.Read(p.recvMeta, ent); err != nil {
		return nil, err
	}
	rows := make([]byte, total*p.rs)
	if err := h.win.Read(p.recvX, rows); err != nil {
		return nil, err
	}
	tpe, err := h.readState(p.recvTokPerExpert, 4*p.l)
	if err != nil {
		return nil, err
	}
	out.X = make([]uint16, total*p.h)
	out.SrcIndex = make([]int32, total)
	out.TopkIdx = make([]int32, total*K)
	out.TopkWeights = make([]float32, total*K)
	for i := range total {
		for c := range p.h {
			out.X[i*p.h+c] = binary.LittleEndian.Uint16(rows[i*p.rs+2*c:])
		}
		e := ent[i*p.ew*4:]
		out.SrcIndex[i] = int32(binary.LittleEndian.Uint32(e))
		for k := range K {
			out.TopkIdx[i*K+k] = int32(binary.LittleEndian.Uint32(e[4*(1+k):]))
			out.TopkWeights[i*K+k] = math.Float32frombits(binary.LittleEndian.Uint32(e[4*(1+K+k):]))
		}
	}
	for _, v := range i32s(tpe) {
		out.TokensPerExpert = append(out.TokensPerExpert, int(v))
	}
	moe.GroupByExpert(&out.Experts, out.TopkIdx, out.TopkWeights, K, p.l)
	return out, nil
}

package gpumoe

import (
	"context"
	"encoding/binary"
	"fmt"
	"time"

	"github.com/rdmactor/rdmactor/moe"
	"github.com/rdmactor/rdmactor/transport/gpu/cuda"
)

// RecvLL is what DispatchLL delivers to this rank, in device memory: for
// each local expert and source rank, the rows that source sent to that
// expert in fixed slots (DeepEP's packed_recv_x, packed_recv_count,
// packed_recv_src_info, without packing across sources).
//
// Valid until the next DispatchLL.
type RecvLL struct {
	h     *Handle
	round uint64
	// X is [LocalExperts][Size][MaxLLTokens] slots of SlotBytes: slot j of
	// local expert e from rank s holds a row for j < Count[e][s]. A bf16
	// slot is the row; an FP8 slot is the e4m3 row padded to 16 bytes,
	// then one float32 scale per 128 channels (x = e4m3 * scale).
	X cuda.DevicePtr
	// Y is where CombineLL takes the expert outputs: the same slots as X,
	// rows of Hidden bf16 every RowStride bytes. For bf16 it is X itself
	// (outputs written in place); for FP8 a buffer of its own.
	Y cuda.DevicePtr
	// Count is [LocalExperts][Size] uint32: rows per (local expert, source).
	Count cuda.DevicePtr
	// Src is [LocalExperts][Size][MaxLLTokens] uint32: t*TopK+k of each
	// row at its source (token t's slot k).
	Src cuda.DevicePtr
	// TokensPerExpert is [LocalExperts] int32: rows per local expert.
	TokensPerExpert cuda.DevicePtr
	// SlotBytes is the distance between slots of X.
	SlotBytes int
}

// DispatchLL queues the low-latency dispatch of numTokens tokens (at most
// MaxLLTokens): x is [numTokens][Hidden] contiguous bf16 device memory,
// read by the kernel (bf16: copied into Input there, unless it is Input or
// 0; FP8: quantized from x); topkIdx is
// [numTokens][TopK] int32 device memory (-1: dropped), kept by the Handle
// for CombineLL. Collective.
//
// One kernel, the sources staging and the receivers pulling: each rank
// stages its rows (FP8: quantized; bf16: Input as it is, or x copied into
// it) and writes its routing and its pairs per expert into every rank's
// window as words that carry the round (read as they land: no signal;
// each routing word a release where rows were staged, so it also tells
// that the token's row is there); each rank reads every source's routing
// and pulls each token routed to it once (over NVLink, through the LSA
// mapping), storing it into the slot of every local expert the token
// chose. A block of a rank waits only for the blocks of the other ranks
// that handle the same tokens. Slots are in token order
// (RecvLL.Src ascends within an expert and source); the source computes
// the same slots for CombineLL from its routing, without a reply. The
// kernel returns when this rank's slots are filled.
// Expert ids outside [-1, NumExperts) are skipped and reported by Sync
// (*KernelError, moe.ErrBadArgument).
//
// The kernel (and CombineLL's) is launched with programmatic dependent
// launch (gpu.Comm.LaunchOverlapped): its launch overlaps the kernel ahead
// of it on the stream, and it reads x and topkIdx, and writes, only once
// that kernel has finished.
func (h *Handle) DispatchLL(x, topkIdx cuda.DevicePtr, numTokens int) (*RecvLL, error) {
	const name = "low-latency dispatch"
	if err := h.begin(name, idle); err != nil {
		return nil, err
	}
	defer h.mu.Unlock()
	switch {
	case h.p.maxLL == 0:
		return nil, fmt.Errorf("gpumoe: %s: the handle has no low-latency buffers (Config.MaxLLTokens): %w", name, moe.ErrBadArgument)
	case numTokens < 0 || numTokens > h.p.maxLL:
		return nil, fmt.Errorf("gpumoe: %s: %d tokens, the handle holds %d: %w", name, numTokens, h.p.maxLL, moe.ErrBadArgument)
	case numTokens > 0 && topkIdx == 0:
		return nil, fmt.Errorf("gpumoe: %s: null routing: %w", name, moe.ErrBadArgument)
	}
	h.llRound++
	src, stride := h.source(x)
	if err := h.launchOverlapped(kLLDispatch, h.blocks, h.p.llDispShared(), h.g.DevComm(), h.args, src, stride, topkIdx,
		int32(numTokens), h.llRound); err != nil {
		return nil, err
	}
	h.llTok = numTokens
	h.st = dispatchedLL
	w := h.win.Ptr()
	h.recvLL = &RecvLL{h: h, round: h.llRound, X: w + cuda.DevicePtr(h.p.llX), Y: w + cuda.DevicePtr(h.p.llY),
		Count: w + cuda.DevicePtr(h.p.llCount), Src: w + cuda.DevicePtr(h.p.llSrc),
		TokensPerExpert: h.state + cuda.DevicePtr(h.p.llTokPerExpert), SlotBytes: h.p.slotB}
	return h.recvLL, nil
}

// CombineLL queues the low-latency combine of the last DispatchLL: each
// source sums its tokens' expert output rows (RecvLL.Y, unweighted) in
// float32 and rounds once:
//
//	out[t] = bf16(sum over k with topkIdx[t][k] >= 0 of topkWeights[t][k] * y[t][k])
//
// topkWeights is [numTokens][TopK] float32 device memory, out
// [numTokens][Hidden] contiguous bf16 device memory. The experts' ranks
// reduce: each rank sends its weights to every rank, sums each source
// token's rows over its own experts in float32 and writes that partial row
// into the source's window (one row per token and rank crosses NVLink, not
// one per pair), slice by slice, each followed by a flag word; each source
// adds a slice's partials as soon as their flags are there (no wait for
// the whole grid) and rounds once. Its blocks then signal llComb[me]
// everywhere, which the next DispatchLL waits for before it rewrites
// routing at the other ranks. Collective.
func (h *Handle) CombineLL(topkWeights, out cuda.DevicePtr) error {
	const name = "low-latency combine"
	if err := h.begin(name, dispatchedLL); err != nil {
		return err
	}
	defer h.mu.Unlock()
	if h.llTok > 0 && (topkWeights == 0 || out == 0) {
		return fmt.Errorf("gpumoe: %s: null weights or output: %w", name, moe.ErrBadArgument)
	}
	h.st = idle
	return h.launchOverlapped(kLLCombine, h.blocks, 0, h.g.DevComm(), h.args, topkWeights, int32(h.llTok),
		h.llRound, out)
}

// RunExpertsLL queues the stand-in experts over every received slot:
// Y = bf16(f_e * x), x dequantized from FP8 where the Handle carries FP8.
func (h *Handle) RunExpertsLL(r *RecvLL, x Expert) error {
	h.mu.Lock()
	defer h.mu.Unlock()
	if h.recvLL != r || h.st != dispatchedLL {
		return fmt.Errorf("gpumoe: low-latency experts: not the current dispatch: %w", ErrOrder)
	}
	return h.launch(kExpertLL, h.blocks, 0, h.args, int32(x))
}

// RecvLLHost is a RecvLL copied to the host (RecvLL.Read).
type RecvLLHost struct {
	Ranks, MaxTokens, SlotBytes int
	// Count is [LocalExperts][Ranks] rows per (local expert, source).
	Count []int
	// Src is [LocalExperts][Ranks][MaxTokens] t*TopK+k at the source.
	Src []uint32
	// Slots is X's bytes, [LocalExperts][Ranks][MaxTokens][SlotBytes].
	Slots []byte
	// Y is Y's bytes, [LocalExperts][Ranks][MaxTokens][RowStride]: the
	// expert outputs (for bf16, the same bytes as Slots).
	Y         []byte
	RowStride int
}

// YRow is the expert output of slot j of local expert e from rank s,
// Hidden bf16 bits.
func (r *RecvLLHost) YRow(e, s, j, hidden int) []uint16 {
	at := ((e*r.Ranks+s)*r.MaxTokens + j) * r.RowStride
	y := make([]uint16, hidden)
	for i := range y {
		y[i] = binary.LittleEndian.Uint16(r.Y[at+2*i:])
	}
	return y
}

// Slot is the bytes of slot j of local expert e from rank s.
func (r *RecvLLHost) Slot(e, s, j int) []byte {
	at := ((e*r.Ranks+s)*r.MaxTokens + j) * r.SlotBytes
	return r.Slots[at : at+r.SlotBytes]
}

// Read copies r to the host after Sync.
func (r *RecvLL) Read() (*RecvLLHost, error) {
	h := r.h
	h.mu.Lock()
	defer h.mu.Unlock()
	if h.recvLL != r {
		return nil, ErrStale
	}
	p := &h.p
	out := &RecvLLHost{Ranks: p.n, MaxTokens: p.maxLL, SlotBytes: p.slotB, RowStride: p.rs}
	cnt := make([]byte, 4*p.l*p.n)
	src := make([]byte, 4*p.l*p.n*p.maxLL)
	out.Slots = make([]byte, p.l*p.n*p.maxLL*p.slotB)
	out.Y = out.Slots
	reads := []struct {
		off int
		b   []byte
	}{{p.llCount, cnt}, {p.llSrc, src}, {p.llX, out.Slots}}
	if p.fp8 {
		out.Y = make([]byte, p.l*p.n*p.maxLL*p.rs)
		reads = append(reads, struct {
			off int
			b   []byte
		}{p.llY, out.Y})
	}
	for _, rd := range reads {
		if err := h.win.Read(rd.off, rd.b); err != nil {
			return nil, err
		}
	}
	for i := range p.l * p.n {
		out.Count = append(out.Count, min(p.maxLL, int(binary.LittleEndian.Uint32(cnt[4*i:]))))
	}
	for i := range p.l * p.n * p.maxLL {
		out.Src = append(out.Src, binary.LittleEndian.Uint32(src[4*i:]))
	}
	return out, nil
}

// LLTrace is where the last low-latency round spent its time on this GPU:
// %globaltimer read in the kernels, each point relative to the end of the
// round's StartLine kernel. Starts are the earliest block's; the other
// points the latest block's.
type LLTrace struct {
	DispatchStart   time.Duration // first block of DispatchLL's kernel past its wait for the kernel ahead
	DispatchEntries time.Duration // every entry word written
	DispatchPull    time.Duration // every block's first pull issued
	DispatchEnd     time.Duration // every block done
	CombineStart    time.Duration // first block of CombineLL's kernel past its wait for the kernel ahead
	CombineStores   time.Duration // every partial row stored
	CombineFlags    time.Duration // every flag and llComb signal sent
	CombineEnd      time.Duration // every block done
}

// llTraceSlots is kernels.cu's trSlots.
const llTraceSlots = 9

// TraceLL returns the trace of the last low-latency round (StartLine,
// DispatchLL, CombineLL) and resets it. The kernels record it only when
// compiled with RDMACTOR_MOE_TRACE set in the environment (kernels.go);
// otherwise every field is 0. It waits for the stream: call it between
// rounds, after Sync.
func (h *Handle) TraceLL(ctx context.Context) (LLTrace, error) {
	h.mu.Lock()
	defer h.mu.Unlock()
	c := h.g.Context()
	buf, err := c.MemAlloc(8 * llTraceSlots)
	if err != nil {
		return LLTrace{}, fmt.Errorf("gpumoe: trace: %w", err)
	}
	b := make([]byte, 8*llTraceSlots)
	err = h.g.Launch(h.k.fn[kTraceDump], cuda.Dim3{X: 1}, cuda.Dim3{X: 32}, 0, buf)
	if err == nil {
		err = h.g.Wait(ctx)
	}
	if err == nil {
		err = c.CopyFromDevice(b, buf)
	}
	if ferr := c.MemFree(buf); err == nil {
		err = ferr
	}
	if err != nil {
		return LLTrace{}, fmt.Errorf("gpumoe: trace: %w", err)
	}
	var v [llTraceSlots]uint64
	for i := range v {
		v[i] = binary.LittleEndian.Uint64(b[8*i:])
	}
	at := func(i int) time.Duration {
		if v[0] == 0 || v[i] == 0 || v[i] == ^uint64(0) {
			return 0
		}
		return time.Duration(int64(v[i] - v[0]))
	}
	return LLTrace{DispatchStart: at(1), DispatchEntries: at(2), DispatchPull: at(3), DispatchEnd: at(4),
		CombineStart: at(5), CombineStores: at(6), CombineFlags: at(7), CombineEnd: at(8)}, nil
}

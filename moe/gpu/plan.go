package gpumoe

import (
	"encoding/binary"
	"fmt"

	"github.com/rdmactor/rdmactor/moe"
	"github.com/rdmactor/rdmactor/transport/gpu/cuda"
)

// plan is where everything of a Handle lives: byte offsets of its regions
// in the window (the same on every rank), offsets of its device state (this
// rank only), its signals, and the Args kernels get.
//
//	window (gpu.Window, every rank's part mapped into every kernel):
//	  input     [max(MaxTokens, MaxLLTokens)][rs]  bf16 rows to dispatch (Handle.Input)
//	  normal:   cnt      [2 parity][n][hdrB]  count headers received, per source
//	            metaStage [n][MaxTokens][ew]  routing entries, staged per destination
//	            recvMeta [n*MaxTokens][ew]  routing entries of received rows
//	            recvX    [n*MaxTokens][rs]  received rows (expert outputs in place)
//	  low lat.: llStage  [MaxLLTokens][slotB] FP8 slots quantized, read by the receivers (FP8 only)
//	            llRoute  [n][routeB]         per source, 8-byte route words (value, round): T,
//	                                          [MaxLLTokens][K] entry words (expert and slot),
//	                                          [E] pairs per expert (kernels.cu: llRoute)
//	            llX      [L][n][MaxLLTokens][slotB] received slots
//	            llSrc    [L][n][MaxLLTokens] u32  t*K+k of each slot at its source
//	            llCount  [L][n] u32           slots used per (local expert, source)
//	            llY      [L][n][MaxLLTokens][rs] expert outputs (FP8; else llY = llX)
//	            llW      [n][MaxLLTokens][K] u64  per source, its combine weights as 8-byte
//	                                          words (float32 bits, round), as route words
//	            llPart   [n][MaxLLTokens][prs] per expert rank, float32 partial sums of this
//	                                          rank's tokens over that rank's experts
//	            llFlag   [n][MaxLLTokens][flagS] u64  per expert rank, a word (round) per slice
//	                                          of a partial sum once it is there (kernels.cu:
//	                                          moe_ll_combine); flagS = max(1, Hidden/64)
//
// rs is Hidden*2 rounded up to 16 bytes; a count header is n int64 counts
// (tokens this rank sends each rank, -1 for bad routing) then L int32
// (tokens for each of the receiver's experts), hdrB bytes with padding; a
// routing entry is ew uint32 words: source token, K local expert ids (-1:
// elsewhere), K float32 weights (0 there), zero padding to 16 bytes. An
// FP8 slot is the e4m3 row padded to 16 bytes, then one float32 scale
// (dequantize: x = e4m3 * scale) per 128 channels, padded to 16 bytes.
// prs is Hidden*4 rounded up to 16 bytes (kernels.cu computes it too).
type plan struct {
	n, me, h, k, e, l, maxT, maxLL int
	rs, ew, hdrB, slotB, groups    int
	routeB, flagS                  int
	fp8                            bool
	sig0                           int

	input, cnt, metaStage, recvMeta, recvX     int
	llStage, llX, llSrc, llCount, llY, llRoute int
	llW, llPart, prs, llFlag                   int
	size                                       int

	masks, pos, tokPerExpert, tokPerRank, finish int
	lay                                          int
	llSlotOf                                     int
	errWord, recvTokPerExpert, llTokPerExpert    int
	stateSize                                    int
}

func align(v, a int) int { return (v + a - 1) / a * a }

// regionAlign aligns every region (and keeps 16-byte vectors aligned).
const regionAlign = 256

// maxWindow bounds the window (sizes are computed in int).
const maxWindow = 1 << 40

func newPlan(cfg Config, n, me int) (plan, error) {
	p := plan{n: n, me: me, h: cfg.Hidden, k: cfg.TopK, e: cfg.NumExperts, l: cfg.NumExperts / n,
		maxT: cfg.MaxTokens, maxLL: cfg.MaxLLTokens, fp8: cfg.FP8, sig0: cfg.Signal0}
	p.rs = align(2*p.h, 16)
	p.ew = align(1+2*p.k, 4)
	p.hdrB = align(8*n+4*p.l, 16)
	p.groups = (p.h + 127) / 128
	p.slotB = p.rs
	p.routeB = align(8*(1+p.maxLL*p.k+p.e), 16)
	p.flagS = max(1, p.h/64)
	if p.fp8 {
		p.slotB = align(align(p.h, 16)+4*p.groups, 16)
	}
	at := 0
	region := func(bytes int) int {
		off := at
		at = align(at+bytes, regionAlign)
		return off
	}
	p.input = region(max(p.maxT, p.maxLL) * p.rs)
	if p.maxT > 0 {
		p.cnt = region(2 * n * p.hdrB)
		p.metaStage = region(n * p.maxT * p.ew * 4)
		p.recvMeta = region(n * p.maxT * p.ew * 4)
		p.recvX = region(n * p.maxT * p.rs)
	}
	if p.maxLL > 0 {
		if p.fp8 {
			p.llStage = region(p.maxLL * p.slotB)
		}
		p.llX = region(p.l * n * p.maxLL * p.slotB)
		p.llSrc = region(p.l * n * p.maxLL * 4)
		p.llCount = region(p.l * n * 4)
		p.llRoute = region(n * p.routeB)
		p.llY = p.llX
		if p.fp8 {
			p.llY = region(p.l * n * p.maxLL * p.rs)
		}
		p.prs = align(4*p.h, 16)
		p.llW = region(n * p.maxLL * p.k * 8)
		p.llPart = region(n * p.maxLL * p.prs)
		p.llFlag = region(n * p.maxLL * p.flagS * 8)
	}
	p.size = at
	if p.size > maxWindow {
		return p, fmt.Errorf("gpumoe: a window of %d bytes: too large: %w", p.size, moe.ErrBadArgument)
	}
	at = 0
	p.masks = region(4 * p.maxT)
	p.pos = region(4 * p.maxT * n)
	p.tokPerExpert = region(4 * p.e)
	p.tokPerRank = region(4 * n)
	p.finish = region(4 * 2 * n)
	p.lay = region(p.laySize())
	p.llSlotOf = region(4 * p.maxLL * p.k)
	p.errWord = region(8)
	p.recvTokPerExpert = region(4 * p.l)
	p.llTokPerExpert = region(4 * p.l)
	p.stateSize = at
	return p, nil
}

// Signals, from sig0: cnt[n] data[n] comb[n] llComb[n], one each per
// source rank. Values: the count, data and combine (outputs ready) signals
// of source s reach the number of normal rounds begun; llComb[s] the
// grid's blocks times the
// low-latency rounds (each block of s adds 1 at every rank once its partial
// sums are there).
func (p *plan) sigCnt(s int) int    { return p.sig0 + s }
func (p *plan) sigData(s int) int   { return p.sig0 + p.n + s }
func (p *plan) sigComb(s int) int   { return p.sig0 + 2*p.n + s }
func (p *plan) sigLLComb(s int) int { return p.sig0 + 3*p.n + s }
func (p *plan) signals() int        { return 4 * p.n }

// argWords is the size of Args in 8-byte words (kernels.cu: struct Args;
// NVRTC gets it as -DMOE_ARGS_WORDS and static_asserts it).
const argWords = 42

// Args is a Handle as kernels take it: struct moe::Args of kernels.cu,
// passed by value.
type Args [argWords * 8]byte

// KernelArg makes Args a by-value kernel argument (cuda.KernelArg).
func (a Args) KernelArg() []byte { return a[:] }

// args encodes the plan for a window handle and a state allocation, in the
// field order of kernels.cu's struct Args.
func (p *plan) args(win, state cuda.DevicePtr) Args {
	b2u := func(b bool) uint64 {
		if b {
			return 1
		}
		return 0
	}
	st := func(off int) uint64 { return uint64(state) + uint64(off) }
	words := []uint64{
		uint64(win),
		uint64(p.me), uint64(p.n), uint64(p.h), uint64(p.k), uint64(p.e), uint64(p.l), uint64(p.maxT), uint64(p.maxLL),
		uint64(p.rs), uint64(p.ew), uint64(p.hdrB), uint64(p.sig0), b2u(p.fp8), uint64(p.slotB), uint64(p.groups),
		uint64(p.routeB), uint64(p.flagS),
		uint64(p.input), uint64(p.cnt), uint64(p.metaStage), uint64(p.recvMeta), uint64(p.recvX),
		uint64(p.llStage), uint64(p.llX), uint64(p.llSrc), uint64(p.llCount), uint64(p.llY), uint64(p.llRoute),
		uint64(p.llW), uint64(p.llPart), uint64(p.llFlag),
		st(p.masks), st(p.pos), st(p.tokPerExpert), st(p.tokPerRank), st(p.finish), st(p.lay),
		st(p.llSlotOf),
		st(p.errWord), st(p.recvTokPerExpert), st(p.llTokPerExpert),
	}
	if len(words) != argWords {
		panic(fmt.Sprintf("gpumoe: Args has %d words, argWords is %d", len(words), argWords))
	}
	var a Args
	for i, w := range words {
		binary.LittleEndian.PutUint64(a[8*i:], w)
	}
	return a
}

// laySize is the fused layout's scratch (kernels.cu: Lay): [2][E] tokens
// per expert, a 128-byte line each, [2] arrival counters, [2] bad words,
// [ceil(MaxTokens/32)][n] tokens per 32-token chunk and rank, uint32 each;
// none without normal-mode buffers.
func (p *plan) laySize() int {
	if p.maxT == 0 {
		return 0
	}
	return 4 * (2*p.e*32 + 4 + (p.maxT+31)/32*p.n)
}

// Shared memory of the kernels (kernels.cu says what each takes).
func (p *plan) layoutShared() int  { return 4 * (p.e + p.n + 40) }
func (p *plan) countsShared() int  { return 8 * p.n * p.n }
func (p *plan) combineShared() int { return 8 * p.n * p.n }
func (p *plan) llDispShared() int  { return 4 * p.e } // the slot walks' counts

// threads per block of the data kernels but the normal dispatch
// (kernels.cu: __launch_bounds__(1024, 1)).
const threads = 1024

// The normal dispatch runs two blocks of dispatchThreads on each SM
// (dispatchPerSM times the grid of the other kernels): every SM then holds
// a block that puts over NVLink besides the blocks that copy this rank's own
// rows, and the puts move as a copy kernel on every SM does (about 349 GB/s
// each way on 2 x H200, against 330 with 106 of 132 SMs putting).
const (
	dispatchThreads = 512
	dispatchPerSM   = 2
)

// The normal combine, which pulls, runs two blocks of combineThreads on
// each SM too: two blocks that wait for their loads apart keep an SM's
// NVLink reads flowing better than one of twice the threads (4 x H200,
// 4096 tokens, alternating runs: 491-498 µs against 494-510 µs; a pulling
// copy kernel moves 311 against 295 GB/s per GPU, bench/nvlink/a2a.cu).
const (
	combineThreads = 512
	combinePerSM   = 2
)

// blockDest is kernels.cu's: the destination block b of the normal
// dispatch's G blocks serves, and its share of the tokens (block j of the
// g serving r). Remote destinations get 4 blocks for each local one.
func blockDest(b, G, n, me int) (r, j, g int) {
	if n == 1 {
		return me, b, G
	}
	gs := min(max(1, G/(4*(n-1)+1)), G-(n-1))
	gr := G - gs
	if b >= gr {
		return me, b - gr, gs
	}
	for q := 0; ; q++ {
		lo, hi := gr*q/(n-1), gr*(q+1)/(n-1)
		if b < hi {
			return (me + 1 + q) % n, b - lo, hi - lo
		}
	}
}

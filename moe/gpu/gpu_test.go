package gpumoe

import (
	"context"
	"encoding/binary"
	"errors"
	"fmt"
	"math"
	"math/rand/v2"
	"os"
	"slices"
	"sync"
	"testing"
	"time"

	"github.com/rdmactor/rdmactor/gin"
	"github.com/rdmactor/rdmactor/moe"
	"github.com/rdmactor/rdmactor/transport/gpu"
	"github.com/rdmactor/rdmactor/transport/gpu/cuda"
	"github.com/stretchr/testify/require"
)

// Device tests: two ranks as goroutines on two GPUs (LSA path, NVLink peer
// access), every round checked against package moe's layout functions and
// a Go emulation of the kernels' arithmetic: received rows bit for bit
// (bf16, and FP8 against QuantizeFP8), combined outputs bit for bit
// (normal) or within one bf16 ulp (low latency: float32 FMA order), and
// against the float64 Reference. Outputs and buffers are poisoned (0xff,
// bf16 NaN) before every round. They skip here without GPUs, with the
// reason.

// caseTimeout bounds one case (RDMACTOR_GPU_CASE_TIMEOUT, default 60 s):
// kernels still waiting then are aborted.
var caseTimeout = func() time.Duration {
	if d, err := time.ParseDuration(os.Getenv("RDMACTOR_GPU_CASE_TIMEOUT")); err == nil && d > 0 {
		return d
	}
	return 60 * time.Second
}()

type gpuCase struct {
	name      string
	H, K, E   int
	T, LLT    int // tokens per rank (normal, low latency)
	fp8       bool
	rounds    int
	badRound  int // round in which rank 0 routes to an invalid expert (normal); -1 none
	zeroRank1 bool
	route     func(rng *rand.Rand, rank, T, K, E, n int) ([]int32, []float32)
}

func zipfRoute(rng *rand.Rand, rank, T, K, E, n int) ([]int32, []float32) {
	idx, w, _ := moe.RandomRouting(rng.Uint64(), rank, T, K, E, moe.Skew{Zipf: 1.2, Drop: 0.1})
	return idx, w
}

func fixedRoute(expert func(t, k int) int32) func(*rand.Rand, int, int, int, int, int) ([]int32, []float32) {
	return func(_ *rand.Rand, _, T, K, _, _ int) ([]int32, []float32) {
		idx, w := make([]int32, T*K), make([]float32, T*K)
		for i := range idx {
			idx[i] = expert(i/K, i%K)
			if idx[i] >= 0 {
				w[i] = 1 / float32(K)
			}
		}
		return idx, w
	}
}

var gpuCases = []gpuCase{
	{name: "uniform", H: 512, K: 8, E: 32, T: 300, LLT: 64, rounds: 3, badRound: -1, route: uniformRoute},
	{name: "uniform-fp8", H: 512, K: 8, E: 32, T: 40, LLT: 64, fp8: true, rounds: 2, badRound: -1, route: uniformRoute},
	{name: "odd-hidden", H: 1001, K: 4, E: 16, T: 64, LLT: 33, rounds: 2, badRound: -1, route: uniformRoute},
	{name: "odd-hidden-fp8", H: 1001, K: 4, E: 16, T: 16, LLT: 33, fp8: true, rounds: 2, badRound: -1, route: uniformRoute},
	{name: "dropped-zipf", H: 256, K: 8, E: 32, T: 200, LLT: 50, rounds: 2, badRound: -1, route: zipfRoute},
	{name: "one-expert", H: 264, K: 4, E: 32, T: 100, LLT: 100, rounds: 2, badRound: -1,
		route: fixedRoute(func(t, k int) int32 { return map[bool]int32{true: 20, false: -1}[k == 0] })},
	{name: "rank1-receives-none", H: 256, K: 4, E: 32, T: 90, LLT: 40, rounds: 2, badRound: -1,
		route: fixedRoute(func(t, k int) int32 { return int32((t + 3*k) % 16) })},
	{name: "repeated-expert", H: 256, K: 4, E: 16, T: 50, LLT: 50, rounds: 2, badRound: -1, // experts chosen twice
		route: fixedRoute(func(t, k int) int32 { return int32((t*5 + k/2*7) % 16) })},
	{name: "rank1-no-tokens", H: 128, K: 8, E: 32, T: 77, LLT: 20, rounds: 2, badRound: -1, zeroRank1: true, route: uniformRoute},
	{name: "bad-routing", H: 128, K: 4, E: 16, T: 60, rounds: 3, badRound: 1, route: uniformRoute},
}

// rank is one rank of a case.
type rank struct {
	gc *gin.Comm
	g  *gpu.Comm
	h  *Handle

	in             modelInput
	x, idx, w, out cuda.DevicePtr
	recv           *Recv
	recvLL         *RecvLL
	got            *moe.Recv[uint16] // after combine: X holds the expert outputs
	rowsIn         []uint16          // round 0: the rows as received
	gotLL, gotLLY  *RecvLLHost
	outHost        []uint16
	syncErr        error
}

func newRanks(t *testing.T, cfg Config) []*rank {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), caseTimeout)
	defer cancel()
	const n = 2
	gcs, err := gin.NewLocal(ctx, n, gin.Config{Signals: 32 + cfg.Signal0 + Signals(n, cfg)})
	require.NoError(t, err)
	rs := make([]*rank, n)
	for r := range rs {
		rs[r] = &rank{gc: gcs[r]}
	}
	eachRank(t, rs, func(r int, rk *rank) error {
		dev := r
		var err error
		if rk.g, err = gpu.New(ctx, rk.gc, gpu.Config{Path: gpu.PathLSA, Device: &dev, Barriers: 32}); err != nil {
			return err
		}
		rk.h, err = New(ctx, rk.g, cfg)
		return err
	})
	t.Cleanup(func() {
		ctx, cancel := context.WithTimeout(context.Background(), caseTimeout)
		defer cancel()
		eachRank(t, rs, func(r int, rk *rank) error {
			err := rk.h.Close(ctx)
			rk.freeBuffers()
			return errors.Join(err, rk.g.Close(), rk.gc.Close())
		})
	})
	return rs
}

// eachRank runs fn on every rank at once and fails t with their errors.
func eachRank(t *testing.T, rs []*rank, fn func(r int, rk *rank) error) {
	t.Helper()
	errs := make([]error, len(rs))
	var wg sync.WaitGroup
	for r, rk := range rs {
		wg.Go(func() {
			if err := fn(r, rk); err != nil {
				errs[r] = fmt.Errorf("rank %d: %w", r, err)
			}
		})
	}
	wg.Wait()
	require.NoError(t, errors.Join(errs...))
}

func (rk *rank) freeBuffers() {
	for _, p := range []*cuda.DevicePtr{&rk.x, &rk.idx, &rk.w, &rk.out} {
		if *p != 0 {
			rk.g.Context().MemFree(*p)
			*p = 0
		}
	}
}

func u16Bytes(v []uint16) []byte {
	b := make([]byte, 2*len(v))
	for i, x := range v {
		binary.LittleEndian.PutUint16(b[2*i:], x)
	}
	return b
}

func word32Bytes[E int32 | float32](v []E) []byte {
	b := make([]byte, 4*len(v))
	for i, x := range v {
		switch x := any(x).(type) {
		case int32:
			binary.LittleEndian.PutUint32(b[4*i:], uint32(x))
		case float32:
			binary.LittleEndian.PutUint32(b[4*i:], math.Float32bits(x))
		}
	}
	return b
}

// upload allocates device memory holding b (at least 16 bytes).
func upload(g *gpu.Comm, b []byte) (cuda.DevicePtr, error) {
	p, err := g.Context().MemAlloc(max(len(b), 16))
	if err != nil {
		return 0, err
	}
	return p, g.Context().CopyToDevice(p, b)
}

// prepare poisons the window and the output, and uploads the round's
// input: contiguous x (read there by the dispatch) when copyIn, else straight
// into Input.
func (rk *rank) prepare(in modelInput, H int, copyIn bool) error {
	rk.freeBuffers()
	rk.in = in
	g, h := rk.g, rk.h
	if err := g.Context().Memset(h.win.Ptr(), 0xff, h.p.size); err != nil {
		return err
	}
	var err error
	if rk.idx, err = upload(g, word32Bytes(in.idx)); err != nil {
		return err
	}
	if rk.w, err = upload(g, word32Bytes(in.w)); err != nil {
		return err
	}
	if rk.out, err = g.Context().MemAlloc(max(2*in.T*H, 16)); err != nil {
		return err
	}
	if err := g.Context().Memset(rk.out, 0xff, max(2*in.T*H, 16)); err != nil {
		return err
	}
	if copyIn {
		rk.x, err = upload(g, u16Bytes(in.x))
		return err
	}
	rows := make([]byte, in.T*h.p.rs)
	for t := range in.T {
		copy(rows[t*h.p.rs:], u16Bytes(in.x[t*H:(t+1)*H]))
	}
	return h.win.Write(h.p.input, rows)
}

func (rk *rank) readOut(H int) error {
	b := make([]byte, 2*rk.in.T*H)
	if err := rk.g.Context().CopyFromDevice(b, rk.out); err != nil {
		return err
	}
	rk.outHost = make([]uint16, rk.in.T*H)
	for i := range rk.outHost {
		rk.outHost[i] = binary.LittleEndian.Uint16(b[2*i:])
	}
	return nil
}

func TestGPU(t *testing.T) {
	skipIfFewerGPUs(t, 2)
	for _, c := range gpuCases {
		t.Run(c.name, func(t *testing.T) {
			cfg := Config{Sizes: moe.Sizes{Hidden: c.H, TopK: c.K, NumExperts: c.E, MaxTokens: c.T, MaxLLTokens: c.LLT}, FP8: c.fp8, Signal0: 1}
			rs := newRanks(t, cfg)
			for round := range c.rounds {
				if c.T > 0 {
					t.Run(fmt.Sprintf("normal-%d", round), func(t *testing.T) { normalRound(t, c, rs, round) })
				}
				if c.LLT > 0 {
					t.Run(fmt.Sprintf("ll-%d", round), func(t *testing.T) { llRound(t, c, rs, round) })
				}
			}
		})
	}
}

// roundInputs is every rank's input of a round: the case's routing, fewer
// tokens in odd rounds, none on rank 1 where asked.
func roundInputs(c gpuCase, tokens, round int) []modelInput {
	mc := modelCase{name: c.name, n: 2, H: c.H, K: c.K, E: c.E, T: tokens, route: c.route}
	if round%2 == 1 {
		mc.T = tokens - tokens/5
	}
	in := mc.inputs(uint64(100 + round))
	if c.zeroRank1 {
		in[1] = modelInput{T: 0}
	}
	return in
}

func normalRound(t *testing.T, c gpuCase, rs []*rank, round int) {
	ctx, cancel := context.WithTimeout(context.Background(), caseTimeout)
	defer cancel()
	n, H, K, E := 2, c.H, c.K, c.E
	L := E / n
	in := roundInputs(c, c.T, round)
	bad := round == c.badRound
	if bad {
		in[0].idx[len(in[0].idx)/2] = int32(E + 7)
	}
	eachRank(t, rs, func(r int, rk *rank) error { return rk.prepare(in[r], H, round%2 == 0) })
	eachRank(t, rs, func(r int, rk *rank) error { return rk.gc.Barrier(ctx) })
	// Round 0 syncs after the dispatch and checks the rows as they
	// arrived; later rounds queue everything, one Sync.
	eachRank(t, rs, func(r int, rk *rank) error {
		h := rk.h
		var err error
		if rk.recv, err = h.Dispatch(rk.x, rk.idx, rk.w, rk.in.T); err != nil {
			return err
		}
		rk.rowsIn = nil
		if round == 0 {
			if err := h.Sync(ctx); err != nil {
				return err
			}
			first, err := rk.recv.Read()
			if err != nil {
				return err
			}
			rk.rowsIn = first.X
		}
		if err := h.RunExperts(rk.recv, Scaled); err != nil {
			return err
		}
		if err := h.Combine(rk.out); err != nil {
			return err
		}
		rk.syncErr = h.Sync(ctx)
		if rk.syncErr != nil && !bad {
			return rk.syncErr
		}
		if rk.got, err = rk.recv.Read(); err != nil {
			return err
		}
		return rk.readOut(H)
	})
	if bad {
		for r, rk := range rs {
			require.ErrorIs(t, rk.syncErr, moe.ErrBadArgument, "rank %d", r)
			var ke *KernelError
			require.ErrorAs(t, rk.syncErr, &ke)
			for i, v := range rk.outHost {
				require.Zero(t, v, "rank %d: output %d after bad routing", r, i)
			}
			require.Zero(t, rk.got.NumRecv)
		}
		return
	}
	// Expected receive side, from package moe's layout.
	lays := make([]moe.Layout, n)
	C := make([]int, n*n)
	for s := range n {
		var err error
		lays[s], err = moe.GetDispatchLayout(in[s].idx, in[s].T, K, E, n)
		require.NoError(t, err)
		copy(C[s*n:], lays[s].NumTokensPerRank)
	}
	pos := make([][]int32, n)
	for s := range n {
		pos[s] = make([]int32, in[s].T*n)
		moe.SendPositions(pos[s], lays[s].IsTokenInRank, in[s].T, n)
	}
	for r, rk := range rs {
		got := rk.got
		require.Equal(t, C, got.Counts.C, "rank %d counts", r)
		var src, tidx []int32
		var tw []float32
		tpe := make([]int, L)
		var rows [][]uint16
		offs := []int{0}
		for s := range n {
			for tk := range in[s].T {
				if !lays[s].IsTokenInRank[tk*n+r] {
					continue
				}
				src = append(src, int32(tk))
				rows = append(rows, in[s].x[tk*H:(tk+1)*H])
				for k := range K {
					e, w := in[s].idx[tk*K+k], float32(0)
					if e >= 0 && int(e)/L == r {
						e, w = e%int32(L), in[s].w[tk*K+k]
						tpe[e]++
					} else {
						e = -1
					}
					tidx, tw = append(tidx, e), append(tw, w)
				}
			}
			offs = append(offs, len(src))
		}
		require.Equal(t, len(src), got.NumRecv, "rank %d rows", r)
		require.Equal(t, offs, got.RankOffsets, "rank %d", r)
		require.Equal(t, nonNil(src), nonNil(got.SrcIndex), "rank %d source tokens", r)
		require.Equal(t, nonNil(tidx), nonNil(got.TopkIdx), "rank %d expert ids", r)
		require.Equal(t, nonNil(tw), nonNil(got.TopkWeights), "rank %d weights", r)
		require.Equal(t, tpe, got.TokensPerExpert, "rank %d tokens per expert", r)
		if round == 0 {
			require.Equal(t, nonNil(slices.Concat(rows...)), nonNil(rk.rowsIn), "rank %d received rows", r)
		}
		// Expert outputs: y = bf16(coef * x), coef an FMA chain on the
		// device: within one bf16 ulp of the emulation.
		for i := range got.NumRecv {
			coef := float32(0)
			for k := range K {
				if le := got.TopkIdx[i*K+k]; le >= 0 {
					coef = float32(math.FMA(float64(got.TopkWeights[i*K+k]), float64(Scaled.Scale(r*L+int(le))), float64(coef)))
				}
			}
			for ch := range H {
				want := moe.BF16(coef * moe.Float32(rows[i][ch]))
				requireULP(t, want, got.X[i*H+ch], 1, "rank %d row %d channel %d expert output", r, i, ch)
			}
		}
	}
	// Combined outputs: the device sums the ranks' y rows in rank order in
	// float32: bit for bit.
	for me, rk := range rs {
		for tk := range in[me].T {
			for ch := range H {
				acc := float32(0)
				for r := range n {
					p := int(pos[me][tk*n+r])
					if p < 0 {
						continue
					}
					row := moe.CountMatrix{Ranks: n, C: C}.RecvOffset(me, r) + p
					acc += moe.Float32(rs[r].got.X[row*H+ch])
				}
				require.Equal(t, moe.BF16(acc), rk.outHost[tk*H+ch], "rank %d token %d channel %d", me, tk, ch)
			}
		}
		want := Reference(in[me].x, in[me].idx, in[me].w, H, K, Scaled, false)
		require.Less(t, RelError(rk.outHost, want, H), 2e-2, "rank %d against the float64 reference", me)
	}
}

func nonNil[E any](v []E) []E {
	if v == nil {
		return []E{}
	}
	return v
}

// requireULP fails unless got is within ulps bf16 steps of want.
func requireULP(t *testing.T, want, got uint16, ulps int, msg string, args ...any) {
	t.Helper()
	ord := func(b uint16) int {
		if b&0x8000 != 0 {
			return -int(b & 0x7fff)
		}
		return int(b)
	}
	if d := ord(want) - ord(got); d > ulps || d < -ulps {
		t.Fatalf("%s: got %#04x (%g), want %#04x (%g)", fmt.Sprintf(msg, args...), got, moe.Float32(got), want, moe.Float32(want))
	}
}

func llRound(t *testing.T, c gpuCase, rs []*rank, round int) {
	ctx, cancel := context.WithTimeout(context.Background(), caseTimeout)
	defer cancel()
	n, H, K, E := 2, c.H, c.K, c.E
	L := E / n
	in := roundInputs(c, c.LLT, round)
	// Ranks alternate copy-in and zero-copy out of step: a rank waits for a
	// source's llReady only in the rounds that source staged.
	eachRank(t, rs, func(r int, rk *rank) error { return rk.prepare(in[r], H, (round+r)%2 == 1) })
	eachRank(t, rs, func(r int, rk *rank) error { return rk.gc.Barrier(ctx) })
	eachRank(t, rs, func(r int, rk *rank) error {
		h := rk.h
		var err error
		if rk.recvLL, err = h.DispatchLL(rk.x, rk.idx, rk.in.T); err != nil {
			return err
		}
		if err := h.Sync(ctx); err != nil {
			return err
		}
		if rk.gotLL, err = rk.recvLL.Read(); err != nil {
			return err
		}
		if err := h.RunExpertsLL(rk.recvLL, Scaled); err != nil {
			return err
		}
		if err := h.CombineLL(rk.w, rk.out); err != nil {
			return err
		}
		if err := h.Sync(ctx); err != nil {
			return err
		}
		if rk.gotLLY, err = rk.recvLL.Read(); err != nil {
			return err
		}
		return rk.readOut(H)
	})
	// Slots: every (token, k) of every source at its expert, its row as
	// sent (bf16 bits, or QuantizeFP8's bytes and scales).
	type pair struct{ s, v int } // source, t*K+k
	yOf := map[pair][]uint16{}
	for me, rk := range rs {
		got := rk.gotLL
		for le := range L {
			e := me*L + le
			for s := range n {
				var want []int
				for i, id := range in[s].idx {
					if int(id) == e {
						want = append(want, i)
					}
				}
				cnt := got.Count[le*n+s]
				require.Equal(t, len(want), cnt, "rank %d expert %d from rank %d: rows", me, e, s)
				var srcs []int
				for j := range cnt {
					v := int(got.Src[(le*n+s)*got.MaxTokens+j])
					srcs = append(srcs, v)
					tk := v / K
					require.Less(t, tk, in[s].T)
					row := in[s].x[tk*H : (tk+1)*H]
					slot := got.Slot(le, s, j)
					var xs []float32
					if c.fp8 {
						q, sc := QuantizeFP8(row)
						require.Equal(t, q, slot[:H], "rank %d expert %d slot %d: e4m3 bytes", me, e, j)
						at := align(H, 16)
						for g, f := range sc {
							require.Equal(t, math.Float32bits(f), binary.LittleEndian.Uint32(slot[at+4*g:]), "scale %d", g)
						}
						xs = DequantizeFP8(q, sc)
					} else {
						require.Equal(t, u16Bytes(row), slot[:2*H], "rank %d expert %d slot %d: row", me, e, j)
						for _, v := range row {
							xs = append(xs, moe.Float32(v))
						}
					}
					y := rk.gotLLY.YRow(le, s, j, H)
					for ch := range H {
						require.Equal(t, moe.BF16(Scaled.Scale(e)*xs[ch]), y[ch], "rank %d expert %d slot %d channel %d: expert output", me, e, j, ch)
					}
					yOf[pair{s, v}] = y
				}
				require.Equal(t, nonNil(want), nonNil(srcs), "rank %d expert %d from rank %d: sources, in token order", me, e, s)
			}
		}
	}
	// Combined: sum over k of w * y in float32 (FMA): one ulp.
	for s, rk := range rs {
		for tk := range in[s].T {
			for ch := range H {
				acc := float32(0)
				for k := range K {
					if in[s].idx[tk*K+k] < 0 {
						continue
					}
					y := yOf[pair{s, tk*K + k}]
					acc = float32(math.FMA(float64(in[s].w[tk*K+k]), float64(moe.Float32(y[ch])), float64(acc)))
				}
				requireULP(t, moe.BF16(acc), rk.outHost[tk*H+ch], 1, "rank %d token %d channel %d", s, tk, ch)
			}
		}
		want := Reference(in[s].x, in[s].idx, in[s].w, H, K, Scaled, c.fp8)
		require.Less(t, RelError(rk.outHost, want, H), 2e-2, "rank %d against the float64 reference", s)
	}
}

package moe_test

import (
	"context"
	"fmt"
	"math"
	"math/rand/v2"
	"testing"
	"time"

	"github.com/rdmactor/rdmactor/barrier"
	"github.com/rdmactor/rdmactor/gin"
	"github.com/rdmactor/rdmactor/internal/testutils"
	"github.com/rdmactor/rdmactor/internal/testutils/ginlocal"
	"github.com/rdmactor/rdmactor/moe"
	"github.com/stretchr/testify/require"
)

// job is the ranks of one test as goroutines of this process, each with a
// Handle.
type job[T moe.Elem] struct {
	t     testing.TB
	comms []*gin.Comm
	hs    []*moe.Handle[T]
	ctx   context.Context // ends at the deadline, or when a rank fails
	stop  context.CancelFunc
}

func newJob[T moe.Elem](t testing.TB, n int, cfg moe.Config) *job[T] {
	t.Helper()
	contexts := max(cfg.Context+cfg.Contexts, 1)
	ctx, stop, comms := ginlocal.Comms(t, n, gin.Config{Signals: 1, Contexts: contexts}, 2*time.Minute)
	if cfg.Pacing == (barrier.Pacing{}) {
		// Goroutine ranks on few cores: poll and hand the core over.
		cfg.Pacing = barrier.Pacing{Gosched: true, Spins: 64}
	}
	j := &job[T]{t: t, comms: comms, hs: make([]*moe.Handle[T], n), ctx: ctx, stop: stop}
	j.ranks(func(r int) (err error) {
		j.hs[r], err = moe.New[T](ctx, comms[r], cfg)
		return err
	})
	return j
}

// ranks runs fn for every rank in its own goroutine and fails the test
// with every rank's error. The first failure ends the job's context, so
// ranks waiting for the failed one stop too.
func (j *job[T]) ranks(fn func(r int) error) {
	j.t.Helper()
	errs := j.try(fn)
	for r, err := range errs {
		require.NoError(j.t, err, "rank %d", r)
	}
}

// try is ranks returning the errors instead of failing.
func (j *job[T]) try(fn func(r int) error) []error {
	return testutils.GoRanks(len(j.comms), j.stop, fn)
}

// expert is an expert of the tests: out = f_e(x), in float32.
type expert func(e int, x, out []float32)

func identity(_ int, x, out []float32) { copy(out, x) }

// scaled is expert e multiplying by 1 + e%4: a wrong expert shows.
func scaled(e int, x, out []float32) {
	s := float32(1 + e%4)
	for i, v := range x {
		out[i] = s * v
	}
}

// linear returns experts out = W_e x + b_e with small random W and b.
func linear(seed uint64, numExperts, hidden int) expert {
	rng := rand.New(rand.NewPCG(seed, 7))
	w := make([][]float32, numExperts)
	b := make([][]float32, numExperts)
	for e := range numExperts {
		w[e] = make([]float32, hidden*hidden)
		b[e] = make([]float32, hidden)
		for i := range w[e] {
			w[e][i] = float32(rng.NormFloat64()) / float32(math.Sqrt(float64(hidden)))
		}
		for i := range b[e] {
			b[e][i] = float32(rng.NormFloat64()) * 0.1
		}
	}
	return func(e int, x, out []float32) {
		for i := range hidden {
			s := b[e][i]
			row := w[e][i*hidden : (i+1)*hidden]
			for j, v := range x {
				s += row[j] * v
			}
			out[i] = s
		}
	}
}

// rankData is one rank's input of a round.
type rankData struct {
	tokens int
	x      []float32 // [tokens][hidden], values exact in T
	idx    []int32
	w      []float32
}

// exactData makes inputs whose dispatch+combine is exact in T with the
// identity and scaled experts: small integers, and equal power-of-two
// weights per token (1/8 for top-8), so every partial sum is
// representable in bf16 too.
func exactData(seed uint64, rank, tokens, hidden, topk, numExperts int, skew moe.Skew) rankData {
	idx, _, err := moe.RandomRouting(seed, rank, tokens, topk, numExperts, skew)
	if err != nil {
		panic(err)
	}
	rng := rand.New(rand.NewPCG(seed, uint64(100+rank)))
	d := rankData{tokens: tokens, x: make([]float32, tokens*hidden), idx: idx, w: make([]float32, len(idx))}
	for i := range d.x {
		d.x[i] = float32(rng.IntN(9) - 4)
	}
	w := float32(1) / float32(int(1)<<bitsFor(topk))
	for i, e := range idx {
		if e >= 0 {
			d.w[i] = w
		}
	}
	return d
}

// bitsFor is ceil(log2(k)).
func bitsFor(k int) int {
	b := 0
	for 1<<b < k {
		b++
	}
	return b
}

// randomData makes inputs with normal values and router-like weights.
func randomData(seed uint64, rank, tokens, hidden, topk, numExperts int, skew moe.Skew) rankData {
	idx, w, err := moe.RandomRouting(seed, rank, tokens, topk, numExperts, skew)
	if err != nil {
		panic(err)
	}
	rng := rand.New(rand.NewPCG(seed, uint64(200+rank)))
	d := rankData{tokens: tokens, x: make([]float32, tokens*hidden), idx: idx, w: w}
	for i := range d.x {
		d.x[i] = float32(rng.NormFloat64())
	}
	return d
}

// toElems converts float32s to T (exact for the values of exactData).
func toElems[T moe.Elem](v []float32) []T {
	out := make([]T, len(v))
	for i, f := range v {
		out[i] = moe.FromFloat32[T](f)
	}
	return out
}

// reference is the single-process result of dispatch, experts and combine
// for one rank's data: out[t] = sum over kept k of w * f_e(x[t]), in
// float64 over float32 expert outputs of the input as T would carry it.
func reference[T moe.Elem](d rankData, hidden, topk int, f expert) []float64 {
	out := make([]float64, d.tokens*hidden)
	xr := make([]float32, hidden)
	y := make([]float32, hidden)
	for t := range d.tokens {
		for i := range hidden {
			xr[i] = moe.ToFloat32(moe.FromFloat32[T](d.x[t*hidden+i]))
		}
		for k := range topk {
			e := d.idx[t*topk+k]
			if e < 0 {
				continue
			}
			f(int(e), xr, y)
			for i := range hidden {
				out[t*hidden+i] += float64(d.w[t*topk+k]) * float64(y[i])
			}
		}
	}
	return out
}

// normalRound runs one Dispatch, the experts f on every received row, and
// Combine on rank r, writing the combined tokens to out.
func normalRound[T moe.Elem](ctx context.Context, h *moe.Handle[T], d rankData, f expert, out []T, zeroCopy bool) (*moe.Recv[T], error) {
	cfg := h.Config()
	H, K := cfg.Hidden, cfg.TopK
	x := toElems[T](d.x)
	if zeroCopy {
		in := h.Input()[:len(x)]
		copy(in, x)
		x = in
	}
	recv, err := h.Dispatch(ctx, x, d.idx, d.w)
	if err != nil {
		return nil, err
	}
	if err := checkRecv(h, recv, K); err != nil {
		return recv, err
	}
	scratch := make([]float32, 2*H)
	xf := make([]float32, H)
	base := h.Rank() * h.LocalExperts()
	for i := range recv.NumRecv {
		moe.ExpertOutput(recv.X[i*H:(i+1)*H], recv, i, K, scratch, func(le int, x []T, acc []float32) {
			for j, v := range x {
				xf[j] = moe.ToFloat32(v)
			}
			f(base+le, xf, acc)
		})
	}
	return recv, h.Combine(ctx, recv.X, out)
}

// checkRecv checks the invariants of a Recv that need no peer data.
func checkRecv[T moe.Elem](h *moe.Handle[T], recv *moe.Recv[T], K int) error {
	n := h.Size()
	if recv.RankOffsets[0] != 0 || recv.RankOffsets[n] != recv.NumRecv {
		return fmt.Errorf("rank offsets %v for %d rows", recv.RankOffsets, recv.NumRecv)
	}
	per := make([]int, h.LocalExperts())
	for i := range recv.NumRecv {
		any := false
		for k := range K {
			if e := recv.TopkIdx[i*K+k]; e >= 0 {
				per[e]++
				any = true
			} else if recv.TopkWeights[i*K+k] != 0 {
				return fmt.Errorf("row %d slot %d: weight %g for no local expert", i, k, recv.TopkWeights[i*K+k])
			}
		}
		if !any {
			return fmt.Errorf("row %d has no local expert", i)
		}
	}
	for e, c := range per {
		if c != recv.TokensPerExpert[e] || c != recv.Experts.Count(e) {
			return fmt.Errorf("local expert %d: %d rows chose it, TokensPerExpert %d, Experts %d", e, c, recv.TokensPerExpert[e], recv.Experts.Count(e))
		}
	}
	return nil
}

// llRound runs one DispatchLL, the experts f on every received row (in
// place, unweighted) and CombineLL on rank r.
func llRound[T moe.Elem](ctx context.Context, h *moe.Handle[T], d rankData, f expert, out []T) error {
	cfg := h.Config()
	H := cfg.Hidden
	recv, err := h.DispatchLL(ctx, toElems[T](d.x), d.idx)
	if err != nil {
		return err
	}
	xf := make([]float32, H)
	yf := make([]float32, H)
	base := h.Rank() * h.LocalExperts()
	for le := range h.LocalExperts() {
		for s := range h.Size() {
			rows := recv.Rows(le, s)
			for j := 0; j < len(rows); j += H {
				for i, v := range rows[j : j+H] {
					xf[i] = moe.ToFloat32(v)
				}
				f(base+le, xf, yf)
				moe.Store(rows[j:j+H], yf)
			}
		}
	}
	return h.CombineLL(ctx, recv.X, d.w, out)
}

// compare checks got against want: exactly, or within tol relative to the
// row's largest magnitude (plus tol absolute).
func compare[T moe.Elem](got []T, want []float64, hidden int, tol float64) error {
	for t := 0; t*hidden < len(want); t++ {
		big := 0.0
		for _, v := range want[t*hidden : (t+1)*hidden] {
			big = max(big, math.Abs(v))
		}
		for i := t * hidden; i < (t+1)*hidden; i++ {
			g := float64(moe.ToFloat32(got[i]))
			if tol == 0 && g != want[i] || math.Abs(g-want[i]) > tol*(1+big) {
				return fmt.Errorf("token %d element %d: got %g, want %g (tolerance %g)", t, i-t*hidden, g, want[i], tol)
			}
		}
	}
	return nil
}

package moe_test

import (
	"context"
	"fmt"
	"testing"
	"time"

	"github.com/rdmactor/rdmactor/internal/testutils"
	"github.com/rdmactor/rdmactor/moe"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// roundCase is one configuration of the dispatch/combine tests.
type roundCase struct {
	name       string
	ranks      int
	hidden     int
	topk       int
	experts    int
	tokens     func(rank, round int) int
	skew       moe.Skew
	route      func(d *rankData, rank int) // rewrites the routing, if set
	contexts   int
	perRow     bool
	zeroCopy   bool
	rounds     int
	lowLatency bool
}

func tokensConst(n int) func(int, int) int { return func(int, int) int { return n } }

// cases are the edge cases a dispatch must handle: a rank that
// receives nothing, every token to one expert, dropped slots, 1 and 3
// ranks, hidden sizes that are not multiples of 8, empty ranks, and
// changing token counts across rounds (buffers reused).
func cases() []roundCase {
	T := testutils.Scale(96, 24)
	return []roundCase{
		{name: "2 ranks", ranks: 2, hidden: 64, topk: 4, experts: 8, tokens: tokensConst(T)},
		{name: "1 rank", ranks: 1, hidden: 16, topk: 2, experts: 4, tokens: tokensConst(T)},
		{name: "3 ranks hidden 7", ranks: 3, hidden: 7, topk: 3, experts: 9, tokens: tokensConst(T)},
		{name: "4 ranks hidden 130 top-8", ranks: 4, hidden: 130, topk: 8, experts: 32, tokens: tokensConst(T)},
		{name: "dropped slots", ranks: 3, hidden: 24, topk: 4, experts: 12, tokens: tokensConst(T), skew: moe.Skew{Drop: 0.4}},
		{name: "all dropped", ranks: 2, hidden: 8, topk: 2, experts: 4, tokens: tokensConst(T), skew: moe.Skew{Drop: 1}},
		{name: "zipf", ranks: 3, hidden: 33, topk: 4, experts: 24, tokens: tokensConst(T), skew: moe.Skew{Zipf: 1.2}},
		{name: "rank 1 receives nothing", ranks: 3, hidden: 20, topk: 2, experts: 6, tokens: tokensConst(T),
			route: func(d *rankData, _ int) {
				for i, e := range d.idx { // experts 2, 3 live on rank 1: move them to rank 2
					if e == 2 || e == 3 {
						d.idx[i] = e + 2
					}
				}
				dedupe(d, 6)
			}},
		{name: "all tokens to one expert", ranks: 3, hidden: 12, topk: 3, experts: 6, tokens: tokensConst(T),
			route: func(d *rankData, _ int) {
				for t := range d.tokens {
					d.idx[t*3], d.idx[t*3+1], d.idx[t*3+2] = 5, -1, -1
				}
			}},
		{name: "changing and empty ranks", ranks: 3, hidden: 40, topk: 4, experts: 12, rounds: 4,
			tokens: func(rank, round int) int { return (rank*7 + round*5) % 4 * T / 3 }},
		{name: "two contexts", ranks: 3, hidden: 32, topk: 4, experts: 12, tokens: tokensConst(T), contexts: 2},
		{name: "one put per row", ranks: 2, hidden: 24, topk: 4, experts: 8, tokens: tokensConst(T), perRow: true},
		{name: "zero copy input", ranks: 2, hidden: 24, topk: 4, experts: 8, tokens: tokensConst(T), zeroCopy: true},
	}
}

// dedupe turns repeated experts of a token into dropped slots.
func dedupe(d *rankData, _ int) {
	k := len(d.idx) / d.tokens
	for t := range d.tokens {
		row := d.idx[t*k : (t+1)*k]
		for i := range row {
			for j := range i {
				if row[j] == row[i] && row[i] >= 0 {
					row[i] = -1
					d.w[t*k+i] = 0
				}
			}
		}
	}
}

// runCase runs c's rounds with expert f on every rank and checks each
// rank's combined tokens against the single-process reference: exactly
// when exact (inputs from exactData), else within tol.
func runCase[T moe.Elem](t *testing.T, c roundCase, f expert, exact bool, tol float64) {
	maxT := 0
	for r := range c.ranks {
		for k := range max(c.rounds, 1) {
			maxT = max(maxT, c.tokens(r, k))
		}
	}
	cfg := moe.Config{Sizes: moe.Sizes{Hidden: c.hidden, TopK: c.topk, NumExperts: c.experts}, Contexts: c.contexts, PerRow: c.perRow}
	if c.lowLatency {
		cfg.MaxLLTokens = max(maxT, 1)
	} else {
		cfg.MaxTokens = max(maxT, 1)
	}
	j := newJob[T](t, c.ranks, cfg)
	for round := range max(c.rounds, 1) {
		j.ranks(func(r int) error {
			seed := uint64(1000*round + 17)
			var d rankData
			if exact {
				d = exactData(seed, r, c.tokens(r, round), c.hidden, c.topk, c.experts, c.skew)
			} else {
				d = randomData(seed, r, c.tokens(r, round), c.hidden, c.topk, c.experts, c.skew)
			}
			if c.route != nil && d.tokens > 0 {
				c.route(&d, r)
			}
			want := reference[T](d, c.hidden, c.topk, f)
			out := make([]T, d.tokens*c.hidden)
			var err error
			if c.lowLatency {
				err = llRound(j.ctx, j.hs[r], d, f, out)
			} else {
				_, err = normalRound(j.ctx, j.hs[r], d, f, out, c.zeroCopy)
			}
			if err != nil {
				return fmt.Errorf("round %d: %w", round, err)
			}
			tol := tol
			if exact {
				tol = 0
			}
			if err := compare(out, want, c.hidden, tol); err != nil {
				return fmt.Errorf("round %d: %w", round, err)
			}
			return nil
		})
	}
}

// TestIdentityExact: dispatch then combine with identity experts returns
// x * sum(weights) per token, exactly for integer-valued inputs, in
// float32 and bf16.
func TestIdentityExact(t *testing.T) {
	for _, c := range cases() {
		t.Run(c.name+"/float32", func(t *testing.T) { runCase[float32](t, c, identity, true, 0) })
		t.Run(c.name+"/bf16", func(t *testing.T) { runCase[uint16](t, c, identity, true, 0) })
	}
}

// TestScaledExpertsExact: expert e multiplies by 1+e%4, so a row that
// reached the wrong expert, or the right one twice, changes the sum.
func TestScaledExpertsExact(t *testing.T) {
	for _, c := range cases() {
		t.Run(c.name+"/float32", func(t *testing.T) { runCase[float32](t, c, scaled, true, 0) })
		t.Run(c.name+"/bf16", func(t *testing.T) { runCase[uint16](t, c, scaled, true, 0) })
	}
}

// TestLinearExpertsMatchReference: per-expert linear layers on random
// data match the single-process reference within float tolerance
// (float32: summation order; bf16: each rank's partial sum is rounded to
// bf16 before it travels back, 2^-8 relative, and once more at the end).
func TestLinearExpertsMatchReference(t *testing.T) {
	for _, c := range cases() {
		f := linear(5, c.experts, c.hidden)
		t.Run(c.name+"/float32", func(t *testing.T) { runCase[float32](t, c, f, false, 1e-5) })
		t.Run(c.name+"/bf16", func(t *testing.T) { runCase[uint16](t, c, f, false, 3e-2) })
	}
}

// TestLowLatency runs the same cases through DispatchLL/CombineLL.
func TestLowLatency(t *testing.T) {
	for _, c := range cases() {
		c.lowLatency = true
		f := linear(9, c.experts, c.hidden)
		t.Run(c.name+"/identity/bf16", func(t *testing.T) { runCase[uint16](t, c, identity, true, 0) })
		t.Run(c.name+"/scaled/float32", func(t *testing.T) { runCase[float32](t, c, scaled, true, 0) })
		t.Run(c.name+"/linear/float32", func(t *testing.T) { runCase[float32](t, c, f, false, 1e-5) })
		t.Run(c.name+"/linear/bf16", func(t *testing.T) { runCase[uint16](t, c, f, false, 3e-2) })
	}
}

// TestModesAlternate: normal and low-latency rounds on one Handle, in any
// order, each with its own buffers and signals.
func TestModesAlternate(t *testing.T) {
	const n, H, K, E = 3, 24, 4, 12
	T := testutils.Scale(64, 16)
	j := newJob[uint16](t, n, moe.Config{Sizes: moe.Sizes{Hidden: H, TopK: K, NumExperts: E, MaxTokens: T, MaxLLTokens: T}})
	for round, ll := range []bool{false, true, true, false, true, false, false, true} {
		j.ranks(func(r int) error {
			d := exactData(uint64(round), r, T-r, H, K, E, moe.Skew{})
			out := make([]uint16, d.tokens*H)
			var err error
			if ll {
				err = llRound(j.ctx, j.hs[r], d, scaled, out)
			} else {
				_, err = normalRound(j.ctx, j.hs[r], d, scaled, out, false)
			}
			if err != nil {
				return fmt.Errorf("round %d: %w", round, err)
			}
			return compare(out, reference[uint16](d, H, K, scaled), H, 0)
		})
	}
}

// TestOrder: each dispatch is followed by exactly one combine.
func TestOrder(t *testing.T) {
	j := newJob[float32](t, 1, moe.Config{Sizes: moe.Sizes{Hidden: 4, TopK: 1, NumExperts: 2, MaxTokens: 2, MaxLLTokens: 2}})
	h := j.hs[0]
	out := make([]float32, 4)
	assert.ErrorIs(t, h.Combine(j.ctx, nil, out), moe.ErrOrder)
	assert.ErrorIs(t, h.CombineLL(j.ctx, nil, nil, out), moe.ErrOrder)
	recv, err := h.Dispatch(j.ctx, []float32{1, 2, 3, 4}, []int32{1}, []float32{1})
	require.NoError(t, err)
	_, err = h.Dispatch(j.ctx, []float32{1, 2, 3, 4}, []int32{1}, []float32{1})
	assert.ErrorIs(t, err, moe.ErrOrder)
	_, err = h.DispatchLL(j.ctx, []float32{1, 2, 3, 4}, []int32{1})
	assert.ErrorIs(t, err, moe.ErrOrder)
	assert.ErrorIs(t, h.CombineLL(j.ctx, recv.X, []float32{1}, out), moe.ErrOrder)
	require.NoError(t, h.Combine(j.ctx, recv.X, out))
	assert.Equal(t, []float32{1, 2, 3, 4}, out)
}

// TestBadArgumentsFailEveryRank: one rank's bad routing fails the call on
// every rank alike, before any row moves, and the Handle stays usable.
func TestBadArgumentsFailEveryRank(t *testing.T) {
	const n, H, K, E, T = 3, 8, 2, 6, 10
	j := newJob[float32](t, n, moe.Config{Sizes: moe.Sizes{Hidden: H, TopK: K, NumExperts: E, MaxTokens: T}})
	errs := make([]error, n)
	j.ranks(func(r int) error {
		d := exactData(1, r, T, H, K, E, moe.Skew{})
		if r == 1 {
			d.idx[3] = E // no such expert
		}
		_, errs[r] = j.hs[r].Dispatch(j.ctx, d.x, d.idx, d.w)
		return nil
	})
	for r, err := range errs {
		assert.ErrorIs(t, err, moe.ErrBadArgument, "rank %d", r)
		assert.NotErrorIs(t, err, moe.ErrBroken, "rank %d", r)
	}
	j.ranks(func(r int) error { // too many tokens on rank 2
		tokens := T
		if r == 2 {
			tokens = T + 1
		}
		d := exactData(2, r, tokens, H, K, E, moe.Skew{})
		_, errs[r] = j.hs[r].Dispatch(j.ctx, d.x, d.idx, d.w)
		return nil
	})
	for r, err := range errs {
		assert.ErrorIs(t, err, moe.ErrBadArgument, "rank %d", r)
	}
	for round := range 2 {
		j.ranks(func(r int) error {
			d := exactData(uint64(3+round), r, T, H, K, E, moe.Skew{})
			out := make([]float32, T*H)
			if _, err := normalRound(j.ctx, j.hs[r], d, identity, out, false); err != nil {
				return err
			}
			return compare(out, reference[float32](d, H, K, identity), H, 0)
		})
	}
}

// TestDeadline: a rank that never dispatches makes its peers' waits end
// at their deadline, and breaks their Handles.
func TestDeadline(t *testing.T) {
	const H, K, E, T = 8, 2, 4, 4
	j := newJob[float32](t, 2, moe.Config{Sizes: moe.Sizes{Hidden: H, TopK: K, NumExperts: E, MaxTokens: T}})
	ctx, cancel := context.WithTimeout(j.ctx, 200*time.Millisecond)
	defer cancel()
	d := exactData(1, 0, T, H, K, E, moe.Skew{})
	_, err := j.hs[0].Dispatch(ctx, d.x, d.idx, d.w)
	require.Error(t, err)
	assert.ErrorIs(t, err, context.DeadlineExceeded)
	_, err = j.hs[0].Dispatch(j.ctx, d.x, d.idx, d.w)
	assert.ErrorIs(t, err, moe.ErrBroken)
}

func TestConfigErrors(t *testing.T) {
	j := newJob[float32](t, 2, moe.Config{Sizes: moe.Sizes{Hidden: 4, TopK: 1, NumExperts: 2, MaxTokens: 1}})
	for _, c := range []moe.Config{
		{Sizes: moe.Sizes{Hidden: 4, TopK: 1, NumExperts: 3, MaxTokens: 1}},  // not a multiple of 2 ranks
		{Sizes: moe.Sizes{Hidden: 0, TopK: 1, NumExperts: 2, MaxTokens: 1}},  // no hidden
		{Sizes: moe.Sizes{Hidden: 4, TopK: 1, NumExperts: 2}},                // no capacity
		{Sizes: moe.Sizes{Hidden: 4, TopK: 1, NumExperts: 2, MaxTokens: -1}}, // negative
	} {
		_, err := moe.New[float32](j.ctx, j.comms[0], c)
		assert.ErrorIs(t, err, moe.ErrBadArgument, "%+v", c)
	}
	_, err := moe.New[float32](j.ctx, j.comms[0], moe.Config{Sizes: moe.Sizes{Hidden: 4, TopK: 1, NumExperts: 2, MaxTokens: 1}, Context: 5})
	assert.Error(t, err)
}

// Package moeex is what the MoE examples (examples/moe on CPUs,
// examples/moe_gpu on GPUs) share: the -mode and routing flags, and each
// rank's routing from them.
package moeex

import (
	"flag"
	"fmt"
	"path/filepath"
	"strings"

	"github.com/rdmactor/rdmactor/moe"
)

// Routing is how tokens are routed: a router trace to replay, else random
// top-k routing (moe.RandomRouting) with a skew and a seed.
type Routing struct {
	Trace string  // -routing: the trace file (.npz, .npy, .csv; moe.ReadTrace); "" for random
	Dist  string  // -skew: "uniform" or "zipf"
	Zipf  float64 // -zipf: the Zipf exponent with -skew zipf
	Drop  float64 // -drop: probability that a top-k slot is dropped (-1)
	Seed  uint64  // -seed: the routing and data seed
}

// Flags is the flags the MoE examples share: -mode and Routing's.
type Flags struct {
	Routing
	Modes []string // -mode: "normal" and/or "ll", split by Check
	modes string
}

// AddFlags registers Flags on flag.CommandLine; call Check after
// flag.Parse.
func AddFlags() *Flags {
	f := &Flags{}
	flag.StringVar(&f.modes, "mode", "normal,ll", "modes to run, comma-separated: normal, ll")
	flag.StringVar(&f.Trace, "routing", "", "replay this router trace (.npz, .npy, .csv; see moe.Trace) instead of random routing")
	flag.StringVar(&f.Dist, "skew", "uniform", "random routing: uniform or zipf")
	flag.Float64Var(&f.Zipf, "zipf", 1.0, "Zipf exponent with -skew zipf")
	flag.Float64Var(&f.Drop, "drop", 0, "probability that a top-k slot is dropped (-1)")
	flag.Uint64Var(&f.Seed, "seed", 1, "routing and data seed")
	return f
}

// Check sets Modes from -mode and returns an error for a mode other than
// normal or ll, or a -skew other than uniform or zipf.
func (f *Flags) Check() error {
	f.Modes = strings.Split(f.modes, ",")
	for _, m := range f.Modes {
		if m != "normal" && m != "ll" {
			return fmt.Errorf("-mode: unknown mode %q", m)
		}
	}
	if f.Dist != "uniform" && f.Dist != "zipf" {
		return fmt.Errorf("-skew %q: want uniform or zipf", f.Dist)
	}
	return nil
}

// Skew is the moe.Skew of random routing.
func (r *Routing) Skew() moe.Skew {
	s := moe.Skew{Drop: r.Drop}
	if r.Dist == "zipf" {
		s.Zipf = r.Zipf
	}
	return s
}

// RankRouting is one rank's routing: topk expert ids (-1: dropped) and
// weights per token.
type RankRouting struct {
	Idx    []int32
	W      []float32
	Tokens int        // this rank's tokens
	MaxT   int        // the most tokens on any rank
	Desc   string     // how it was made, for a header line
	Trace  *moe.Trace // the replayed trace; nil for random routing
}

// Rank is rank me's routing in a job of n ranks: its slice of the trace,
// or tokens tokens of random routing over experts experts. It returns
// moe.ReadTrace's and moe.RandomRouting's errors, and one for a trace of
// experts or top-k other than the job's.
func (r *Routing) Rank(me, n, tokens, topk, experts int) (RankRouting, error) {
	var rr RankRouting
	if r.Trace != "" {
		t, err := moe.ReadTrace(r.Trace)
		if err != nil {
			return rr, err
		}
		if err := t.Check(experts); err != nil {
			return rr, err
		}
		if t.TopK != topk {
			return rr, fmt.Errorf("trace %s is top-%d, -topk is %d", r.Trace, t.TopK, topk)
		}
		rr.Idx, rr.W = t.Rank(me, n)
		rr.Tokens, rr.MaxT, rr.Trace = len(rr.Idx)/topk, t.MaxRankTokens(n), t
		rr.Desc = fmt.Sprintf("trace %s (%d tokens)", filepath.Base(r.Trace), t.Tokens)
		return rr, nil
	}
	rr.Desc = "uniform"
	if r.Dist == "zipf" {
		rr.Desc = fmt.Sprintf("zipf %g", r.Zipf)
	}
	if r.Drop > 0 {
		rr.Desc += fmt.Sprintf(", %g dropped", r.Drop)
	}
	rr.Desc += fmt.Sprintf(", seed %d", r.Seed)
	var err error
	rr.Idx, rr.W, err = moe.RandomRouting(r.Seed, me, tokens, topk, experts, r.Skew())
	rr.Tokens, rr.MaxT = tokens, tokens
	return rr, err
}

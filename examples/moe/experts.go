package main

import (
	"math/rand/v2"

	"github.com/rdmactor/rdmactor/moe"
)

// expert computes out = f_e(x) for expert e, in float32.
type expert func(e int, x, out []float32)

// expertFunc returns the experts named by -expert: identity, scaled (by
// 1 + e%4, so a row at the wrong expert shows) or linear (out = W_e x +
// b_e with W_e acting on the first 64 elements and broadcast: a small
// per-expert linear layer that stays cheap at hidden 7168).
func expertFunc(name string, numExperts, hidden int) expert {
	switch name {
	case "identity":
		return func(_ int, x, out []float32) { copy(out, x) }
	case "linear":
		const k = 64
		rng := rand.New(rand.NewPCG(42, 1))
		w := make([][]float32, numExperts)
		b := make([]float32, numExperts)
		for e := range w {
			w[e] = make([]float32, k*k)
			for i := range w[e] {
				w[e][i] = float32(rng.NormFloat64() / 8)
			}
			b[e] = float32(rng.NormFloat64() / 8)
		}
		return func(e int, x, out []float32) {
			// Blocks of k elements: out[blk] = W_e x[blk] + b_e.
			for at := 0; at < len(x); at += k {
				m := min(k, len(x)-at)
				for i := range m {
					s := b[e]
					row := w[e][i*k : i*k+m]
					for j, v := range x[at : at+m] {
						s += row[j] * v
					}
					out[at+i] = s
				}
			}
		}
	}
	return func(e int, x, out []float32) {
		s := float32(1 + e%4)
		for i, v := range x {
			out[i] = s * v
		}
	}
}

// reference is the single-process result for this rank's tokens:
// out[t] = sum over kept k of w * f_e(x[t]) in float64, x as T carries it.
func reference[T moe.Elem](in input, hidden, topk int, f expert) []float64 {
	out := make([]float64, in.tokens*hidden)
	xr, y := make([]float32, hidden), make([]float32, hidden)
	for t := range in.tokens {
		for i := range hidden {
			xr[i] = toFloat(moe.FromFloat32[T](in.x[t*hidden+i]))
		}
		for k := range topk {
			e := in.idx[t*topk+k]
			if e < 0 {
				continue
			}
			f(int(e), xr, y)
			for i := range hidden {
				out[t*hidden+i] += float64(in.w[t*topk+k]) * float64(y[i])
			}
		}
	}
	return out
}

func toElems[T moe.Elem](v []float32) []T {
	out := make([]T, len(v))
	for i, f := range v {
		out[i] = moe.FromFloat32[T](f)
	}
	return out
}

func toFloat[T moe.Elem](v T) float32 { return moe.ToFloat32(v) }

func elemSize[T moe.Elem]() int {
	if moe.DTypeName[T]() == "bf16" {
		return 2
	}
	return 4
}

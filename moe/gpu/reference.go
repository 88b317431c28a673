package gpumoe

import (
	"math"

	"github.com/rdmactor/rdmactor/moe"
)

// Reference is the single-process result of a round for one rank's
// tokens, in float64: out[t] = sum over kept k of w[t][k] * f(e) * x[t],
// with x as the dispatch carries it (bf16 bits, or their FP8
// quantization with fp8) and f the stand-in experts. x is [T][hidden],
// idx and w [T][topk].
func Reference(x []uint16, idx []int32, w []float32, hidden, topk int, f Expert, fp8 bool) []float64 {
	T := len(idx) / topk
	out := make([]float64, T*hidden)
	xr := make([]float64, hidden)
	for t := range T {
		row := x[t*hidden : (t+1)*hidden]
		if fp8 {
			for i, v := range DequantizeFP8(QuantizeFP8(row)) {
				xr[i] = float64(v)
			}
		} else {
			for i, v := range row {
				xr[i] = float64(moe.Float32(v))
			}
		}
		for k := range topk {
			e := idx[t*topk+k]
			if e < 0 {
				continue
			}
			c := float64(w[t*topk+k]) * float64(f.Scale(int(e)))
			for i := range hidden {
				out[t*hidden+i] += c * xr[i]
			}
		}
	}
	return out
}

// RelError is the largest error of got (bf16 bits, [T][hidden]) against
// want over all tokens, relative to 1 + the token's largest |want| (as
// examples/moe checks).
func RelError(got []uint16, want []float64, hidden int) float64 {
	worst := 0.0
	for t := 0; t+hidden <= len(want); t += hidden {
		big := 0.0
		for _, v := range want[t : t+hidden] {
			big = max(big, math.Abs(v))
		}
		for i := t; i < t+hidden; i++ {
			g := float64(moe.Float32(got[i]))
			if math.IsNaN(g) {
				return math.Inf(1)
			}
			worst = max(worst, math.Abs(g-want[i])/(1+big))
		}
	}
	return worst
}

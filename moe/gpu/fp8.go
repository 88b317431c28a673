package gpumoe

import (
	"math"

	"github.com/rdmactor/rdmactor/moe"
)

// FP8 e4m3 (OCP 8-bit floating point, E4M3: bias 7, no infinities, one
// NaN pattern S.1111.111, largest finite 448), as the low-latency dispatch
// carries it; the Go twin of kernels.cu's e4m3sw/e4m3fsw, bit for bit, and
// of the hardware conversions it uses on sm_89+ (PTX cvt.rn.satfinite.
// e4m3x2.f32: round to nearest even, saturating to +-448).

// FP8Max is the largest finite e4m3 value.
const FP8Max = 448

// FP8Group is the channels per scale (DeepEP's per-128-channel scales).
const FP8Group = 128

// E4M3 rounds f to e4m3: to nearest, ties to even, saturating to +-448;
// NaN becomes 0x7f with f's sign.
func E4M3(f float32) uint8 {
	b := math.Float32bits(f)
	s := uint8(b>>24) & 0x80
	a := math.Abs(float64(f))
	switch {
	case math.IsNaN(a):
		return s | 0x7f
	case a >= FP8Max:
		return s | 0x7e
	case a < 1.0/64: // below the smallest normal, 2^-6: quantum 2^-9
		return s | uint8(math.RoundToEven(a*512))
	}
	_, e := math.Frexp(a) // a = m * 2^e, m in [0.5, 1)
	ex := e - 1           // floor(log2 a)
	q := math.RoundToEven(math.Ldexp(a, 3-ex))
	code := uint32(ex+7) << 3
	if q >= 16 {
		code += 8
		q = 8
	}
	code |= uint32(q) - 8
	return s | uint8(min(code, 0x7e))
}

// E4M3Float is the value of e4m3 bits v (exact).
func E4M3Float(v uint8) float32 {
	e, m := int(v>>3)&15, float64(v&7)
	if e == 15 && m == 7 {
		return float32(math.NaN())
	}
	f := m / 512
	if e > 0 {
		f = math.Ldexp(1+m/8, e-7)
	}
	if v&0x80 != 0 {
		f = -f
	}
	return float32(f)
}

// QuantizeFP8 quantizes a bf16 row as DispatchLL does (DeepEP's
// low-latency FP8 cast): per group of 128 channels, amax = max(1e-4,
// max |x|), q = e4m3(x * (448/amax)), scale = amax * (1/448), in float32.
func QuantizeFP8(x []uint16) (q []uint8, scales []float32) {
	q = make([]uint8, len(x))
	for g := 0; g < len(x); g += FP8Group {
		end := min(g+FP8Group, len(x))
		amax := float32(1e-4)
		for _, v := range x[g:end] {
			amax = max(amax, float32(math.Abs(float64(moe.Float32(v)))))
		}
		s := float32(FP8Max) / amax
		for i := g; i < end; i++ {
			q[i] = E4M3(moe.Float32(x[i]) * s)
		}
		scales = append(scales, amax*float32(1.0/FP8Max))
	}
	return q, scales
}

// DequantizeFP8 is x[i] = e4m3(q[i]) * scales[i/128] in float32.
func DequantizeFP8(q []uint8, scales []float32) []float32 {
	x := make([]float32, len(q))
	for i, v := range q {
		x[i] = E4M3Float(v) * scales[i/FP8Group]
	}
	return x
}

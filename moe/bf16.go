package moe

import "math"

// Elem is the element type of token rows: float32, or bfloat16 carried as
// its bits in a uint16 (the high half of the float32 with the same sign,
// exponent and top 7 mantissa bits). Arithmetic on rows is always done in
// float32.
type Elem interface{ float32 | uint16 }

// BF16 rounds f to the nearest bfloat16, ties to even (as PyTorch's
// c10::BFloat16 and CUDA's __float2bfloat16_rn round). NaN stays a quiet
// NaN with f's sign; infinities stay infinite; values beyond the largest
// finite bfloat16 round to infinity.
func BF16(f float32) uint16 {
	b := math.Float32bits(f)
	if b&0x7fffffff > 0x7f800000 { // NaN: keep it NaN after truncation
		return uint16(b>>16) | 0x40
	}
	b += 0x7fff + (b>>16)&1
	return uint16(b >> 16)
}

// Float32 is the float32 value of bfloat16 bits b (exact).
func Float32(b uint16) float32 { return math.Float32frombits(uint32(b) << 16) }

// elemSize is the size of E in bytes.
func elemSize[E Elem]() int {
	var z E
	switch any(z).(type) {
	case float32:
		return 4
	default:
		return 2
	}
}

// DTypeName is "float32" or "bf16" for E.
func DTypeName[E Elem]() string {
	if elemSize[E]() == 4 {
		return "float32"
	}
	return "bf16"
}

// FromFloat32 converts v to E: itself for float32, BF16(v) for bf16.
func FromFloat32[E Elem](v float32) E {
	var z E
	switch p := any(&z).(type) {
	case *float32:
		*p = v
	case *uint16:
		*p = BF16(v)
	}
	return z
}

// ToFloat32 converts v of type E to float32 (exact).
func ToFloat32[E Elem](v E) float32 {
	switch x := any(v).(type) {
	case float32:
		return x
	case uint16:
		return Float32(x)
	}
	return 0
}

// AXPY adds w*x[i] to acc[i] in float32, for i < len(acc); x is one row
// of E, at least len(acc) long. It is the accumulation of combine and of
// an expert that weights its outputs (vectorized on amd64 with AVX2+FMA).
func AXPY[E Elem](acc []float32, w float32, x []E) {
	x = x[:len(acc)]
	switch x := any(x).(type) {
	case []float32:
		axpyF32(acc, w, x)
	case []uint16:
		axpyBF16(acc, w, x)
	}
}

// Scale sets acc[i] = w*x[i] in float32, for i < len(acc).
func Scale[E Elem](acc []float32, w float32, x []E) {
	x = x[:len(acc)]
	switch x := any(x).(type) {
	case []float32:
		scaleF32(acc, w, x)
	case []uint16:
		scaleBF16(acc, w, x)
	}
}

// Store writes src to dst as E: a copy for float32, BF16 rounding (ties to
// even) for bf16; dst is at least len(src) long.
func Store[E Elem](dst []E, src []float32) {
	dst = dst[:len(src)]
	switch d := any(dst).(type) {
	case []float32:
		copy(d, src)
	case []uint16:
		storeBF16(d, src)
	}
}

// maxSumRows is the most rows SumRows adds with the fused kernel; more
// go through a float32 accumulator row.
const maxSumRows = 64

// SumRows sets dst[i] to the float32 sum, left to right, of
// w[j]*rows[j][i] over the rows j, rounded once to E (BF16 for bf16); dst
// gets zeros when there are no rows. Each row is at least len(dst) long;
// acc is scratch of len(dst) float32s, used only for more than
// 64 rows or without vector kernels. It is the sum of both combines, one
// pass over the rows with the accumulator in registers.
func SumRows[E Elem](dst []E, rows [][]E, w []float32, acc []float32) {
	n := len(dst)
	switch {
	case len(rows) == 0:
		clear(dst)
		return
	case n == 0:
		return
	case len(rows) > maxSumRows:
		acc = acc[:n]
		Scale(acc, w[0], rows[0])
		for j := 1; j < len(rows); j++ {
			AXPY(acc, w[j], rows[j])
		}
		Store(dst, acc)
		return
	}
	var buf [maxSumRows]*E
	ptrs := buf[:len(rows)]
	for j, r := range rows {
		ptrs[j] = &r[:n][0]
	}
	for i := sumRowsVec(dst, ptrs, w); i < n; i++ {
		a := float32(w[0] * ToFloat32(rows[0][i]))
		for j := 1; j < len(rows); j++ {
			a += float32(w[j] * ToFloat32(rows[j][i]))
		}
		dst[i] = FromFloat32[E](a)
	}
}

// Generic (portable) kernels; kernels_amd64.go swaps in vector versions.
// Products are converted explicitly so that no compiler fuses them into
// an FMA: every kernel rounds the product, then the sum, as the vector
// kernels do.

func axpyF32Go(acc []float32, w float32, x []float32) {
	x = x[:len(acc)]
	for i := range acc {
		acc[i] += float32(w * x[i])
	}
}

func axpyBF16Go(acc []float32, w float32, x []uint16) {
	x = x[:len(acc)]
	for i := range acc {
		acc[i] += float32(w * math.Float32frombits(uint32(x[i])<<16))
	}
}

func scaleF32Go(acc []float32, w float32, x []float32) {
	x = x[:len(acc)]
	for i := range acc {
		acc[i] = float32(w * x[i])
	}
}

func scaleBF16Go(acc []float32, w float32, x []uint16) {
	x = x[:len(acc)]
	for i := range acc {
		acc[i] = float32(w * math.Float32frombits(uint32(x[i])<<16))
	}
}

func storeBF16Go(dst []uint16, src []float32) {
	dst = dst[:len(src)]
	for i, f := range src {
		dst[i] = BF16(f)
	}
}

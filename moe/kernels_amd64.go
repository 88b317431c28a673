//go:build !purego

package moe

import "golang.org/x/sys/cpu"

// The vector kernels need AVX2; without it the portable ones run. There
// are no AVX-512 versions: Zen 4 executes a 512-bit operation as two
// 256-bit halves, so they would not be faster there.
var useAVX2 = cpu.X86.HasAVX2

//go:noescape
func axpyF32AVX2(acc, x *float32, n int, w float32)

//go:noescape
func scaleF32AVX2(acc, x *float32, n int, w float32)

//go:noescape
func axpyBF16AVX2(acc *float32, x *uint16, n int, w float32)

//go:noescape
func scaleBF16AVX2(acc *float32, x *uint16, n int, w float32)

//go:noescape
func storeBF16AVX2(dst *uint16, src *float32, n int)

// Each wrapper runs the vector kernel on the largest multiple of 8
// elements and the portable kernel on the rest (vec). Callers pass slices
// of equal length.

func axpyF32(acc []float32, w float32, x []float32)  { vec(acc, w, x, axpyF32AVX2, axpyF32Go) }
func scaleF32(acc []float32, w float32, x []float32) { vec(acc, w, x, scaleF32AVX2, scaleF32Go) }
func axpyBF16(acc []float32, w float32, x []uint16)  { vec(acc, w, x, axpyBF16AVX2, axpyBF16Go) }
func scaleBF16(acc []float32, w float32, x []uint16) { vec(acc, w, x, scaleBF16AVX2, scaleBF16Go) }

// vec is the wrappers' split: simd on the largest multiple of 8 elements,
// tail on the rest.
func vec[X any](acc []float32, w float32, x []X, simd func(acc *float32, x *X, n int, w float32), tail func([]float32, float32, []X)) {
	if v := len(acc) &^ 7; useAVX2 && v > 0 {
		simd(&acc[0], &x[0], v, w)
		acc, x = acc[v:], x[v:]
	}
	tail(acc, w, x)
}

func storeBF16(dst []uint16, src []float32) {
	if v := len(src) &^ 7; useAVX2 && v > 0 {
		storeBF16AVX2(&dst[0], &src[0], v)
		dst, src = dst[v:], src[v:]
	}
	storeBF16Go(dst, src)
}

//go:noescape
func sumRowsBF16AVX2(dst *uint16, rows **uint16, w *float32, nrows, n int)

//go:noescape
func sumRowsF32AVX2(dst *float32, rows **float32, w *float32, nrows, n int)

// sumRowsVec runs the vector sum on the largest multiple of 16 (bf16) or
// 8 (float32) elements and returns how many it did (0 without AVX2).
func sumRowsVec[E Elem](dst []E, rows []*E, w []float32) int {
	if !useAVX2 {
		return 0
	}
	switch d := any(dst).(type) {
	case []uint16:
		v := len(d) &^ 15
		if v > 0 {
			sumRowsBF16AVX2(&d[0], &any(rows).([]*uint16)[0], &w[0], len(rows), v)
		}
		return v
	case []float32:
		v := len(d) &^ 7
		if v > 0 {
			sumRowsF32AVX2(&d[0], &any(rows).([]*float32)[0], &w[0], len(rows), v)
		}
		return v
	}
	return 0
}

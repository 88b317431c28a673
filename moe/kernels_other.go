//go:build !amd64 || purego

package moe

// Portable kernels only (no vector versions for this platform, or the
// purego tag asks for none).

func axpyF32(acc []float32, w float32, x []float32)  { axpyF32Go(acc, w, x) }
func scaleF32(acc []float32, w float32, x []float32) { scaleF32Go(acc, w, x) }
func axpyBF16(acc []float32, w float32, x []uint16)  { axpyBF16Go(acc, w, x) }
func scaleBF16(acc []float32, w float32, x []uint16) { scaleBF16Go(acc, w, x) }
func storeBF16(dst []uint16, src []float32)          { storeBF16Go(dst, src) }

func sumRowsVec[E Elem](dst []E, rows []*E, w []float32) int { return 0 }

package moe

import (
	"math"
	"math/rand/v2"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// TestBF16RoundsToNearestEven checks BF16 against a model that rounds
// through float64: the nearest bfloat16, ties to the even mantissa.
func TestBF16RoundsToNearestEven(t *testing.T) {
	model := func(f float32) uint16 {
		b := math.Float32bits(f)
		lo, hi := b&^0xffff, (b&^0xffff)+0x10000
		dlo := math.Abs(float64(f) - float64(math.Float32frombits(lo)))
		dhi := math.Abs(float64(math.Float32frombits(hi)) - float64(f))
		switch {
		case dlo < dhi:
			return uint16(lo >> 16)
		case dhi < dlo:
			return uint16(hi >> 16)
		case (lo>>16)&1 == 0:
			return uint16(lo >> 16)
		}
		return uint16(hi >> 16)
	}
	cases := []struct {
		name string
		in   float32
		want uint16
	}{
		{"one", 1, 0x3f80},
		{"tie to even down", math.Float32frombits(0x3f808000), 0x3f80},
		{"tie to even up", math.Float32frombits(0x3f818000), 0x3f82},
		{"above tie", math.Float32frombits(0x3f808001), 0x3f81},
		{"max float32 to inf", math.MaxFloat32, 0x7f80},
		{"-inf", float32(math.Inf(-1)), 0xff80},
		{"-0", float32(math.Copysign(0, -1)), 0x8000},
		{"smallest subnormal", math.Float32frombits(1), 0},
	}
	for _, c := range cases {
		assert.Equal(t, c.want, BF16(c.in), c.name)
	}
	nan := BF16(float32(math.NaN()))
	assert.True(t, math.IsNaN(float64(Float32(nan))), "NaN stays NaN")
	assert.True(t, math.IsNaN(float64(Float32(BF16(math.Float32frombits(0x7f800001))))), "signalling NaN with low payload stays NaN")
	rng := rand.New(rand.NewPCG(1, 2))
	for range 200000 {
		f := math.Float32frombits(rng.Uint32())
		if math.IsNaN(float64(f)) || math.IsInf(float64(f), 0) {
			continue
		}
		if math.Abs(float64(f)) > 3.38e38 { // model's hi overflows to NaN bits
			continue
		}
		require.Equal(t, model(f), BF16(f), "%g (%#08x)", f, math.Float32bits(f))
	}
}

// TestKernelsMatchPortable runs the vector kernels against the portable
// ones on every length up to 70 and on values that include NaN, infinity
// and ties: the results must be equal bit for bit.
func TestKernelsMatchPortable(t *testing.T) {
	rng := rand.New(rand.NewPCG(3, 4))
	special := []float32{float32(math.NaN()), float32(math.Inf(1)), math.Float32frombits(0x3f808000), math.Float32frombits(0x3f818000), 0, -1.5}
	for n := 0; n <= 70; n++ {
		xf := make([]float32, n)
		xb := make([]uint16, n)
		acc0 := make([]float32, n)
		for i := range xf {
			xf[i] = float32(rng.NormFloat64())
			xb[i] = uint16(rng.Uint32())
			acc0[i] = float32(rng.NormFloat64())
			if i%7 == 3 {
				xf[i] = special[i%len(special)]
			}
		}
		w := float32(0.37)
		check := func(name string, got, want []float32) {
			for i := range want {
				require.Equal(t, math.Float32bits(want[i]), math.Float32bits(got[i]), "%s n=%d i=%d", name, n, i)
			}
		}
		a, b := append([]float32(nil), acc0...), append([]float32(nil), acc0...)
		axpyF32(a, w, xf)
		axpyF32Go(b, w, xf)
		check("axpyF32", a, b)
		a, b = append([]float32(nil), acc0...), append([]float32(nil), acc0...)
		axpyBF16(a, w, xb)
		axpyBF16Go(b, w, xb)
		check("axpyBF16", a, b)
		scaleF32(a, w, xf)
		scaleF32Go(b, w, xf)
		check("scaleF32", a, b)
		scaleBF16(a, w, xb)
		scaleBF16Go(b, w, xb)
		check("scaleBF16", a, b)
		d1, d2 := make([]uint16, n), make([]uint16, n)
		storeBF16(d1, xf)
		storeBF16Go(d2, xf)
		require.Equal(t, d2, d1, "storeBF16 n=%d", n)
	}
}

func BenchmarkKernels(b *testing.B) {
	const n = 7168
	acc := make([]float32, n)
	xf := make([]float32, n)
	xb := make([]uint16, n)
	for i := range xf {
		xf[i] = float32(i)
		xb[i] = BF16(float32(i))
	}
	b.Run("axpyBF16", func(b *testing.B) {
		b.SetBytes(2 * n)
		for b.Loop() {
			AXPY(acc, 0.5, xb)
		}
	})
	b.Run("axpyBF16Go", func(b *testing.B) {
		b.SetBytes(2 * n)
		for b.Loop() {
			axpyBF16Go(acc, 0.5, xb)
		}
	})
	b.Run("axpyF32", func(b *testing.B) {
		b.SetBytes(4 * n)
		for b.Loop() {
			AXPY(acc, 0.5, xf)
		}
	})
	b.Run("storeBF16", func(b *testing.B) {
		b.SetBytes(2 * n)
		for b.Loop() {
			Store(xb, acc)
		}
	})
	b.Run("storeBF16Go", func(b *testing.B) {
		b.SetBytes(2 * n)
		for b.Loop() {
			storeBF16Go(xb, acc)
		}
	})
}

// TestSumRowsMatchesAccumulator: the fused sum equals Scale, AXPY...,
// Store with the portable kernels, bit for bit, for bf16 and float32, for
// every row count up to 6 and past the fused limit, on lengths around the
// vector width, and allocates nothing.
func TestSumRowsMatchesAccumulator(t *testing.T) {
	rng := rand.New(rand.NewPCG(5, 6))
	for _, nrows := range []int{1, 2, 3, 4, 5, 6, maxSumRows + 1} {
		for _, n := range []int{0, 1, 7, 8, 9, 31, 33, 130} {
			rb := make([][]uint16, nrows)
			rf := make([][]float32, nrows)
			w := make([]float32, nrows)
			for j := range nrows {
				rb[j] = make([]uint16, n+3)
				rf[j] = make([]float32, n+3)
				for i := range rb[j] {
					rb[j][i] = uint16(rng.Uint32())
					rf[j][i] = float32(rng.NormFloat64())
				}
				w[j] = float32(rng.Float64())
			}
			acc := make([]float32, n)
			wantB := make([]uint16, n)
			wantF := make([]float32, n)
			if n > 0 {
				scaleBF16Go(acc, w[0], rb[0][:n])
				for j := 1; j < nrows; j++ {
					axpyBF16Go(acc, w[j], rb[j][:n])
				}
				storeBF16Go(wantB, acc)
				scaleF32Go(wantF, w[0], rf[0][:n])
				for j := 1; j < nrows; j++ {
					axpyF32Go(wantF, w[j], rf[j][:n])
				}
			}
			gotB := make([]uint16, n)
			gotF := make([]float32, n)
			SumRows(gotB, rb, w, acc)
			SumRows(gotF, rf, w, acc)
			require.Equal(t, wantB, gotB, "bf16 rows=%d n=%d", nrows, n)
			for i := range wantF {
				require.Equal(t, math.Float32bits(wantF[i]), math.Float32bits(gotF[i]), "f32 rows=%d n=%d i=%d", nrows, n, i)
			}
			if nrows <= maxSumRows {
				allocs := testing.AllocsPerRun(10, func() { SumRows(gotB, rb, w, acc) })
				assert.Zero(t, allocs, "rows=%d n=%d", nrows, n)
			}
		}
	}
	out := []float32{1, 2}
	SumRows(out, nil, nil, nil)
	assert.Equal(t, []float32{0, 0}, out, "no rows: zeros")
}

func BenchmarkSumRows(b *testing.B) {
	const n = 7168
	rows := [][]uint16{make([]uint16, n), make([]uint16, n)}
	w := []float32{1, 1}
	dst := make([]uint16, n)
	acc := make([]float32, n)
	b.SetBytes(3 * 2 * n)
	for b.Loop() {
		SumRows(dst, rows, w, acc)
	}
}

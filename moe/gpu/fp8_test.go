package gpumoe

import (
	"math"
	"math/rand/v2"
	"testing"

	"github.com/rdmactor/rdmactor/moe"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

func TestE4M3Values(t *testing.T) {
	for _, c := range []struct {
		f    float32
		want uint8
	}{
		{0, 0x00}, {float32(math.Copysign(0, -1)), 0x80}, {1, 0x38}, {-1, 0xb8}, {448, 0x7e}, {-448, 0xfe},
		{1000, 0x7e}, {float32(math.Inf(1)), 0x7e}, {float32(math.Inf(-1)), 0xfe},
		{0.015625, 0x08},     // 2^-6, smallest normal
		{1.0 / 512, 0x01},    // 2^-9, smallest subnormal
		{1.0 / 1024, 0x00},   // half of it: a tie, to even (0)
		{3.0 / 1024, 0x02},   // 1.5 quanta: a tie, to even (2)
		{1.0625, 0x38},       // 1 + 1/16: between 1 and 1.125, a tie, to even (1)
		{1.1875, 0x3a},       // 1 + 3/16: a tie between 1.125 and 1.25, to even (1.25)
		{464, 0x7e},          // past the largest finite: saturates
		{0.0146484375, 0x08}, // 7.5 quanta below 2^-6: a tie, to even (8 = smallest normal)
	} {
		assert.Equal(t, c.want, E4M3(c.f), "E4M3(%g)", c.f)
	}
	assert.Equal(t, uint8(0x7f), E4M3(float32(math.NaN())))
	assert.True(t, math.IsNaN(float64(E4M3Float(0x7f))))
	assert.True(t, math.IsNaN(float64(E4M3Float(0xff))))
	assert.Equal(t, float32(448), E4M3Float(0x7e))
	assert.Equal(t, float32(1.0/512), E4M3Float(0x01))
}

// Every finite code round-trips, and E4M3 picks the nearest finite code,
// ties to the even one (a model: search all 254 finite codes).
func TestE4M3Model(t *testing.T) {
	for c := range 256 {
		v := uint8(c)
		if v&0x7f == 0x7f {
			continue
		}
		require.Equal(t, v, E4M3(E4M3Float(v)), "code %#x (%g)", v, E4M3Float(v))
	}
	nearest := func(f float32) uint8 {
		best, bestD := uint8(0), math.Inf(1)
		for c := range 256 {
			v := uint8(c)
			if v&0x7f == 0x7f || (v&0x80 != 0) != math.Signbit(float64(f)) {
				continue
			}
			d := math.Abs(float64(E4M3Float(v)) - float64(f))
			if d < bestD || (d == bestD && v&1 == 0) {
				best, bestD = v, d
			}
		}
		return best
	}
	rng := rand.New(rand.NewPCG(1, 2))
	for range 20000 {
		f := float32(math.Ldexp(rng.Float64()*2-1, rng.IntN(22)-12))
		if math.Abs(float64(f)) >= FP8Max {
			continue
		}
		require.Equal(t, nearest(f), E4M3(f), "E4M3(%g)", f)
	}
}

func TestQuantizeFP8(t *testing.T) {
	x := make([]uint16, 300) // two full groups and a partial one
	for i := range x {
		x[i] = moe.BF16(float32(i%17-8) * 0.37)
	}
	q, s := QuantizeFP8(x)
	require.Len(t, q, 300)
	require.Len(t, s, 3)
	back := DequantizeFP8(q, s)
	for i, v := range x {
		f := moe.Float32(v)
		// e4m3 keeps 3 mantissa bits: within 2^-4 relative of the group's
		// largest value.
		amax := float32(0)
		for _, u := range x[i/128*128 : min(len(x), i/128*128+128)] {
			amax = max(amax, float32(math.Abs(float64(moe.Float32(u)))))
		}
		assert.InDelta(t, f, back[i], float64(amax)/16, "channel %d", i)
	}
	// The largest value of a group maps to 448 exactly.
	assert.Equal(t, uint8(0xfe), q[0]) // channel 0 holds -8*0.37, its group's largest magnitude: -448
	zero, zs := QuantizeFP8(make([]uint16, 5))
	assert.Equal(t, []uint8{0, 0, 0, 0, 0}, zero)
	assert.Equal(t, []float32{float32(1e-4) * float32(1.0/FP8Max)}, zs)
}

package conformance

import (
	"context"
	"errors"
	"fmt"
	"math"
	"math/big"
	"math/rand/v2"
	"testing"
	"time"

	"github.com/rdmactor/rdmactor/gin"
	"github.com/stretchr/testify/require"
)

// rollingModel is the dumb model of rolling order: least <= value iff value
// is at most half the range (2^(bits-1) - 1) ahead of least, modulo 2^bits,
// computed with big integers so it shares no arithmetic with gin's.
func rollingModel(value, least uint64, bits int) bool {
	mod := new(big.Int).Lsh(big.NewInt(1), uint(bits))
	d := new(big.Int).Sub(new(big.Int).SetUint64(value), new(big.Int).SetUint64(least))
	d.Mod(d, mod) // Euclidean: 0 <= d < 2^bits
	half := new(big.Int).Lsh(big.NewInt(1), uint(bits-1))
	return d.Cmp(half) < 0
}

// returnsAt says whether WaitSignal(least, bits) on rank 1's signal s
// returns at once (true) or waits until a short deadline (false).
func returnsAt(e *env, s gin.Signal, least uint64, bits int, deadline time.Duration) (bool, uint64, error) {
	ctx, cancel := context.WithTimeout(e.ctx, deadline)
	defer cancel()
	v, err := e.x(1, 0).WaitSignal(ctx, s, least, bits)
	switch {
	case err == nil:
		return true, v, nil
	case errors.Is(err, context.DeadlineExceeded):
		return false, v, nil
	}
	return false, v, err
}

// setSignal brings rank 1's signal s to v: reset at the owner, then one
// SignalAdd from rank 0, awaited with ReadSignal.
func (e *env) setSignal(s gin.Signal, v uint64) {
	e.t.Helper()
	require.NoError(e.t, e.x(1, 0).ResetSignal(s))
	require.NoError(e.t, e.x(0, 0).Signal(e.comms[0].World(), 1, gin.SignalAdd(s, v)))
	e.awaitSignal(1, s, v)
}

func testRolling(t *testing.T, f Factory) {
	// gin/doc.go: "Signals and counters compare in rolling order with a
	// bits-wide mask m: a <= b iff ((b-a) & m) <= m>>1, so a waiter is right
	// across wraparound". NCCL gin.h ncclGin::waitSignal (rolling
	// comparison of the low `bits` bits).
	for _, bits := range []int{64, 32} {
		t.Run(fmt.Sprintf("Wraparound/bits=%d", bits), func(t *testing.T) {
			e := setup(t, f, 2, gin.Config{Signals: 2})
			var top uint64 = math.MaxUint64 // 2^bits - 1
			if bits < 64 {
				top = 1<<bits - 1
			}
			start := top - 2 // 2^bits - 3
			// Several adds bring the signal to 2^bits - 3.
			x0 := e.x(0, 0)
			q := start / 4
			for _, v := range []uint64{q, q, q, start - 3*q} {
				require.NoError(t, x0.Signal(e.comms[0].World(), 1, gin.SignalAdd(0, v)))
			}
			e.awaitSignal(1, 0, start)
			least := top - 1 // 2^bits - 2
			now, _, err := returnsAt(e, 0, least, bits, 50*time.Millisecond)
			require.NoError(t, err)
			require.False(t, now, "WaitSignal(%d) returned while the signal is %d", least, start)

			got := make(chan error, 1)
			var seen uint64
			go func() {
				v, err := e.x(1, 0).WaitSignal(e.ctx, 0, least, bits)
				seen = v
				got <- err
			}()
			require.NoError(t, x0.Signal(e.comms[0].World(), 1, gin.SignalAdd(0, 5))) // wraps to 2
			require.NoError(t, <-got, "WaitSignal(least 2^%d-2) after the wrap", bits)
			require.Equal(t, uint64(2), seen, "value WaitSignal returns, low %d bits", bits)
			v, err := e.x(1, 0).ReadSignal(0, bits)
			require.NoError(t, err)
			require.Equal(t, uint64(2), v)
			if bits < 64 { // the full word did not wrap
				v, err := e.x(1, 0).ReadSignal(0, 64)
				require.NoError(t, err)
				require.Equal(t, top+3, v)
			}
		})
	}

	// The rolling comparison itself, through WaitSignal (what a Comm does
	// with it, not gin.RollingLE alone): a table of named cases, each also checked against the
	// model, then random cases against the model.
	t.Run("Model", func(t *testing.T) {
		e := setup(t, f, 2, gin.Config{Signals: 2})
		const max = math.MaxUint64
		cases := []struct {
			name         string
			value, least uint64
			bits         int
			now          bool
		}{
			{"equal", 5, 5, 64, true},
			{"one behind", 4, 5, 64, false},
			{"one ahead", 6, 5, 64, true},
			{"zero", 0, 0, 64, true},
			{"half range minus one ahead", 1<<63 - 1, 0, 64, true},
			{"half range ahead is behind", 1 << 63, 0, 64, false},
			{"half range behind", 0, 1 << 63, 64, false},
			{"wrapped ahead", 2, max - 1, 64, true},
			{"wrapped behind", max - 1, 2, 64, false},
			{"max reaches max", max, max, 64, true},
			{"zero after max", 0, max, 64, true},
			{"32: wrapped low bits ahead", 1<<32 + 2, 1<<32 - 2, 32, true},
			{"32: below wrap", 1<<32 - 3, 1<<32 - 2, 32, false},
			{"32: least masked", 7, 1<<32 + 7, 32, true},
			{"32: high bits of value ignored", 0xFFFF_0000_0000_0005, 5, 32, true},
			{"32: half range ahead is behind", 1 << 31, 0, 32, false},
			{"8: wrapped", 0x105, 0xFF, 8, true},
			{"8: half range", 0x80, 0, 8, false},
			{"8: half range minus one", 0x7F, 0, 8, true},
			{"1: equal zero", 0, 0, 1, true},
			{"1: equal one", 1, 1, 1, true},
			{"1: one ahead is behind", 1, 0, 1, false},
			{"1: wrapped", 2, 1, 1, false},
			{"56: wrapped", 1<<56 + 1, 1<<56 - 1, 56, true},
		}
		for _, c := range cases {
			require.Equal(t, c.now, rollingModel(c.value, c.least, c.bits), "model disagrees with table case %q", c.name)
			e.setSignal(0, c.value)
			now, v, err := returnsAt(e, 0, c.least, c.bits, 50*time.Millisecond)
			require.NoError(t, err, c.name)
			require.Equal(t, c.now, now, "%s: WaitSignal(least %#x, bits %d) with signal %#x: returned at once", c.name, c.least, c.bits, c.value)
			mask := uint64(max)
			if c.bits < 64 {
				mask = 1<<c.bits - 1
			}
			require.Equal(t, c.value&mask, v, "%s: value returned (low %d bits)", c.name, c.bits)
			r, err := e.x(1, 0).ReadSignal(0, c.bits)
			require.NoError(t, err)
			require.Equal(t, c.value&mask, r, "%s: ReadSignal(bits %d)", c.name, c.bits)
		}

		rng := rand.New(rand.NewPCG(1, 2))
		for i := range scale(64, 24) {
			bits := []int{1, 2, 8, 16, 31, 32, 33, 56, 63, 64}[rng.IntN(10)]
			value := rng.Uint64()
			least := value + uint64(rng.Int64N(1<<20)) - 1<<19 // near: both sides
			if rng.IntN(4) == 0 {
				least = rng.Uint64()
			}
			e.setSignal(1, value)
			want := rollingModel(value, least, bits)
			now, _, err := returnsAt(e, 1, least, bits, 5*time.Millisecond)
			require.NoError(t, err)
			require.Equal(t, want, now, "random case %d: signal %#x, least %#x, bits %d", i, value, least, bits)
		}
	})
}

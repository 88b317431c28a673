package collective_test

import (
	"fmt"
	"math"

	"github.com/rdmactor/rdmactor/collective"
	"github.com/rdmactor/rdmactor/gin"
)

// The tests' model: every rank's source is a function of (rank, index,
// salt) that any rank can compute, so each rank checks its result against
// a reference it computes locally, with a dumb sequential loop.

// value is element i of rank r's source in test case salt: small integers
// for integer types (sums of 8 ranks stay exact and in range), fractions
// for floats.
func value(dt collective.DataType, op collective.Op, r, i, salt int) float64 {
	h := uint64(r+1)*0x9e3779b97f4a7c15 ^ uint64(i+1)*0xbf58476d1ce4e5b9 ^ uint64(salt+1)*0x94d049bb133111eb
	h ^= h >> 31
	if op == collective.Prod {
		return float64(int(h%3) - 1) // -1, 0, 1: products stay exact
	}
	switch dt {
	case collective.Int8:
		return float64(int(h%31) - 15)
	case collective.Uint8:
		return float64(h % 31)
	case collective.Float32, collective.Float64:
		return float64(int64(h%2000001)-1000000) / 1e6
	case collective.Uint32, collective.Uint64:
		return float64(h % 100000)
	}
	return float64(int64(h%200001) - 100000)
}

// reference reduces value over ranks 0..n-1 in float64.
func reference(dt collective.DataType, op collective.Op, n, i, salt int) (v, mag float64) {
	for r := range n {
		x := value(dt, op, r, i, salt)
		mag += math.Abs(x)
		switch {
		case r == 0:
			v = x
		case op == collective.Sum:
			v += x
		case op == collective.Prod:
			v *= x
		case op == collective.Min:
			v = math.Min(v, x)
		case op == collective.Max:
			v = math.Max(v, x)
		}
	}
	return v, mag
}

// fill writes count values of rank r, starting at element index first,
// into w at byte offset off.
func fill(w *gin.Window, off int, dt collective.DataType, op collective.Op, r, first, count, salt int) error {
	switch dt {
	case collective.Int8:
		return fillT[int8](w, off, dt, op, r, first, count, salt)
	case collective.Uint8:
		return fillT[uint8](w, off, dt, op, r, first, count, salt)
	case collective.Int32:
		return fillT[int32](w, off, dt, op, r, first, count, salt)
	case collective.Uint32:
		return fillT[uint32](w, off, dt, op, r, first, count, salt)
	case collective.Int64:
		return fillT[int64](w, off, dt, op, r, first, count, salt)
	case collective.Uint64:
		return fillT[uint64](w, off, dt, op, r, first, count, salt)
	case collective.Float32:
		return fillT[float32](w, off, dt, op, r, first, count, salt)
	case collective.Float64:
		return fillT[float64](w, off, dt, op, r, first, count, salt)
	case collective.Bfloat16, collective.Float16:
		return fillT[uint16](w, off, dt, op, r, first, count, salt)
	}
	return fmt.Errorf("fill: type %v", dt)
}

func fillT[T collective.Element](w *gin.Window, off int, dt collective.DataType, op collective.Op, r, first, count, salt int) error {
	v, err := collective.Elements[T](w, off, count)
	if err != nil {
		return err
	}
	for i := range v {
		v[i] = T(value(dt, op, r, first+i, salt))
	}
	return nil
}

// load reads count elements at byte offset off of w as float64.
func load(w *gin.Window, off int, dt collective.DataType, count int) ([]float64, error) {
	switch dt {
	case collective.Int8:
		return loadT[int8](w, off, count)
	case collective.Uint8:
		return loadT[uint8](w, off, count)
	case collective.Int32:
		return loadT[int32](w, off, count)
	case collective.Uint32:
		return loadT[uint32](w, off, count)
	case collective.Int64:
		return loadT[int64](w, off, count)
	case collective.Uint64:
		return loadT[uint64](w, off, count)
	case collective.Float32:
		return loadT[float32](w, off, count)
	case collective.Float64:
		return loadT[float64](w, off, count)
	case collective.Bfloat16, collective.Float16:
		return loadT[uint16](w, off, count)
	}
	return nil, fmt.Errorf("load: type %v", dt)
}

func loadT[T collective.Element](w *gin.Window, off, count int) ([]float64, error) {
	v, err := collective.Elements[T](w, off, count)
	if err != nil {
		return nil, err
	}
	out := make([]float64, len(v))
	for i, x := range v {
		out[i] = float64(x)
	}
	return out, nil
}

// near reports whether got is want: exactly for integers, within a
// relative error of the magnitudes summed for floats.
func near(dt collective.DataType, got, want, mag float64) bool {
	switch dt {
	case collective.Float32:
		return math.Abs(got-want) <= 1e-6*mag+1e-6
	case collective.Float64:
		return math.Abs(got-want) <= 1e-12*mag+1e-12
	}
	return got == want
}

// typed truncates a float64 reference to what dt holds (integer types
// wrap like Go conversions would not, so references stay in range).
func typed(dt collective.DataType, v float64) float64 {
	if dt == collective.Float32 {
		return float64(float32(v))
	}
	return v
}

package main

import (
	"fmt"

	"github.com/rdmactor/rdmactor/collective"
	"github.com/rdmactor/rdmactor/gin"
)

// Every rank's data is a function of (rank, element index) that any rank
// can compute, so each rank verifies its result against a reference it
// computes locally. Values are small integers: sums over up to 64 ranks
// are exact in every type, floats included, so the check is exact.

// value is element i of rank r's data.
func value(r, i int) float64 { return float64((r*131 + i*7) % 251) }

// fill writes count values of rank r, element indices first..., at byte
// offset off of w.
func fill(w *gin.Window, off int, dt collective.DataType, r, first, count int) error {
	return apply(dt, func(k kernel) error { return k.fill(w, off, r, first, count) })
}

// verify counts the elements at byte offset off of w that differ from
// want(i), i = 0..count-1.
func verify(w *gin.Window, off int, dt collective.DataType, count int, want func(i int) float64) (wrong int, err error) {
	err = apply(dt, func(k kernel) error {
		wrong, err = k.verify(w, off, count, want)
		return err
	})
	return wrong, err
}

// kernel is fill and verify for one Go element type.
type kernel interface {
	fill(w *gin.Window, off, r, first, count int) error
	verify(w *gin.Window, off, count int, want func(i int) float64) (int, error)
}

type typed[T collective.Element] struct{}

func (typed[T]) fill(w *gin.Window, off, r, first, count int) error {
	v, err := collective.Elements[T](w, off, count)
	for i := range v {
		v[i] = T(value(r, first+i))
	}
	return err
}

func (typed[T]) verify(w *gin.Window, off, count int, want func(i int) float64) (int, error) {
	v, err := collective.Elements[T](w, off, count)
	wrong := 0
	for i, x := range v {
		if x != T(want(i)) {
			wrong++
		}
	}
	return wrong, err
}

func apply(dt collective.DataType, f func(kernel) error) error {
	switch dt {
	case collective.Float32:
		return f(typed[float32]{})
	case collective.Float64:
		return f(typed[float64]{})
	case collective.Int32:
		return f(typed[int32]{})
	case collective.Int64:
		return f(typed[int64]{})
	case collective.Bfloat16:
		return f(typed[uint16]{})
	case collective.Uint8:
		return f(typed[uint8]{})
	}
	return fmt.Errorf("data type %v: want float32, float64, int32, int64, bfloat16 or uint8", dt)
}

// reduced is the reference reduction over n ranks of element i.
func reduced(op collective.Op, n, i int) float64 {
	v := value(0, i)
	for r := 1; r < n; r++ {
		x := value(r, i)
		switch op {
		case collective.Sum:
			v += x
		case collective.Min:
			v = min(v, x)
		case collective.Max:
			v = max(v, x)
		case collective.Prod:
			v *= x
		}
	}
	return v
}

// parseType and parseOp read the -type and -op flags.
func parseType(s string) (collective.DataType, error) {
	for dt := collective.DataType(0); dt.Size() > 0; dt++ {
		if dt.String() == s {
			return dt, nil
		}
	}
	return 0, fmt.Errorf("data type %q", s)
}

func parseOp(s string) (collective.Op, error) {
	for _, op := range []collective.Op{collective.Sum, collective.Prod, collective.Min, collective.Max} {
		if op.String() == s {
			return op, nil
		}
	}
	return 0, fmt.Errorf("operator %q", s)
}

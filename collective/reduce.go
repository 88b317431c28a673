package collective

import "github.com/rdmactor/rdmactor/internal/unsafeview"

// number is the element types reductions run on.
type number interface {
	~int8 | ~uint8 | ~int32 | ~uint32 | ~int64 | ~uint64 | ~float32 | ~float64
}

// reducers holds reduce's kernel for each Reducible DataType; nil for the
// types that only move.
var reducers = [numDataTypes]func(op Op, d, a, b []byte){
	Int8: reduceT[int8], Uint8: reduceT[uint8], Int32: reduceT[int32], Uint32: reduceT[uint32],
	Int64: reduceT[int64], Uint64: reduceT[uint64], Float32: reduceT[float32], Float64: reduceT[float64],
}

// reduce sets d[i] = a[i] op b[i] over len(d) bytes of elements of dt;
// d may be a or b (element-wise in place). dt must be Reducible.
func reduce(dt DataType, op Op, d, a, b []byte) {
	if dt >= numDataTypes || reducers[dt] == nil {
		panic("collective: reduce of " + dt.String()) // callers check Reducible
	}
	reducers[dt](op, d, a, b)
}

func reduceT[T number](op Op, d, a, b []byte) {
	dv, av, bv := unsafeview.As[T](d), unsafeview.As[T](a), unsafeview.As[T](b)
	switch op {
	case Sum:
		sum(dv, av, bv)
	case Prod:
		prod(dv, av, bv)
	case Min:
		minOf(dv, av, bv)
	case Max:
		maxOf(dv, av, bv)
	}
}

// The kernels are unrolled by 4; Go does not vectorize, so this is what
// keeps a reduction near memory speed on the shm path.

func sum[T number](d, a, b []T) {
	a, b = a[:len(d)], b[:len(d)]
	i := 0
	for ; i+4 <= len(d); i += 4 {
		d[i], d[i+1], d[i+2], d[i+3] = a[i]+b[i], a[i+1]+b[i+1], a[i+2]+b[i+2], a[i+3]+b[i+3]
	}
	for ; i < len(d); i++ {
		d[i] = a[i] + b[i]
	}
}

func prod[T number](d, a, b []T) {
	a, b = a[:len(d)], b[:len(d)]
	for i := range d {
		d[i] = a[i] * b[i]
	}
}

func minOf[T number](d, a, b []T) {
	a, b = a[:len(d)], b[:len(d)]
	for i := range d {
		x, y := a[i], b[i]
		if y < x {
			x = y
		}
		d[i] = x
	}
}

func maxOf[T number](d, a, b []T) {
	a, b = a[:len(d)], b[:len(d)]
	for i := range d {
		x, y := a[i], b[i]
		if y > x {
			x = y
		}
		d[i] = x
	}
}

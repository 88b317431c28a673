package collective

import "fmt"

// DataType is the element type of a collective's buffers (ncclDataType_t,
// nccl.h). Every type can be moved; Reducible says which can be reduced.
type DataType uint8

const (
	Int8     DataType = iota // ncclInt8
	Uint8                    // ncclUint8
	Int32                    // ncclInt32
	Uint32                   // ncclUint32
	Int64                    // ncclInt64
	Uint64                   // ncclUint64
	Float16                  // ncclFloat16: moved only, never reduced here
	Bfloat16                 // ncclBfloat16: moved only, never reduced here
	Float32                  // ncclFloat32
	Float64                  // ncclFloat64
	numDataTypes
)

var dataTypeInfo = [numDataTypes]struct {
	name string
	size int
}{
	Int8: {"int8", 1}, Uint8: {"uint8", 1}, Int32: {"int32", 4}, Uint32: {"uint32", 4},
	Int64: {"int64", 8}, Uint64: {"uint64", 8}, Float16: {"float16", 2}, Bfloat16: {"bfloat16", 2},
	Float32: {"float32", 4}, Float64: {"float64", 8},
}

// Size is the size of one element in bytes; 0 for an unknown type.
func (d DataType) Size() int {
	if d >= numDataTypes {
		return 0
	}
	return dataTypeInfo[d].size
}

// Reducible reports whether AllReduce and ReduceScatter accept d: every
// integer and the float32/float64 types (half-precision types only move).
func (d DataType) Reducible() bool { return d < numDataTypes && d != Float16 && d != Bfloat16 }

// String is the type's name ("float32"), as the examples' -type flag takes it.
func (d DataType) String() string {
	if d >= numDataTypes {
		return fmt.Sprintf("DataType(%d)", uint8(d))
	}
	return dataTypeInfo[d].name
}

// Op is a reduction operator (ncclRedOp_t, nccl.h; MPI_SUM, MPI_PROD,
// MPI_MIN, MPI_MAX). Integer sums and products wrap around; float min and
// max with a NaN operand return either operand, as MPI leaves it open.
type Op uint8

const (
	Sum  Op = iota // ncclSum
	Prod           // ncclProd
	Min            // ncclMin
	Max            // ncclMax
	numOps
)

// String is the operator's name ("sum"), as the examples' -op flag takes it.
func (o Op) String() string {
	if o >= numOps {
		return fmt.Sprintf("Op(%d)", uint8(o))
	}
	return opNames[o]
}

var opNames = [numOps]string{Sum: "sum", Prod: "prod", Min: "min", Max: "max"}

// Element is the Go types that match a DataType (Float16 and Bfloat16 are
// carried as uint16).
type Element interface {
	~int8 | ~uint8 | ~int32 | ~uint32 | ~int64 | ~uint64 | ~uint16 | ~float32 | ~float64
}

// TypeOf is the DataType of Go type T (uint16 is Bfloat16: the bits of a
// bf16 value).
func TypeOf[T Element]() DataType {
	var z T
	switch any(z).(type) {
	case int8:
		return Int8
	case uint8:
		return Uint8
	case int32:
		return Int32
	case uint32:
		return Uint32
	case int64:
		return Int64
	case uint64:
		return Uint64
	case uint16:
		return Bfloat16
	case float32:
		return Float32
	case float64:
		return Float64
	}
	return numDataTypes
}

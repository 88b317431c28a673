package cuda

import (
	"fmt"
	"math"
	"runtime"
	"unsafe"
)

// Unsafe: the one file of the package that converts between Go memory and
// C pointers. Why each conversion is sound:
//
//   - Tables of pointers for C (NVRTC's char** arrays, cuLaunchKernel's
//     void** kernelParams) point into Go memory. They are allocated with
//     make of a length known only at run time, so they live on the heap,
//     which Go's collector never moves; they are kept alive until the C
//     call returned (keepAlive), and C does not keep them (NVRTC copies
//     sources and options; cuLaunchKernel copies the arguments at launch,
//     cuda.h: "kernelParams ... copied when the function returns").
//   - Views of pinned host memory (cuMemHostAlloc) are slices over C
//     memory that the collector ignores; they are valid until
//     cuMemFreeHost, which HostMem.Close calls after dropping the view.
//   - C strings the driver returns (cuGetErrorName) are static: copied.

// cStrings returns a C array of NUL-terminated copies of ss (char**), and
// what must stay alive while C reads it. An empty ss gives a nil array.
func cStrings(ss []string) (unsafe.Pointer, []any) {
	if len(ss) == 0 {
		return nil, nil
	}
	n := 0
	for _, s := range ss {
		n += len(s) + 1
	}
	arena := make([]byte, n)
	table := make([]unsafe.Pointer, len(ss))
	off := 0
	for i, s := range ss {
		copy(arena[off:], s)
		arena[off+len(s)] = 0
		table[i] = unsafe.Pointer(&arena[off])
		off += len(s) + 1
	}
	return unsafe.Pointer(&table[0]), []any{arena, table}
}

// keepAlive keeps Go memory handed to C alive until this point.
func keepAlive(keep ...[]any) {
	for _, k := range keep {
		runtime.KeepAlive(k)
	}
}

// cString calls a driver function that returns a static C string through
// an out parameter (cuGetErrorName) and copies it.
func cString(fn func(Result, **byte) Result, r Result) string {
	var p *byte
	if fn(r, &p) != success || p == nil {
		return ""
	}
	var b []byte
	for q := unsafe.Pointer(p); *(*byte)(q) != 0 && len(b) < 256; q = unsafe.Add(q, 1) {
		b = append(b, *(*byte)(q))
	}
	return string(b)
}

// hostSlice is a []byte view of n bytes of C memory at p.
func hostSlice(p unsafe.Pointer, n int) []byte { return unsafe.Slice((*byte)(p), n) }

// sliceData is the address of b's first byte, for registering Go-visible
// memory (an mmap'd window) with the driver.
func sliceData(b []byte) unsafe.Pointer { return unsafe.Pointer(unsafe.SliceData(b)) }

// bytesPtr is the address of b[0] for a copy; nil for an empty b.
func bytesPtr(b []byte) unsafe.Pointer {
	if len(b) == 0 {
		return nil
	}
	return unsafe.Pointer(&b[0])
}

// KernelArg is a value passed to a kernel by value as raw bytes: a struct
// whose C layout the caller wrote (8-byte aligned, at most 4 KiB).
type KernelArg interface {
	KernelArg() []byte
}

// packArgs lays out args in one heap arena, each at its natural alignment,
// and returns cuLaunchKernel's kernelParams: an array with a pointer to
// each argument's bytes. Keep the returned values alive across the call.
func packArgs(args []any) (unsafe.Pointer, []any, error) {
	if len(args) == 0 {
		return nil, nil, nil
	}
	vals := make([][]byte, len(args))
	size := 0
	for i, a := range args {
		b, err := argBytes(a)
		if err != nil {
			return nil, nil, fmt.Errorf("kernel argument %d: %w", i, err)
		}
		vals[i] = b
		size = (size+7)&^7 + len(b)
	}
	arena := make([]uint64, (size+7)/8) // 8-byte aligned by type
	raw := unsafe.Slice((*byte)(unsafe.Pointer(&arena[0])), len(arena)*8)
	table := make([]unsafe.Pointer, len(args))
	off := 0
	for i, b := range vals {
		off = (off + 7) &^ 7
		copy(raw[off:], b)
		table[i] = unsafe.Pointer(&raw[off])
		off += len(b)
	}
	return unsafe.Pointer(&table[0]), []any{arena, table}, nil
}

// argBytes encodes one kernel argument little-endian, as the GPU reads it.
func argBytes(a any) ([]byte, error) {
	le := func(v uint64, n int) []byte {
		b := make([]byte, n)
		for i := range n {
			b[i] = byte(v >> (8 * i))
		}
		return b
	}
	switch v := a.(type) {
	case int32:
		return le(uint64(uint32(v)), 4), nil
	case uint32:
		return le(uint64(v), 4), nil
	case int64:
		return le(uint64(v), 8), nil
	case uint64:
		return le(v, 8), nil
	case DevicePtr:
		return le(uint64(v), 8), nil
	case float32:
		return le(uint64(math.Float32bits(v)), 4), nil
	case float64:
		return le(math.Float64bits(v), 8), nil
	case []byte:
		if len(v) == 0 || len(v) > 4096 {
			return nil, fmt.Errorf("by-value bytes of length %d: want 1..4096", len(v))
		}
		return v, nil
	case KernelArg:
		return argBytes(v.KernelArg())
	case int:
		return nil, fmt.Errorf("int %d: pass int32 or int64 (C int is 32 bits)", v)
	default:
		return nil, fmt.Errorf("type %T not supported", a)
	}
}

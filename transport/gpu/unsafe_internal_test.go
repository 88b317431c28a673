package gpu

import (
	"unsafe"

	"github.com/rdmactor/rdmactor/transport/gpu/cuda"
)

// Unsafe (tests only): with the fake driver, device memory is host memory,
// so a test can look at a ring's device part as a kernel would.
func fakeDeviceBytes(p cuda.DevicePtr, n int) []byte {
	return unsafe.Slice((*byte)(unsafe.Add(unsafe.Pointer(nil), uintptr(p))), n)
}

// addrOf is the address of b[0], as the fake driver's device pointers
// name host memory.
func addrOf(b []byte) uint64 { return uint64(uintptr(unsafe.Pointer(unsafe.SliceData(b)))) }

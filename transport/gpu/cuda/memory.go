package cuda

import (
	"fmt"
	"os"
	"unsafe"
)

// DevicePtr is an address in the unified virtual address space of the
// process (CUdeviceptr): device memory, or the device alias of pinned host
// memory.
type DevicePtr uint64

// MemAlloc allocates n bytes of device memory (cuMemAlloc_v2), zeroed.
func (c *Context) MemAlloc(n int) (DevicePtr, error) {
	if n <= 0 {
		return 0, fmt.Errorf("cuda: allocate %d bytes: want > 0", n)
	}
	var p uint64
	err := c.do(func() error {
		if err := check("cuMemAlloc_v2", fnMemAlloc(&p, uint64(n))); err != nil {
			return fmt.Errorf("allocate %d bytes on device %d: %w", n, c.dev.ordinal, err)
		}
		return check("cuMemsetD8_v2", fnMemsetD8(p, 0, uint64(n)))
	})
	return DevicePtr(p), err
}

// MemFree frees memory from MemAlloc (cuMemFree_v2).
func (c *Context) MemFree(p DevicePtr) error {
	return c.do(func() error { return check("cuMemFree_v2", fnMemFree(uint64(p))) })
}

// Memset sets n bytes at p to v (cuMemsetD8_v2, synchronous).
func (c *Context) Memset(p DevicePtr, v byte, n int) error {
	return c.do(func() error { return check("cuMemsetD8_v2", fnMemsetD8(uint64(p), v, uint64(n))) })
}

// CopyToDevice copies src to device memory at dst (cuMemcpyHtoD_v2,
// synchronous).
func (c *Context) CopyToDevice(dst DevicePtr, src []byte) error {
	if len(src) == 0 {
		return nil
	}
	return c.do(func() error {
		return check("cuMemcpyHtoD_v2", fnMemcpyHtoD(uint64(dst), bytesPtr(src), uint64(len(src))))
	})
}

// CopyFromDevice copies len(dst) bytes of device memory at src into dst
// (cuMemcpyDtoH_v2, synchronous).
func (c *Context) CopyFromDevice(dst []byte, src DevicePtr) error {
	if len(dst) == 0 {
		return nil
	}
	return c.do(func() error {
		return check("cuMemcpyDtoH_v2", fnMemcpyDtoH(bytesPtr(dst), uint64(src), uint64(len(dst))))
	})
}

// CopyPeerAsync queues a copy of n bytes from src (memory of srcCtx's
// device) to dst (memory of dstCtx's device) on s (cuMemcpyPeerAsync): the
// driver's own copy engine path, the anchor of the put bandwidth benchmark.
func CopyPeerAsync(dst DevicePtr, dstCtx *Context, src DevicePtr, srcCtx *Context, n int, s *Stream) error {
	return s.c.do(func() error {
		return check("cuMemcpyPeerAsync", fnMemcpyPeerAsync(uint64(dst), dstCtx.h, uint64(src), srcCtx.h, uint64(n), s.h))
	})
}

// HostMem is page-locked host memory mapped into the device's address
// space: the CPU reads and writes Bytes, kernels use Dev. Either allocated
// by the driver (HostAlloc) or caller memory registered (HostRegister).
type HostMem struct {
	c          *Context
	p          unsafe.Pointer
	n          int
	dev        DevicePtr
	registered bool // caller memory: unregister, do not free
}

// HostAlloc allocates n bytes of pinned host memory, zeroed, portable
// across contexts and mapped into the device address space
// (cuMemHostAlloc with CU_MEMHOSTALLOC_PORTABLE|DEVICEMAP).
func (c *Context) HostAlloc(n int) (*HostMem, error) {
	if n <= 0 {
		return nil, fmt.Errorf("cuda: pin %d host bytes: want > 0", n)
	}
	h := &HostMem{c: c, n: n}
	err := c.do(func() error {
		if err := check("cuMemHostAlloc", fnMemHostAlloc(&h.p, uint64(n), memHostAllocPortable|memHostAllocDeviceMap)); err != nil {
			return fmt.Errorf("pin %d host bytes: %w", n, err)
		}
		var d uint64
		if err := check("cuMemHostGetDevicePointer_v2", fnMemHostGetDevicePtr(&d, h.p, 0)); err != nil {
			fnMemFreeHost(h.p)
			return err
		}
		h.dev = DevicePtr(d)
		return nil
	})
	if err != nil {
		return nil, err
	}
	clear(h.Bytes())
	return h, nil
}

// CanHostRegister reports whether b meets HostRegister's requirement on
// the buffer itself: non-empty and starting on a page boundary.
func CanHostRegister(b []byte) bool {
	return len(b) > 0 && uintptr(sliceData(b))%uintptr(os.Getpagesize()) == 0
}

// HostRegister page-locks b and maps it into the device address space
// (cuMemHostRegister_v2 with PORTABLE|DEVICEMAP), so kernels address it by
// Dev. b must start on a page boundary and stay mapped until Close (a
// shared-memory window of the shm provider, say); its length is rounded
// up to whole pages, which must be mapped too.
func (c *Context) HostRegister(b []byte) (*HostMem, error) {
	page := os.Getpagesize()
	p := sliceData(b)
	if !CanHostRegister(b) {
		return nil, fmt.Errorf("cuda: register %d host bytes at %p: want a non-empty, page-aligned buffer", len(b), p)
	}
	n := (len(b) + page - 1) / page * page
	h := &HostMem{c: c, p: p, n: len(b), registered: true}
	err := c.do(func() error {
		if err := check("cuMemHostRegister_v2", fnMemHostRegister(p, uint64(n), memHostRegisterPortable|memHostRegDeviceMap)); err != nil {
			return fmt.Errorf("register %d host bytes: %w", n, err)
		}
		var d uint64
		if err := check("cuMemHostGetDevicePointer_v2", fnMemHostGetDevicePtr(&d, p, 0)); err != nil {
			fnMemHostUnregister(p)
			return err
		}
		h.dev = DevicePtr(d)
		return nil
	})
	if err != nil {
		return nil, err
	}
	return h, nil
}

// Bytes is the CPU's view of the memory; nil after Close.
func (h *HostMem) Bytes() []byte {
	if h.p == nil {
		return nil
	}
	return hostSlice(h.p, h.n)
}

// Dev is the address kernels use for the memory.
func (h *HostMem) Dev() DevicePtr { return h.dev }

// Close frees (HostAlloc) or unregisters (HostRegister) the memory.
func (h *HostMem) Close() error {
	if h.p == nil {
		return nil
	}
	p := h.p
	h.p = nil
	return h.c.do(func() error {
		if h.registered {
			return check("cuMemHostUnregister", fnMemHostUnregister(p))
		}
		return check("cuMemFreeHost", fnMemFreeHost(p))
	})
}

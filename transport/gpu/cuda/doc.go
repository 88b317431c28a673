// Package cuda is the part of the CUDA driver API and NVRTC that rdmactor's
// GPU transport needs, loaded at run time with purego: no cgo, no CUDA
// toolkit at build time, and a CGO_ENABLED=0 binary still runs on a GPU
// host. Where there is no driver, Load returns a *LoadError that matches
// rdma.ErrNotSupported and names the libraries it tried.
//
// # Usage
//
//	if err := cuda.Load(); err != nil { ... }          // libcuda.so.1, cuInit(0)
//	dev, _ := cuda.GetDevice(0)
//	ctx, _ := dev.PrimaryContext()                    // retained; Close releases
//	buf, _ := ctx.MemAlloc(1 << 20)                   // zeroed device memory
//	mod, _ := ctx.LoadModule(cubin)                   // cubin from package jit
//	fn, _ := mod.Function("my_kernel")                // extern "C" names
//	st, _ := ctx.NewStream()
//	err := fn.Launch(cuda.Dim3{X: 132}, cuda.Dim3{X: 256}, 0, st, buf, uint64(n))
//
// # Caller duties
//
//  1. Call Load (and LoadNVRTC before compiling) first; every other call
//     returns the load error until it succeeded.
//  2. A CUDA context is current per OS thread, and goroutines move between
//     threads: every method of Context and of what it made binds the
//     context to a locked OS thread for the duration of the call, so
//     callers never call cuCtxSetCurrent themselves.
//  3. Kernel arguments are typed: int32, uint32, int64, uint64, float32,
//     float64, DevicePtr, a []byte passed by value (a struct laid out by
//     the caller, 8-byte aligned), or a value with KernelArg() []byte. A Go
//     int is refused, since C's int is 32 bits.
//  4. Free what you allocate (MemFree, HostMem.Close, Module.Close,
//     Stream.Close, Event.Close) before Context.Close.
//
// # Bindings
//
// driver.go and nvrtc.go list every C function used as a typed func
// variable (as purego's dlfcn.go), bound once by Load from the
// library by symbol name. Where cuda.h maps a name to a versioned ABI
// (cuMemAlloc -> cuMemAlloc_v2), the versioned symbol is bound, so the
// 64-bit sizes of CUDA >= 3.2 are used whatever the driver's age.
// Signatures are transcribed from cuda.h and nvrtc.h of CUDA 13.0.
//
// unsafe.go is the one file that converts between Go memory and C
// pointers: kernel parameter arrays, C string tables for NVRTC, views of
// pinned host memory.
package cuda

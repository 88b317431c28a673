package cuda

import "unsafe"

// The CUDA driver API functions this package calls, as typed func
// variables bound by Load from libcuda.so.1. Signatures from cuda.h (CUDA
// 13.0); C types map as: CUresult -> Result, int -> int32, unsigned int ->
// uint32, size_t and CUdeviceptr -> uint64, CUdevice -> int32, handles
// (CUcontext, CUstream, CUevent, CUmodule, CUfunction) -> uintptr,
// void* -> unsafe.Pointer.
var (
	fnInit                   func(flags uint32) Result                                                                              // cuInit
	fnDriverGetVersion       func(v *int32) Result                                                                                  // cuDriverGetVersion
	fnGetErrorName           func(r Result, name **byte) Result                                                                     // cuGetErrorName
	fnDeviceGetCount         func(n *int32) Result                                                                                  // cuDeviceGetCount
	fnDeviceGet              func(dev *int32, ordinal int32) Result                                                                 // cuDeviceGet
	fnDeviceGetName          func(name *byte, n int32, dev int32) Result                                                            // cuDeviceGetName
	fnDeviceGetAttribute     func(v *int32, attr int32, dev int32) Result                                                           // cuDeviceGetAttribute
	fnDeviceGetPCIBusId      func(id *byte, n int32, dev int32) Result                                                              // cuDeviceGetPCIBusId
	fnDeviceCanAccessPeer    func(can *int32, dev, peer int32) Result                                                               // cuDeviceCanAccessPeer
	fnDevicePrimaryCtxRetain func(ctx *uintptr, dev int32) Result                                                                   // cuDevicePrimaryCtxRetain
	fnDevicePrimaryCtxRel    func(dev int32) Result                                                                                 // cuDevicePrimaryCtxRelease_v2
	fnCtxSetCurrent          func(ctx uintptr) Result                                                                               // cuCtxSetCurrent
	fnCtxSynchronize         func() Result                                                                                          // cuCtxSynchronize
	fnCtxEnablePeerAccess    func(peer uintptr, flags uint32) Result                                                                // cuCtxEnablePeerAccess
	fnMemAlloc               func(p *uint64, n uint64) Result                                                                       // cuMemAlloc_v2
	fnMemFree                func(p uint64) Result                                                                                  // cuMemFree_v2
	fnMemsetD8               func(p uint64, v uint8, n uint64) Result                                                               // cuMemsetD8_v2
	fnMemcpyHtoD             func(dst uint64, src unsafe.Pointer, n uint64) Result                                                  // cuMemcpyHtoD_v2
	fnMemcpyDtoH             func(dst unsafe.Pointer, src uint64, n uint64) Result                                                  // cuMemcpyDtoH_v2
	fnMemcpyPeerAsync        func(dst uint64, dctx uintptr, src uint64, sctx uintptr, n uint64, s uintptr) Result                   // cuMemcpyPeerAsync
	fnMemHostAlloc           func(p *unsafe.Pointer, n uint64, flags uint32) Result                                                 // cuMemHostAlloc
	fnMemFreeHost            func(p unsafe.Pointer) Result                                                                          // cuMemFreeHost
	fnMemHostGetDevicePtr    func(d *uint64, p unsafe.Pointer, flags uint32) Result                                                 // cuMemHostGetDevicePointer_v2
	fnMemHostRegister        func(p unsafe.Pointer, n uint64, flags uint32) Result                                                  // cuMemHostRegister_v2
	fnMemHostUnregister      func(p unsafe.Pointer) Result                                                                          // cuMemHostUnregister
	fnStreamCreate           func(s *uintptr, flags uint32) Result                                                                  // cuStreamCreate
	fnStreamDestroy          func(s uintptr) Result                                                                                 // cuStreamDestroy_v2
	fnStreamQuery            func(s uintptr) Result                                                                                 // cuStreamQuery
	fnStreamSynchronize      func(s uintptr) Result                                                                                 // cuStreamSynchronize
	fnEventCreate            func(e *uintptr, flags uint32) Result                                                                  // cuEventCreate
	fnEventDestroy           func(e uintptr) Result                                                                                 // cuEventDestroy_v2
	fnEventRecord            func(e, s uintptr) Result                                                                              // cuEventRecord
	fnEventSynchronize       func(e uintptr) Result                                                                                 // cuEventSynchronize
	fnEventElapsedTime       func(ms *float32, start, end uintptr) Result                                                           // cuEventElapsedTime
	fnModuleLoadData         func(m *uintptr, image unsafe.Pointer) Result                                                          // cuModuleLoadData
	fnModuleUnload           func(m uintptr) Result                                                                                 // cuModuleUnload
	fnModuleGetFunction      func(f *uintptr, m uintptr, name string) Result                                                        // cuModuleGetFunction
	fnLaunchKernel           func(f uintptr, gx, gy, gz, bx, by, bz, shared uint32, s uintptr, params, extra unsafe.Pointer) Result // cuLaunchKernel
	fnLaunchKernelEx         func(cfg *launchConfig, f uintptr, params, extra unsafe.Pointer) Result                                // cuLaunchKernelEx
	fnIpcGetMemHandle        func(h *IPCHandle, p uint64) Result                                                                    // cuIpcGetMemHandle
	fnIpcOpenMemHandle       func(p *uint64, h IPCHandle, flags uint32) Result                                                      // cuIpcOpenMemHandle_v2
	fnIpcCloseMemHandle      func(p uint64) Result                                                                                  // cuIpcCloseMemHandle
)

// driverSymbols pairs each func variable with the symbol it is bound to.
var driverSymbols = []symbol{
	{&fnInit, "cuInit"},
	{&fnDriverGetVersion, "cuDriverGetVersion"},
	{&fnGetErrorName, "cuGetErrorName"},
	{&fnDeviceGetCount, "cuDeviceGetCount"},
	{&fnDeviceGet, "cuDeviceGet"},
	{&fnDeviceGetName, "cuDeviceGetName"},
	{&fnDeviceGetAttribute, "cuDeviceGetAttribute"},
	{&fnDeviceGetPCIBusId, "cuDeviceGetPCIBusId"},
	{&fnDeviceCanAccessPeer, "cuDeviceCanAccessPeer"},
	{&fnDevicePrimaryCtxRetain, "cuDevicePrimaryCtxRetain"},
	{&fnDevicePrimaryCtxRel, "cuDevicePrimaryCtxRelease_v2"},
	{&fnCtxSetCurrent, "cuCtxSetCurrent"},
	{&fnCtxSynchronize, "cuCtxSynchronize"},
	{&fnCtxEnablePeerAccess, "cuCtxEnablePeerAccess"},
	{&fnMemAlloc, "cuMemAlloc_v2"},
	{&fnMemFree, "cuMemFree_v2"},
	{&fnMemsetD8, "cuMemsetD8_v2"},
	{&fnMemcpyHtoD, "cuMemcpyHtoD_v2"},
	{&fnMemcpyDtoH, "cuMemcpyDtoH_v2"},
	{&fnMemcpyPeerAsync, "cuMemcpyPeerAsync"},
	{&fnMemHostAlloc, "cuMemHostAlloc"},
	{&fnMemFreeHost, "cuMemFreeHost"},
	{&fnMemHostGetDevicePtr, "cuMemHostGetDevicePointer_v2"},
	{&fnMemHostRegister, "cuMemHostRegister_v2"},
	{&fnMemHostUnregister, "cuMemHostUnregister"},
	{&fnStreamCreate, "cuStreamCreate"},
	{&fnStreamDestroy, "cuStreamDestroy_v2"},
	{&fnStreamQuery, "cuStreamQuery"},
	{&fnStreamSynchronize, "cuStreamSynchronize"},
	{&fnEventCreate, "cuEventCreate"},
	{&fnEventDestroy, "cuEventDestroy_v2"},
	{&fnEventRecord, "cuEventRecord"},
	{&fnEventSynchronize, "cuEventSynchronize"},
	{&fnEventElapsedTime, "cuEventElapsedTime"},
	{&fnModuleLoadData, "cuModuleLoadData"},
	{&fnModuleUnload, "cuModuleUnload"},
	{&fnModuleGetFunction, "cuModuleGetFunction"},
	{&fnLaunchKernel, "cuLaunchKernel"},
	{&fnLaunchKernelEx, "cuLaunchKernelEx"},
	{&fnIpcGetMemHandle, "cuIpcGetMemHandle"},
	{&fnIpcOpenMemHandle, "cuIpcOpenMemHandle_v2"},
	{&fnIpcCloseMemHandle, "cuIpcCloseMemHandle"},
}

// Flags and enum values, from cuda.h (CUDA 13.0).
const (
	memHostAllocPortable    = 0x01 // CU_MEMHOSTALLOC_PORTABLE
	memHostAllocDeviceMap   = 0x02 // CU_MEMHOSTALLOC_DEVICEMAP
	memHostRegisterPortable = 0x01 // CU_MEMHOSTREGISTER_PORTABLE
	memHostRegDeviceMap     = 0x02 // CU_MEMHOSTREGISTER_DEVICEMAP
	streamNonBlocking       = 0x01 // CU_STREAM_NON_BLOCKING
	eventDefault            = 0x00 // CU_EVENT_DEFAULT (timing enabled)
	eventDisableTiming      = 0x02 // CU_EVENT_DISABLE_TIMING
	ipcLazyEnablePeerAccess = 0x01 // CU_IPC_MEM_LAZY_ENABLE_PEER_ACCESS
)

// DeviceAttribute is a CUdevice_attribute (cuda.h).
type DeviceAttribute int32

// The attributes this package reads.
const (
	AttrMaxThreadsPerBlock      DeviceAttribute = 1  // CU_DEVICE_ATTRIBUTE_MAX_THREADS_PER_BLOCK
	AttrMultiprocessorCount     DeviceAttribute = 16 // CU_DEVICE_ATTRIBUTE_MULTIPROCESSOR_COUNT
	AttrCanMapHostMemory        DeviceAttribute = 19 // CU_DEVICE_ATTRIBUTE_CAN_MAP_HOST_MEMORY
	AttrPCIBusID                DeviceAttribute = 33 // CU_DEVICE_ATTRIBUTE_PCI_BUS_ID
	AttrPCIDeviceID             DeviceAttribute = 34 // CU_DEVICE_ATTRIBUTE_PCI_DEVICE_ID
	AttrUnifiedAddressing       DeviceAttribute = 41 // CU_DEVICE_ATTRIBUTE_UNIFIED_ADDRESSING
	AttrPCIDomainID             DeviceAttribute = 50 // CU_DEVICE_ATTRIBUTE_PCI_DOMAIN_ID
	AttrComputeCapabilityMajor  DeviceAttribute = 75 // CU_DEVICE_ATTRIBUTE_COMPUTE_CAPABILITY_MAJOR
	AttrComputeCapabilityMinor  DeviceAttribute = 76 // CU_DEVICE_ATTRIBUTE_COMPUTE_CAPABILITY_MINOR
	AttrHostNativeAtomicSupport DeviceAttribute = 86 // CU_DEVICE_ATTRIBUTE_HOST_NATIVE_ATOMIC_SUPPORTED
)

// IPCHandle is a CUipcMemHandle: 64 opaque bytes that another process of
// this host opens with Context.IPCOpen (cuda.h: CU_IPC_HANDLE_SIZE 64). It
// is passed to cuIpcOpenMemHandle_v2 by value, as a struct in memory.
type IPCHandle struct {
	Reserved [64]byte
}

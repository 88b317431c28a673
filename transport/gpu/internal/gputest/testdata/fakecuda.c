// fakecuda.c: a stand-in for libcuda.so.1 on hosts without a GPU, built by
// the tests into t.TempDir() (gcc -shared -fPIC). "Device" memory is host
// memory, so everything up to a kernel launch runs for real: allocation,
// copies, pinned and registered host memory, IPC handles within one
// process. Kernels do not run; cuLaunchKernel records its arguments for
// fake_last_launch, so the tests check the binding's ABI (11 arguments,
// five of them on the stack; a 64-byte struct passed by value to
// cuIpcOpenMemHandle_v2 followed by a register argument).
//
// Prototypes follow cuda.h (CUDA 13.0) with plain C types.
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <stdio.h>

typedef int CUresult;
typedef int CUdevice;
typedef uint64_t CUdeviceptr;
typedef void *handle;
typedef struct { char reserved[64]; } CUipcMemHandle;

static int ndev(void) {
  const char *s = getenv("FAKECUDA_DEVICES");
  return s ? atoi(s) : 2;
}

CUresult cuInit(unsigned int flags) {
  const char *s = getenv("FAKECUDA_INIT_RESULT");
  return flags != 0 ? 1 : (s ? atoi(s) : 0);
}
CUresult cuDriverGetVersion(int *v) { *v = 13000; return 0; }
CUresult cuGetErrorName(CUresult r, const char **name) {
  switch (r) {
  case 0: *name = "CUDA_SUCCESS"; return 0;
  case 1: *name = "CUDA_ERROR_INVALID_VALUE"; return 0;
  case 2: *name = "CUDA_ERROR_OUT_OF_MEMORY"; return 0;
  case 100: *name = "CUDA_ERROR_NO_DEVICE"; return 0;
  }
  *name = 0;
  return 1;
}
CUresult cuDeviceGetCount(int *n) { *n = ndev(); return 0; }
CUresult cuDeviceGet(CUdevice *d, int i) {
  if (i < 0 || i >= ndev()) return 101;
  *d = 100 + i;
  return 0;
}
CUresult cuDeviceGetName(char *name, int n, CUdevice d) { snprintf(name, n, "Fake GPU %d", d - 100); return 0; }
CUresult cuDeviceGetAttribute(int *v, int attr, CUdevice d) {
  switch (attr) {
  case 75: *v = 9; break;   // compute capability major
  case 76: *v = 0; break;   // minor
  case 16: *v = 132; break; // multiprocessors
  default: *v = 1;
  }
  return 0;
}
CUresult cuDeviceGetPCIBusId(char *id, int n, CUdevice d) { snprintf(id, n, "0000:%02X:00.0", d - 100 + 0x18); return 0; }
CUresult cuDeviceCanAccessPeer(int *can, CUdevice a, CUdevice b) { *can = 1; return 0; }
CUresult cuDevicePrimaryCtxRetain(handle *c, CUdevice d) { *c = (handle)(uintptr_t)(0x1000 + d); return 0; }
CUresult cuDevicePrimaryCtxRelease_v2(CUdevice d) { return 0; }
CUresult cuCtxSetCurrent(handle c) { return c ? 0 : 201; }
CUresult cuCtxSynchronize(void) { return 0; }
CUresult cuCtxEnablePeerAccess(handle peer, unsigned int flags) { return flags ? 1 : 0; }
CUresult cuMemAlloc_v2(CUdeviceptr *p, size_t n) {
  void *m = aligned_alloc(256, (n + 255) / 256 * 256);
  if (!m) return 2;
  *p = (CUdeviceptr)(uintptr_t)m;
  return 0;
}
CUresult cuMemFree_v2(CUdeviceptr p) { free((void *)(uintptr_t)p); return 0; }
CUresult cuMemsetD8_v2(CUdeviceptr p, unsigned char v, size_t n) { memset((void *)(uintptr_t)p, v, n); return 0; }
CUresult cuMemcpyHtoD_v2(CUdeviceptr dst, const void *src, size_t n) { memcpy((void *)(uintptr_t)dst, src, n); return 0; }
CUresult cuMemcpyDtoH_v2(void *dst, CUdeviceptr src, size_t n) { memcpy(dst, (void *)(uintptr_t)src, n); return 0; }
CUresult cuMemcpyPeerAsync(CUdeviceptr dst, handle dc, CUdeviceptr src, handle sc, size_t n, handle s) {
  memcpy((void *)(uintptr_t)dst, (void *)(uintptr_t)src, n);
  return 0;
}
CUresult cuMemHostAlloc(void **p, size_t n, unsigned int flags) {
  *p = aligned_alloc(4096, (n + 4095) / 4096 * 4096);
  return *p ? 0 : 2;
}
CUresult cuMemFreeHost(void *p) { free(p); return 0; }
CUresult cuMemHostGetDevicePointer_v2(CUdeviceptr *d, void *p, unsigned int flags) {
  *d = (CUdeviceptr)(uintptr_t)p;
  return flags ? 1 : 0;
}
CUresult cuMemHostRegister_v2(void *p, size_t n, unsigned int flags) { return ((uintptr_t)p % 4096 || n % 4096) ? 1 : 0; }
CUresult cuMemHostUnregister(void *p) { return 0; }
CUresult cuStreamCreate(handle *s, unsigned int flags) { *s = malloc(8); return 0; }
CUresult cuStreamDestroy_v2(handle s) { free(s); return 0; }
CUresult cuStreamQuery(handle s) { return 0; }
CUresult cuStreamSynchronize(handle s) { return 0; }
CUresult cuEventCreate(handle *e, unsigned int flags) { *e = malloc(8); return 0; }
CUresult cuEventDestroy_v2(handle e) { free(e); return 0; }
CUresult cuEventRecord(handle e, handle s) { return 0; }
CUresult cuEventSynchronize(handle e) { return 0; }
CUresult cuEventElapsedTime(float *ms, handle a, handle b) { *ms = 1.5f; return 0; }
CUresult cuModuleLoadData(handle *m, const void *image) { *m = (handle)0x4000; return 0; }
CUresult cuModuleUnload(handle m) { return 0; }
CUresult cuModuleGetFunction(handle *f, handle m, const char *name) {
  if (strcmp(name, "missing") == 0) return 500;
  *f = (handle)0x5000;
  return 0;
}

static uint64_t last[16];
CUresult cuLaunchKernel(handle f, unsigned gx, unsigned gy, unsigned gz, unsigned bx, unsigned by, unsigned bz,
                        unsigned shared, handle s, void **params, void **extra) {
  last[0] = gx; last[1] = gy; last[2] = gz; last[3] = bx; last[4] = by; last[5] = bz;
  last[6] = shared; last[7] = (uint64_t)(uintptr_t)extra;
  // The test kernel's parameters: (uint64_t, uint32_t, struct of 16 bytes).
  last[8] = *(uint64_t *)params[0];
  last[9] = *(uint32_t *)params[1];
  last[10] = ((uint64_t *)params[2])[0];
  last[11] = ((uint64_t *)params[2])[1];
  return 0;
}
void fake_last_launch(uint64_t *out) { memcpy(out, last, sizeof last); }
// CUlaunchConfig and CUlaunchAttribute as cuda.h lays them out; the fake
// records the shape and, in last[7], 1000 + the value of a
// PROGRAMMATIC_STREAM_SERIALIZATION attribute (id 6), so the test sees the
// struct offsets the binding wrote.
typedef struct { unsigned id, pad; unsigned char val[64]; } CUlaunchAttribute;
typedef struct {
  unsigned gx, gy, gz, bx, by, bz, shared;
  handle s;
  CUlaunchAttribute *attrs;
  unsigned n;
} CUlaunchConfig;
CUresult cuLaunchKernelEx(const CUlaunchConfig *c, handle f, void **params, void **extra) {
  if (sizeof(CUlaunchConfig) != 56 || sizeof(CUlaunchAttribute) != 72) return 1;
  CUresult r = cuLaunchKernel(f, c->gx, c->gy, c->gz, c->bx, c->by, c->bz, c->shared, c->s, params, extra);
  for (unsigned i = 0; i < c->n; i++)
    if (c->attrs[i].id == 6) last[7] = 1000 + *(int *)c->attrs[i].val;
  return r;
}

CUresult cuIpcGetMemHandle(CUipcMemHandle *h, CUdeviceptr p) {
  memset(h, 0, sizeof *h);
  memcpy(h->reserved, &p, 8);
  memcpy(h->reserved + 56, "fakeipc", 8);
  return 0;
}
CUresult cuIpcOpenMemHandle_v2(CUdeviceptr *p, CUipcMemHandle h, unsigned int flags) {
  if (memcmp(h.reserved + 56, "fakeipc", 8) != 0 || flags != 1) return 1;
  memcpy(p, h.reserved, 8);
  return 0;
}
CUresult cuIpcCloseMemHandle(CUdeviceptr p) { return 0; }

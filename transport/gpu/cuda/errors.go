package cuda

import (
	"fmt"
	"strings"

	"github.com/rdmactor/rdmactor/transport/rdma"
)

// Result is a CUresult (cuda.h). Zero is CUDA_SUCCESS.
type Result int32

// Codes this package tests for by value.
const (
	success                 Result = 0
	errInvalidValue         Result = 1
	errNotReady             Result = 600
	errPeerAlreadyEnabled   Result = 704
	errHostAlreadyMapped    Result = 712
	errNoDevice             Result = 100
	errStubLibrary          Result = 34
	errInsufficientDriver   Result = 35
	errNotSupported         Result = 801
	errPeerUnsupported      Result = 217
	errNoBinaryForGPU       Result = 209
	errSystemDriverMismatch Result = 803
	errCompatNotSupported   Result = 804
)

// Name is the code's cuda.h name, e.g. "CUDA_ERROR_OUT_OF_MEMORY": the
// driver's cuGetErrorName when loaded, else the table of zresult.go.
func (r Result) Name() string {
	if fnGetErrorName != nil {
		if s := cString(fnGetErrorName, r); s != "" {
			return s
		}
	}
	if s, ok := resultNames[r]; ok {
		return s
	}
	return fmt.Sprintf("CUresult(%d)", int32(r))
}

// unsupported reports codes that mean "this host cannot do it" rather than
// a bug: no device, a stub or too old driver, an unsupported feature.
func (r Result) unsupported() bool {
	switch r {
	case errNoDevice, errStubLibrary, errInsufficientDriver, errNotSupported, errPeerUnsupported,
		errNoBinaryForGPU, errSystemDriverMismatch, errCompatNotSupported:
		return true
	}
	return false
}

// Error is a CUDA driver call that returned a code other than
// CUDA_SUCCESS. Codes meaning the host lacks a capability (no device, stub
// or old driver, CUDA_ERROR_NOT_SUPPORTED, peer access unsupported, no
// binary for this GPU) match rdma.ErrNotSupported.
type Error struct {
	Func string // the C symbol called, e.g. "cuMemAlloc_v2"
	Code Result // the CUresult
	Name string // the code's name, e.g. "CUDA_ERROR_OUT_OF_MEMORY"
}

func (e *Error) Error() string {
	return fmt.Sprintf("cuda: %s: %s (%d)", e.Func, e.Name, int32(e.Code))
}

// Is reports whether target is rdma.ErrNotSupported and the code means the
// host cannot do what was asked.
func (e *Error) Is(target error) bool { return target == rdma.ErrNotSupported && e.Code.unsupported() }

// check turns a CUresult into nil or an *Error naming fn.
func check(fn string, r Result) error {
	if r == success {
		return nil
	}
	return &Error{Func: fn, Code: r, Name: r.Name()}
}

// NVRTCResult is an nvrtcResult (nvrtc.h). Zero is NVRTC_SUCCESS.
type NVRTCResult int32

// Name is the code's nvrtc.h name, e.g. "NVRTC_ERROR_COMPILATION".
func (r NVRTCResult) Name() string {
	if s, ok := nvrtcNames[r]; ok {
		return s
	}
	return fmt.Sprintf("nvrtcResult(%d)", int32(r))
}

// NVRTCError is an NVRTC call that failed. For nvrtcCompileProgram, Log is
// the compiler's log (errors with file and line).
type NVRTCError struct {
	Func    string      // e.g. "nvrtcCompileProgram"
	Code    NVRTCResult // the nvrtcResult
	Name    string      // e.g. "NVRTC_ERROR_COMPILATION"
	Program string      // the program's name, e.g. "semantics.cu"
	Log     string      // NVRTC's program log, if any
}

func (e *NVRTCError) Error() string {
	s := fmt.Sprintf("nvrtc: %s", e.Func)
	if e.Program != "" {
		s += " " + e.Program
	}
	s += fmt.Sprintf(": %s (%d)", e.Name, int32(e.Code))
	if log := strings.TrimSpace(e.Log); log != "" {
		s += ":\n" + log
	}
	return s
}

func nvrtcCheck(fn, program string, r NVRTCResult) error {
	if r == 0 {
		return nil
	}
	return &NVRTCError{Func: fn, Code: r, Name: r.Name(), Program: program}
}

// LoadError is returned by Load and LoadNVRTC when a library cannot be
// opened or lacks a symbol this package binds. It matches
// rdma.ErrNotSupported: a host without a driver is a host without the GPU
// transport, and tests skip with this error's text.
type LoadError struct {
	Lib    string   // the library wanted, e.g. "libcuda.so.1"
	Tried  []string // paths tried, in order, each with dlerror's text
	Symbol string   // a missing symbol, when the library opened
}

func (e *LoadError) Error() string {
	if e.Symbol != "" {
		return fmt.Sprintf("cuda: %s has no symbol %s (driver or toolkit too old?): %v", e.Lib, e.Symbol, rdma.ErrNotSupported)
	}
	return fmt.Sprintf("cuda: cannot load %s (no NVIDIA driver or CUDA toolkit here?): %v; tried: %s",
		e.Lib, rdma.ErrNotSupported, strings.Join(e.Tried, "; "))
}

// Is reports whether target is rdma.ErrNotSupported.
func (e *LoadError) Is(target error) bool { return target == rdma.ErrNotSupported }

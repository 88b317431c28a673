package cuda

import "unsafe"

// The NVRTC functions this package calls, as typed func variables bound by
// LoadNVRTC from libnvrtc.so. Signatures from nvrtc.h (CUDA 13.0); a
// nvrtcProgram is a uintptr, char** tables are unsafe.Pointer (built by
// cStrings in unsafe.go).
var (
	fnNvrtcVersion        func(major, minor *int32) NVRTCResult                                                         // nvrtcVersion
	fnNvrtcGetErrorString func(r NVRTCResult) string                                                                    // nvrtcGetErrorString
	fnNvrtcCreateProgram  func(p *uintptr, src, name string, n int32, headers, includeNames unsafe.Pointer) NVRTCResult // nvrtcCreateProgram
	fnNvrtcCompile        func(p uintptr, n int32, options unsafe.Pointer) NVRTCResult                                  // nvrtcCompileProgram
	fnNvrtcLogSize        func(p uintptr, n *uint64) NVRTCResult                                                        // nvrtcGetProgramLogSize
	fnNvrtcLog            func(p uintptr, log *byte) NVRTCResult                                                        // nvrtcGetProgramLog
	fnNvrtcCUBINSize      func(p uintptr, n *uint64) NVRTCResult                                                        // nvrtcGetCUBINSize
	fnNvrtcCUBIN          func(p uintptr, cubin *byte) NVRTCResult                                                      // nvrtcGetCUBIN
	fnNvrtcDestroy        func(p *uintptr) NVRTCResult                                                                  // nvrtcDestroyProgram
)

var nvrtcSymbols = []symbol{
	{&fnNvrtcVersion, "nvrtcVersion"},
	{&fnNvrtcGetErrorString, "nvrtcGetErrorString"},
	{&fnNvrtcCreateProgram, "nvrtcCreateProgram"},
	{&fnNvrtcCompile, "nvrtcCompileProgram"},
	{&fnNvrtcLogSize, "nvrtcGetProgramLogSize"},
	{&fnNvrtcLog, "nvrtcGetProgramLog"},
	{&fnNvrtcCUBINSize, "nvrtcGetCUBINSize"},
	{&fnNvrtcCUBIN, "nvrtcGetCUBIN"},
	{&fnNvrtcDestroy, "nvrtcDestroyProgram"},
}

// NVRTCVersion returns NVRTC's major and minor version (LoadNVRTC first).
func NVRTCVersion() (major, minor int, err error) {
	if err := LoadNVRTC(); err != nil {
		return 0, 0, err
	}
	var ma, mi int32
	if err := nvrtcCheck("nvrtcVersion", "", fnNvrtcVersion(&ma, &mi)); err != nil {
		return 0, 0, err
	}
	return int(ma), int(mi), nil
}

// Source is one CUDA C++ translation unit for Compile.
type Source struct {
	Name string // file name shown in NVRTC's log, e.g. "pingpong.cu"
	Code string // the source text
	// Headers maps include names (as written in #include "...") to their
	// text; NVRTC resolves those includes from here, without files.
	Headers map[string]string
}

// Compile compiles src with NVRTC and returns the cubin. options are
// NVRTC options, e.g. "--gpu-architecture=sm_90", "--std=c++17". A
// failed compilation returns an *NVRTCError whose Log holds NVRTC's
// messages. Compile does no caching: package jit does.
func Compile(src Source, options []string) ([]byte, error) {
	if err := LoadNVRTC(); err != nil {
		return nil, err
	}
	names, texts := sortedHeaders(src.Headers)
	hdrs, keepH := cStrings(texts)
	incs, keepI := cStrings(names)
	var prog uintptr
	r := fnNvrtcCreateProgram(&prog, src.Code, src.Name, int32(len(names)), hdrs, incs)
	keepAlive(keepH, keepI)
	if err := nvrtcCheck("nvrtcCreateProgram", src.Name, r); err != nil {
		return nil, err
	}
	defer fnNvrtcDestroy(&prog)
	opts, keepO := cStrings(options)
	r = fnNvrtcCompile(prog, int32(len(options)), opts)
	keepAlive(keepO)
	if r != 0 {
		err := nvrtcCheck("nvrtcCompileProgram", src.Name, r).(*NVRTCError)
		err.Log = programLog(prog)
		return nil, err
	}
	var n uint64
	if err := nvrtcCheck("nvrtcGetCUBINSize", src.Name, fnNvrtcCUBINSize(prog, &n)); err != nil {
		return nil, err
	}
	if n == 0 {
		return nil, &NVRTCError{Func: "nvrtcGetCUBINSize", Name: "no cubin (was a virtual architecture compute_XY asked for?)", Program: src.Name}
	}
	cubin := make([]byte, n)
	if err := nvrtcCheck("nvrtcGetCUBIN", src.Name, fnNvrtcCUBIN(prog, &cubin[0])); err != nil {
		return nil, err
	}
	return cubin, nil
}

func programLog(prog uintptr) string {
	var n uint64
	if fnNvrtcLogSize(prog, &n) != 0 || n <= 1 {
		return ""
	}
	b := make([]byte, n)
	if fnNvrtcLog(prog, &b[0]) != 0 {
		return ""
	}
	return string(b[:n-1]) // drop the NUL
}

// sortedHeaders returns the include names and texts in name order, so a
// compilation does not depend on map order.
func sortedHeaders(h map[string]string) (names, texts []string) {
	for n := range h {
		names = append(names, n)
	}
	sortStrings(names)
	for _, n := range names {
		texts = append(texts, h[n])
	}
	return names, texts
}

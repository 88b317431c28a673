package cuda

import (
	"fmt"
	"os"
	"path/filepath"
	"sort"
	"sync"
)

// Environment variables that name the libraries explicitly (a full path);
// when unset, the dynamic loader's search and the usual install paths are
// tried.
const (
	EnvLibCUDA  = "RDMACTOR_LIBCUDA"  // path of libcuda.so.1
	EnvLibNVRTC = "RDMACTOR_LIBNVRTC" // path of libnvrtc.so.*
)

// symbol is one func variable and the C symbol bound to it.
type symbol struct {
	fptr any
	name string
}

var (
	driverOnce sync.Once
	driverErr  error
	nvrtcOnce  sync.Once
	nvrtcErr   error
)

// Load opens the CUDA driver (libcuda.so.1), binds every function of
// driver.go and calls cuInit(0). It runs once; later calls return the
// first result. Without a driver it returns a *LoadError (matching
// rdma.ErrNotSupported) naming what was tried; a driver with no usable
// device returns an *Error such as CUDA_ERROR_NO_DEVICE, which matches too.
func Load() error {
	driverOnce.Do(func() {
		driverErr = loadDriver(driverCandidates())
	})
	return driverErr
}

// LoadNVRTC opens NVRTC and binds every function of nvrtc.go. It runs once.
// Without NVRTC it returns a *LoadError.
func LoadNVRTC() error {
	nvrtcOnce.Do(func() {
		_, err := open("libnvrtc.so", nvrtcCandidates(), nvrtcSymbols)
		nvrtcErr = err
	})
	return nvrtcErr
}

// loadDriver opens the first of paths that loads, binds the driver's
// symbols and initializes it.
func loadDriver(paths []string) error {
	if _, err := open("libcuda.so.1", paths, driverSymbols); err != nil {
		return err
	}
	if err := check("cuInit", fnInit(0)); err != nil {
		return err
	}
	return nil
}

// open dlopens the first loadable path and binds syms from it. A missing
// symbol fails the whole load (the func variables stay unusable).
func open(lib string, paths []string, syms []symbol) (uintptr, error) {
	le := &LoadError{Lib: lib}
	for _, p := range paths {
		h, err := dlopen(p)
		if err != nil {
			le.Tried = append(le.Tried, err.Error())
			continue
		}
		for _, s := range syms {
			if err := bind(h, s); err != nil {
				return 0, &LoadError{Lib: p, Symbol: s.name}
			}
		}
		return h, nil
	}
	return 0, le
}

// driverCandidates lists where libcuda.so.1 may be: EnvLibCUDA alone if
// set; else the loader's search, then the container-toolkit and distro
// paths.
func driverCandidates() []string {
	if p := os.Getenv(EnvLibCUDA); p != "" {
		return []string{p}
	}
	return []string{
		"libcuda.so.1",
		"/usr/local/nvidia/lib64/libcuda.so.1",
		"/usr/lib/x86_64-linux-gnu/libcuda.so.1",
		"/usr/lib/aarch64-linux-gnu/libcuda.so.1",
		"/usr/lib64/libcuda.so.1",
		"/usr/local/cuda/compat/libcuda.so.1",
	}
}

// nvrtcCandidates lists where NVRTC may be: EnvLibNVRTC alone if set; else
// the loader's search by soname (newest first), then the toolkit under
// CUDA_HOME, /usr/local/cuda and the pip wheels' folders.
func nvrtcCandidates() []string {
	if p := os.Getenv(EnvLibNVRTC); p != "" {
		return []string{p}
	}
	names := []string{"libnvrtc.so.13", "libnvrtc.so.12", "libnvrtc.so.11.2", "libnvrtc.so"}
	out := append([]string(nil), names...)
	var dirs []string
	if h := os.Getenv("CUDA_HOME"); h != "" {
		dirs = append(dirs, filepath.Join(h, "lib64"), filepath.Join(h, "lib"))
	}
	dirs = append(dirs, "/usr/local/cuda/lib64", "/usr/local/cuda/targets/x86_64-linux/lib",
		"/usr/local/cuda/targets/sbsa-linux/lib")
	// pip's nvidia-cuda-nvrtc wheels (PyTorch images).
	for _, pat := range []string{"/usr/local/lib/python3*/dist-packages/nvidia/cu13/lib",
		"/usr/local/lib/python3*/dist-packages/nvidia/cuda_nvrtc/lib",
		"/opt/*/.venv/lib/python3*/site-packages/nvidia/cu13/lib",
		"/opt/*/.venv/lib/python3*/site-packages/nvidia/cuda_nvrtc/lib"} {
		m, _ := filepath.Glob(pat)
		dirs = append(dirs, m...)
	}
	for _, d := range dirs {
		for _, n := range names {
			out = append(out, filepath.Join(d, n))
		}
	}
	return out
}

// DriverVersion returns the driver's CUDA version as major, minor (e.g.
// 13, 0 for a driver of CUDA 13.0).
func DriverVersion() (major, minor int, err error) {
	if err := Load(); err != nil {
		return 0, 0, err
	}
	var v int32
	if err := check("cuDriverGetVersion", fnDriverGetVersion(&v)); err != nil {
		return 0, 0, err
	}
	return int(v / 1000), int(v%1000) / 10, nil
}

func sortStrings(s []string) { sort.Strings(s) }

// errNotLoaded is what calls return when Load has not succeeded.
func loaded() error {
	if err := Load(); err != nil {
		return fmt.Errorf("cuda not loaded: %w", err)
	}
	return nil
}

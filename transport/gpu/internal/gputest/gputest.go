// Package gputest holds the helpers the GPU transport's tests share:
// skipping with the reason where there is no driver, GPU or NVRTC (so CI
// prints why a GPU test did not run), and failing instead when
// RDMACTOR_REQUIRE_GPU is set (scripts/gpu_device.sh sets it: on a GPU
// machine a skip is a failure). Tests that need two GPUs still skip on a
// one-GPU machine unless RDMACTOR_REQUIRE_GPUS is set too (the script sets
// it where it sees two). It also builds the fake driver (FakeDriver,
// InFakeDriver) that host tests run the Go side against.
//
// It may import testing and transport/gpu/cuda only.
package gputest

import (
	"os"
	"testing"

	"github.com/rdmactor/rdmactor/transport/gpu/cuda"
)

// EnvRequire makes the Skip helpers fail the test instead of skipping.
const EnvRequire = "RDMACTOR_REQUIRE_GPU"

// EnvRequireMulti makes multi-GPU tests fail instead of skipping on a host
// with fewer GPUs than they need (with EnvRequire).
const EnvRequireMulti = "RDMACTOR_REQUIRE_GPUS"

// EnvFake marks a process whose libcuda is the test fake (testdata of
// package cuda): kernels do not run there, so GPU tests skip.
const EnvFake = "RDMACTOR_FAKECUDA"

func skip(t testing.TB, format string, args ...any) {
	t.Helper()
	if os.Getenv(EnvRequire) != "" {
		t.Fatalf("GPU required ("+EnvRequire+" is set), but: "+format, args...)
	}
	t.Skipf(format, args...)
}

// SkipIfNoGPU skips t, with the loader's or driver's error as the reason,
// unless the CUDA driver loads and shows at least one GPU and NVRTC loads.
func SkipIfNoGPU(t testing.TB) {
	t.Helper()
	SkipIfFewerGPUs(t, 1)
}

// SkipIfFewerGPUs is SkipIfNoGPU for tests that need n GPUs.
func SkipIfFewerGPUs(t testing.TB, n int) {
	t.Helper()
	if os.Getenv(EnvFake) != "" {
		t.Skip("the fake CUDA driver runs no kernels")
	}
	if err := cuda.Load(); err != nil {
		skip(t, "no CUDA driver: %v", err)
	}
	got, err := cuda.DeviceCount()
	if err != nil {
		skip(t, "CUDA driver: %v", err)
	}
	if got < n {
		if n > 1 && got >= 1 && os.Getenv(EnvRequireMulti) == "" {
			t.Skipf("needs %d GPUs, this host has %d", n, got) // a 1-GPU machine passes without them
		}
		skip(t, "needs %d GPUs, this host has %d", n, got)
	}
	SkipIfNoNVRTC(t)
}

// SkipIfNoNVRTC skips t unless NVRTC loads.
func SkipIfNoNVRTC(t testing.TB) {
	t.Helper()
	if err := cuda.LoadNVRTC(); err != nil {
		skip(t, "no NVRTC: %v", err)
	}
}

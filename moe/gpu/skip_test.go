package gpumoe

import (
	"os"
	"testing"

	"github.com/rdmactor/rdmactor/transport/gpu/cuda"
)

// The GPU transport's skip rules (transport/gpu/internal/gputest, which
// this package may not import): skip with the reason, or fail where
// RDMACTOR_REQUIRE_GPU says a GPU must be there (scripts/moe_gpu_device.sh).

const (
	envRequire      = "RDMACTOR_REQUIRE_GPU"
	envRequireMulti = "RDMACTOR_REQUIRE_GPUS"
	envFake         = "RDMACTOR_FAKECUDA"
)

func skipf(t testing.TB, format string, args ...any) {
	t.Helper()
	if os.Getenv(envRequire) != "" {
		t.Fatalf("GPU required ("+envRequire+" is set), but: "+format, args...)
	}
	t.Skipf(format, args...)
}

func skipIfNoNVRTC(t testing.TB) {
	t.Helper()
	if err := cuda.LoadNVRTC(); err != nil {
		skipf(t, "no NVRTC: %v", err)
	}
}

// skipIfFewerGPUs skips unless the driver loads, shows n GPUs and NVRTC
// loads.
func skipIfFewerGPUs(t testing.TB, n int) {
	t.Helper()
	if os.Getenv(envFake) != "" {
		t.Skip("the fake CUDA driver runs no kernels")
	}
	if err := cuda.Load(); err != nil {
		skipf(t, "no CUDA driver: %v", err)
	}
	got, err := cuda.DeviceCount()
	if err != nil {
		skipf(t, "CUDA driver: %v", err)
	}
	if got < n {
		if n > 1 && got >= 1 && os.Getenv(envRequireMulti) == "" {
			t.Skipf("needs %d GPUs, this host has %d", n, got)
		}
		skipf(t, "needs %d GPUs, this host has %d", n, got)
	}
	skipIfNoNVRTC(t)
}

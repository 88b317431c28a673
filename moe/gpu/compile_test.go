package gpumoe

import (
	"testing"

	"github.com/rdmactor/rdmactor/transport/gpu/cuda"
	"github.com/rdmactor/rdmactor/transport/gpu/include"
	"github.com/rdmactor/rdmactor/transport/gpu/jit"
	"github.com/stretchr/testify/require"
)

// kernels.cu compiles with NVRTC for Hopper (hardware FP8 conversions) and
// Ampere (their software twins); NVRTC only, no GPU.
func TestKernelsCompile(t *testing.T) {
	skipIfNoNVRTC(t)
	t.Setenv(jit.EnvCache, t.TempDir())
	for _, arch := range []string{"sm_90", "sm_80"} {
		t.Run(arch, func(t *testing.T) {
			src := cuda.Source{Name: kernelName, Code: kernelSource, Headers: include.Headers()}
			cubin, err := jit.Compile(src, arch, compileOptions()...)
			require.NoError(t, err)
			require.NotEmpty(t, cubin)
		})
	}
}

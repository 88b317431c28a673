package gpuex

import (
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/rdmactor/rdmactor/transport/gpu/cuda"
	"github.com/rdmactor/rdmactor/transport/gpu/include"
	"github.com/rdmactor/rdmactor/transport/gpu/jit"
)

// RequireCompiles checks that an example's kernel src (named file)
// compiles with NVRTC for Hopper (sm_90); it needs NVRTC, not a GPU, and
// skips t where NVRTC cannot be loaded.
func RequireCompiles(t *testing.T, file, src string) {
	t.Helper()
	if err := cuda.LoadNVRTC(); err != nil {
		t.Skipf("no NVRTC: %v", err)
	}
	t.Setenv(jit.EnvCache, t.TempDir())
	_, err := jit.Compile(cuda.Source{Name: file, Code: src, Headers: include.Headers()}, "sm_90")
	require.NoError(t, err)
}

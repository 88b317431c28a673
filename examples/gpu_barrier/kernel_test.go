package main

import (
	"testing"

	"github.com/rdmactor/rdmactor/transport/gpu/cuda"
	"github.com/rdmactor/rdmactor/transport/gpu/include"
	"github.com/rdmactor/rdmactor/transport/gpu/jit"
	"github.com/stretchr/testify/require"
)

// The example's kernel compiles with NVRTC for Hopper (NVRTC only, no GPU).
func TestKernelCompiles(t *testing.T) {
	if err := cuda.LoadNVRTC(); err != nil {
		t.Skipf("no NVRTC: %v", err)
	}
	t.Setenv(jit.EnvCache, t.TempDir())
	_, err := jit.Compile(cuda.Source{Name: "barrier.cu", Code: kernel, Headers: include.Headers()}, "sm_90")
	require.NoError(t, err)
}

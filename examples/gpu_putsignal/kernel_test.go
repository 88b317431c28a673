package main

import (
	"testing"

	"github.com/rdmactor/rdmactor/examples/internal/gpuex"
)

// The example's kernel compiles with NVRTC for Hopper (NVRTC only, no GPU).
func TestKernelCompiles(t *testing.T) { gpuex.RequireCompiles(t, "pingpong.cu", kernel) }

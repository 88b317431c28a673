package cuda

import (
	"errors"
	"strings"
	"testing"

	"github.com/rdmactor/rdmactor/transport/rdma"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// Without a driver, loading fails with an error that says which library
// was missing, where it looked, and matches rdma.ErrNotSupported (so GPU
// tests skip with it, and callers can fall back).
func TestLoadWithoutDriver(t *testing.T) {
	err := loadDriver([]string{"/nonexistent/libcuda.so.1", "/also/not/here/libcuda.so.1"})
	require.Error(t, err)
	var le *LoadError
	require.True(t, errors.As(err, &le), "error is %T", err)
	assert.ErrorIs(t, err, rdma.ErrNotSupported)
	msg := err.Error()
	for _, want := range []string{"libcuda.so.1", "/nonexistent/libcuda.so.1", "/also/not/here/libcuda.so.1", "no NVIDIA driver"} {
		assert.Contains(t, msg, want)
	}
	t.Log(msg)
}

// Load on this host: either a working driver or the clear error above.
func TestLoad(t *testing.T) {
	err := Load()
	if err == nil {
		maj, min, err := DriverVersion()
		require.NoError(t, err)
		t.Logf("CUDA driver %d.%d", maj, min)
		return
	}
	assert.ErrorIs(t, err, rdma.ErrNotSupported, "a host without a usable driver must say not supported: %v", err)
	assert.True(t, strings.Contains(err.Error(), "libcuda") || strings.Contains(err.Error(), "CUDA_ERROR"), err.Error())
	t.Logf("no driver here, as expected on CI: %v", err)
}

func TestErrorNames(t *testing.T) {
	e := check("cuMemAlloc_v2", 2)
	var ce *Error
	require.True(t, errors.As(e, &ce))
	assert.Equal(t, &Error{Func: "cuMemAlloc_v2", Code: 2, Name: "CUDA_ERROR_OUT_OF_MEMORY"}, ce)
	assert.Equal(t, "cuda: cuMemAlloc_v2: CUDA_ERROR_OUT_OF_MEMORY (2)", e.Error())
	assert.NotErrorIs(t, e, rdma.ErrNotSupported, "out of memory is not 'not supported'")
	assert.ErrorIs(t, check("cuInit", 100), rdma.ErrNotSupported, "CUDA_ERROR_NO_DEVICE")
	assert.ErrorIs(t, check("cuCtxEnablePeerAccess", 217), rdma.ErrNotSupported, "peer access unsupported")
	assert.Equal(t, "CUresult(12345)", Result(12345).Name())
	assert.Equal(t, "NVRTC_ERROR_COMPILATION", NVRTCResult(6).Name())
}

func TestPackArgs(t *testing.T) {
	_, _, err := packArgs([]any{7})
	assert.ErrorContains(t, err, "C int is 32 bits")
	_, _, err = packArgs([]any{"s"})
	assert.ErrorContains(t, err, "not supported")
	params, keep, err := packArgs([]any{uint32(1), DevicePtr(0x1122334455667788), []byte{9, 8, 7}})
	require.NoError(t, err)
	require.NotNil(t, params)
	require.Len(t, keep, 2)
}

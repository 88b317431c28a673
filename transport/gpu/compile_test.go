package gpu_test

import (
	"embed"
	"errors"
	"io/fs"
	"path"
	"testing"

	"github.com/rdmactor/rdmactor/transport/gpu/cuda"
	"github.com/rdmactor/rdmactor/transport/gpu/include"
	"github.com/rdmactor/rdmactor/transport/gpu/internal/gputest"
	"github.com/rdmactor/rdmactor/transport/gpu/jit"
	"github.com/stretchr/testify/require"
)

//go:embed testdata/*.cu
var testKernels embed.FS

func kernelSource(t testing.TB, name string) string {
	t.Helper()
	b, err := testKernels.ReadFile("testdata/" + name)
	require.NoError(t, err)
	return string(b)
}

// TestKernelsCompile compiles every kernel of testdata with NVRTC for
// Hopper (sm_90) and Ampere (sm_80). It needs NVRTC only, no GPU: CI hosts
// with a CUDA toolkit (or Debian's libnvrtc) check gin.cuh here.
func TestKernelsCompile(t *testing.T) {
	gputest.SkipIfNoNVRTC(t)
	t.Setenv(jit.EnvCache, t.TempDir())
	entries, err := fs.Glob(testKernels, "testdata/*.cu")
	require.NoError(t, err)
	for _, e := range entries {
		for _, arch := range []string{"sm_90", "sm_80"} {
			name := path.Base(e)
			t.Run(name+"/"+arch, func(t *testing.T) {
				src := cuda.Source{Name: name, Code: kernelSource(t, name), Headers: include.Headers()}
				cubin, err := jit.Compile(src, arch)
				require.NoError(t, err)
				require.NotEmpty(t, cubin)
			})
		}
	}
}

// A compile error comes back as *cuda.NVRTCError with NVRTC's log, which
// names the file and line.
func TestCompileErrorLog(t *testing.T) {
	gputest.SkipIfNoNVRTC(t)
	t.Setenv(jit.EnvCache, "off")
	src := cuda.Source{Name: "broken.cu", Code: "#include \"rdmactor/gin.cuh\"\nextern \"C\" __global__ void k() { undefined_thing(); }\n",
		Headers: include.Headers()}
	_, err := jit.Compile(src, "sm_90")
	var ne *cuda.NVRTCError
	require.True(t, errors.As(err, &ne), "error %v", err)
	require.Equal(t, "NVRTC_ERROR_COMPILATION", ne.Name)
	require.Contains(t, ne.Log, "broken.cu(2)")
	require.Contains(t, ne.Log, "undefined_thing")
	require.Contains(t, err.Error(), "undefined_thing")
}

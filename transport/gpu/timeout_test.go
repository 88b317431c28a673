package gpu_test

import (
	"context"
	"fmt"
	"testing"
	"time"

	"github.com/rdmactor/rdmactor/gin"
	"github.com/rdmactor/rdmactor/transport/gpu"
	"github.com/rdmactor/rdmactor/transport/gpu/cuda"
	"github.com/rdmactor/rdmactor/transport/gpu/internal/gputest"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// Device waits with a timeout (gin.cuh's Timeout overloads; NCCL 2.31's
// timed device waits): they end by themselves with WaitTimeout within the
// bound, with WaitAborted when the host aborts first, with WaitOK when
// the value is there, and with WaitInvalid for an unknown signal.

// waitBound is the timeout of the tests' waits, and overrun what a wait
// may take beyond it (it looks at the timer every 8 polls).
const waitBound, overrun = 2 * time.Millisecond, time.Millisecond

// timedKernel loads kernel name of semantics.cu on g and a 64-byte result
// buffer, freed when t ends.
func timedKernel(t *testing.T, g *gpu.Comm, name string) (*cuda.Function, cuda.DevicePtr) {
	t.Helper()
	mod, err := g.Load("semantics.cu", semanticsSource())
	require.NoError(t, err)
	t.Cleanup(func() { mod.Close() })
	f, err := mod.Function(name)
	require.NoError(t, err)
	out, err := g.Context().MemAlloc(64)
	require.NoError(t, err)
	t.Cleanup(func() { g.Context().MemFree(out) })
	require.NoError(t, g.Context().Memset(out, 0, 64))
	return f, out
}

// words reads n words of out.
func words(t *testing.T, g *gpu.Comm, out cuda.DevicePtr, n int) []uint64 {
	t.Helper()
	b := make([]byte, 8*n)
	require.NoError(t, g.Context().CopyFromDevice(b, out))
	w := make([]uint64, n)
	for i := range w {
		w[i] = le(b, i)
	}
	return w
}

// checkTimedOut: result r of a wait that lasted ns (device timer) timed
// out within the bound.
func checkTimedOut(t *testing.T, what string, r, ns uint64) {
	t.Helper()
	assert.Equal(t, gpu.WaitTimeout, gpu.WaitResult(r), "%s", what)
	d := time.Duration(ns)
	assert.GreaterOrEqual(t, d, waitBound, "%s returned before its timeout", what)
	assert.Less(t, d, waitBound+overrun, "%s overran its timeout", what)
	t.Logf("%s: %v after %v (timeout %v)", what, gpu.WaitResult(r), d, waitBound)
}

func TestWaitTimeout(t *testing.T) {
	gputest.SkipIfNoGPU(t)
	for _, path := range []gpu.Path{gpu.PathLSA, gpu.PathProxy} {
		t.Run(path.String(), func(t *testing.T) {
			g := newLocal(t, 1, path, []int{0})[0]
			f, out := timedKernel(t, g, "wait_timeout")
			ctx, cancel := context.WithTimeout(context.Background(), caseTimout)
			defer cancel()
			require.NoError(t, g.Run(ctx, f, cuda.Dim3{X: 1}, cuda.Dim3{X: 128}, 0, g.DevComm(), uint64(waitBound), out))
			w := words(t, g, out, 6)
			checkTimedOut(t, "waitSignal", w[0], w[1])
			checkTimedOut(t, "waitCounter", w[2], w[3])
			assert.Equal(t, gpu.WaitOK, gpu.WaitResult(w[4]), "a wait whose value is there, Timeout{0}")
			assert.Equal(t, gpu.WaitInvalid, gpu.WaitResult(w[5]), "a wait on an unknown signal")
			assert.ErrorIs(t, g.DeviceError(), gin.ErrUnknownSignal)

			// The host's abort ends a long timed wait first, with its own code.
			require.NoError(t, g.Context().Memset(out, 0, 64))
			require.NoError(t, g.Launch(f, cuda.Dim3{X: 1}, cuda.Dim3{X: 128}, 0, g.DevComm(), uint64(time.Minute), out))
			time.Sleep(200 * time.Millisecond)
			done, err := g.Stream().Query()
			require.NoError(t, err)
			require.False(t, done, "the kernel returned before its timeout or an abort")
			g.Abort()
			require.NoError(t, g.Wait(ctx))
			g.ClearAbort()
			w = words(t, g, out, 6)
			assert.Equal(t, gpu.WaitAborted, gpu.WaitResult(w[0]), "waitSignal")
			assert.Less(t, time.Duration(w[1]), 10*time.Second, "waitSignal returned on the abort, not the timeout")
			assert.Equal(t, gpu.WaitAborted, gpu.WaitResult(w[2]), "waitCounter")
			assert.ErrorIs(t, g.DeviceError(), gin.ErrUnknownSignal)
		})
	}
}

// TestBarrierTimeout: a timed BarrierSession::sync whose peer never
// joins returns WaitTimeout within the bound; the peer runs no kernel.
func TestBarrierTimeout(t *testing.T) {
	for _, tc := range []struct {
		path    gpu.Path
		devices []int
	}{{gpu.PathLSA, []int{0, 1}}, {gpu.PathProxy, []int{0, 0}}} {
		t.Run(tc.path.String(), func(t *testing.T) {
			gputest.SkipIfFewerGPUs(t, max(tc.devices[0], tc.devices[1])+1)
			g := newLocal(t, 2, tc.path, tc.devices)[0]
			f, out := timedKernel(t, g, "barrier_timeout")
			ctx, cancel := context.WithTimeout(context.Background(), caseTimout)
			defer cancel()
			require.NoError(t, g.Run(ctx, f, cuda.Dim3{X: 1}, cuda.Dim3{X: 128}, 0, g.DevComm(), uint64(waitBound), out))
			w := words(t, g, out, 2)
			checkTimedOut(t, fmt.Sprintf("barrier sync on the %v path", tc.path), w[0], w[1])
			assert.NoError(t, g.DeviceError())
		})
	}
}

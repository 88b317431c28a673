package gpu_test

import (
	"context"
	"encoding/binary"
	"testing"
	"time"

	"github.com/rdmactor/rdmactor/transport/gpu"
	"github.com/rdmactor/rdmactor/transport/gpu/cuda"
	"github.com/rdmactor/rdmactor/transport/gpu/internal/gputest"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// TestOverlappedLaunch: a kernel launched with LaunchOverlapped behind one
// that writes a put's source late puts what that kernel wrote, not what
// was there before, on both paths: Gin's put waits for the work ahead
// (waitPrior) after reading the descriptors. On sm_90 and later the
// launch must really overlap (the put kernel starts before the writer
// writes), else the test would prove nothing.
func TestOverlappedLaunch(t *testing.T) {
	gputest.SkipIfNoGPU(t)
	const nWords, spin = 4096, 500 * time.Microsecond
	for _, path := range []gpu.Path{gpu.PathLSA, gpu.PathProxy} {
		t.Run(path.String(), func(t *testing.T) {
			g := newLocal(t, 1, path, []int{0})[0]
			ctx, cancel := context.WithTimeout(context.Background(), caseTimout)
			defer cancel()
			w, err := g.RegisterWindow(ctx, 16*nWords)
			require.NoError(t, err)
			fill, out := timedKernel(t, g, "slow_fill")
			put, _ := timedKernel(t, g, "overlapped_put")
			stale := make([]byte, 8*nWords)
			for i := range nWords {
				binary.LittleEndian.PutUint64(stale[8*i:], 0x5a5a5a5a)
			}
			require.NoError(t, w.Write(0, stale))
			const value = 0x0123456789abcdef
			require.NoError(t, g.Launch(fill, cuda.Dim3{X: 1}, cuda.Dim3{X: 256}, 0, w.Handle(), uint64(nWords),
				uint64(value), uint64(spin), out))
			require.NoError(t, g.LaunchOverlapped(put, cuda.Dim3{X: 1}, cuda.Dim3{X: 256}, 0, g.DevComm(), w.Handle(),
				uint64(nWords), out))
			require.NoError(t, g.Wait(ctx))
			res := words(t, g, out, 3)
			assert.Zero(t, res[2], "waitSignal aborted")
			got := make([]byte, 8*nWords)
			require.NoError(t, w.Read(8*nWords, got))
			bad := 0
			for i := range nWords {
				if binary.LittleEndian.Uint64(got[8*i:]) != value {
					bad++
				}
			}
			assert.Zero(t, bad, "words of the put that are not what slow_fill wrote")
			major, err := g.Device().Attribute(cuda.AttrComputeCapabilityMajor)
			require.NoError(t, err)
			t.Logf("put kernel started %v before slow_fill wrote", time.Duration(int64(res[0])-int64(res[1])))
			if major >= 9 {
				assert.Less(t, res[1], res[0], "the overlapped kernel did not start before slow_fill wrote")
			}
		})
	}
}

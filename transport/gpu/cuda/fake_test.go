package cuda_test

import (
	"encoding/binary"
	"testing"

	"github.com/ebitengine/purego"
	"github.com/rdmactor/rdmactor/transport/gpu/cuda"
	"github.com/rdmactor/rdmactor/transport/gpu/internal/gputest"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// TestFakeDriverABI binds the fake libcuda (a C library built from
// internal/gputest/testdata) and checks what crosses the purego boundary:
// every symbol of driver.go resolves, cuLaunchKernel gets its 11 arguments
// (five on the stack) and the packed kernel parameters, a 64-byte
// CUipcMemHandle passed by value arrives whole with the flags after it, and
// pinned memory, copies and errors behave.
func TestFakeDriverABI(t *testing.T) {
	gputest.InFakeDriver(t, func(t *testing.T) {
		require.NoError(t, cuda.Load())
		n, err := cuda.DeviceCount()
		require.NoError(t, err)
		require.Equal(t, 2, n)
		dev, err := cuda.GetDevice(1)
		require.NoError(t, err)
		arch, err := dev.Arch()
		require.NoError(t, err)
		assert.Equal(t, "sm_90", arch)
		bus, err := dev.PCIBusID()
		require.NoError(t, err)
		assert.Equal(t, "0000:19:00.0", bus)
		ctx, err := dev.PrimaryContext()
		require.NoError(t, err)
		defer ctx.Close()

		p, err := ctx.MemAlloc(64)
		require.NoError(t, err)
		require.NoError(t, ctx.CopyToDevice(p, []byte("hello, device")))
		got := make([]byte, 13)
		require.NoError(t, ctx.CopyFromDevice(got, p))
		assert.Equal(t, "hello, device", string(got))

		h, err := ctx.IPCGetHandle(p)
		require.NoError(t, err)
		q, err := ctx.IPCOpen(h)
		require.NoError(t, err, "the fake checks the whole 64-byte handle and the flags after it")
		assert.Equal(t, p, q)

		hm, err := ctx.HostAlloc(100)
		require.NoError(t, err)
		assert.Len(t, hm.Bytes(), 100)
		assert.Equal(t, cuda.DevicePtr(0), cuda.DevicePtr(0)) // keep imports honest
		require.NoError(t, hm.Close())

		_, err = ctx.HostRegister(make([]byte, 10))
		assert.Error(t, err, "unaligned memory is refused before the driver sees it")

		mod, err := ctx.LoadModule([]byte{1})
		require.NoError(t, err)
		_, err = mod.Function("missing")
		var ce *cuda.Error
		require.ErrorAs(t, err, &ce)
		assert.Equal(t, "cuModuleGetFunction", ce.Func)
		assert.Equal(t, cuda.Result(500), ce.Code)
		f, err := mod.Function("k")
		require.NoError(t, err)
		st, err := ctx.NewStream()
		require.NoError(t, err)
		blob := make([]byte, 16)
		binary.LittleEndian.PutUint64(blob, 0xaaaa)
		binary.LittleEndian.PutUint64(blob[8:], 0xbbbb)
		require.NoError(t, f.Launch(cuda.Dim3{X: 3, Y: 4, Z: 5}, cuda.Dim3{X: 6, Y: 7, Z: 8}, 9, st,
			cuda.DevicePtr(0x1234567890), uint32(0xdeadbeef), blob))
		last := fakeLastLaunch(t, gputest.FakeDriver(t))
		assert.Equal(t, []uint64{3, 4, 5, 6, 7, 8, 9, 0, 0x1234567890, 0xdeadbeef, 0xaaaa, 0xbbbb}, last[:12])
		require.NoError(t, f.LaunchOverlapped(cuda.Dim3{X: 2}, cuda.Dim3{X: 32}, 0, st,
			cuda.DevicePtr(0x42), uint32(7), blob))
		last = fakeLastLaunch(t, gputest.FakeDriver(t))
		assert.Equal(t, []uint64{2, 1, 1, 32, 1, 1, 0, 1001, 0x42, 7, 0xaaaa, 0xbbbb}, last[:12],
			"cuLaunchKernelEx gets the shape, the stream and one overlap attribute set to 1")
		done, err := st.Query()
		require.NoError(t, err)
		assert.True(t, done)
		require.NoError(t, st.Close())
		require.NoError(t, ctx.MemFree(p))
	})
}

func fakeLastLaunch(t *testing.T, lib string) []uint64 {
	h, err := purego.Dlopen(lib, purego.RTLD_NOW|purego.RTLD_GLOBAL)
	require.NoError(t, err)
	var fn func(out *uint64)
	purego.RegisterLibFunc(&fn, h, "fake_last_launch")
	out := make([]uint64, 16)
	fn(&out[0])
	return out
}
